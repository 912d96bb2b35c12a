#include "memserver/heap_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace fampool {
namespace {

// A client that connects and then says nothing must not hold the server's thread.
constexpr int kRequestTimeoutMs = 1000;
// How long a client waits for the server's answer.
constexpr int kAnswerTimeoutMs = 5000;

sockaddr_un AddressOf(const std::string &path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "socket path {} is {} characters long, more than a Unix socket takes ({})", path,
             path.size(), sizeof address.sun_path - 1);
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return address;
}

void SetTimeout(int fd, int option, int milliseconds) {
    timeval limit{milliseconds / 1000, (milliseconds % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, option, &limit, sizeof limit);
}

void CopyMessage(HeapReply *reply, const std::string &text) {
    std::snprintf(reply->message, sizeof reply->message, "%s", text.c_str());
}

}  // namespace

HeapSocketServer::HeapSocketServer(LocalMemoryServer *server, std::string path)
    : server_(server), path_(std::move(path)) {
    sockaddr_un address = AddressOf(path_);
    listener_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (listener_ < 0 || pipe2(wake_, O_CLOEXEC) != 0) {
        int err = errno;
        if (listener_ >= 0) close(listener_);
        Fail(openfam::FAM_ERR_RESOURCE, "same-node socket {}: {}", path_, std::strerror(err));
    }
    unlink(path_.c_str());  // a socket an earlier run of this server left
    bool listening = bind(listener_, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0 &&
                     chmod(path_.c_str(), 0666) == 0 && listen(listener_, 64) == 0;
    if (!listening) {
        int err = errno;
        close(listener_);
        close(wake_[0]);
        close(wake_[1]);
        Fail(openfam::FAM_ERR_RESOURCE, "cannot listen on same-node socket {}: {}", path_,
             std::strerror(err));
    }
    thread_ = std::thread([this] { Serve(); });
}

HeapSocketServer::~HeapSocketServer() {
    char stop = 1;
    (void)!write(wake_[1], &stop, 1);
    if (thread_.joinable()) thread_.join();
    {
        // Connections still being answered end within their 1 s limits.
        std::unique_lock<std::mutex> lock(answering_mutex_);
        answered_.wait(lock, [this] { return answering_total_ == 0; });
    }
    close(listener_);
    close(wake_[0]);
    close(wake_[1]);
    unlink(path_.c_str());
}

void HeapSocketServer::Serve() {
    for (;;) {
        pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (fds[1].revents) return;
        int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (connection < 0) {
            // Out of descriptors (EMFILE): let the connections being answered end first.
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            continue;
        }
        ucred peer{};
        socklen_t length = sizeof peer;
        bool known = getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0;
        {
            std::lock_guard<std::mutex> lock(answering_mutex_);
            if (!known || answering_total_ >= kMostAnswering ||
                answering_[peer.uid] >= kMostPerUser) {
                close(connection);  // too many at once: that client stays on the fabric
                refused_.fetch_add(1);
                continue;
            }
            ++answering_[peer.uid];
            ++answering_total_;
        }
        std::thread([this, connection, peer] {
            Answer(connection, peer);
            std::lock_guard<std::mutex> lock(answering_mutex_);
            if (--answering_[peer.uid] == 0) answering_.erase(peer.uid);
            --answering_total_;
            answered_.notify_all();
        }).detach();
    }
}

void HeapSocketServer::Answer(int connection, const ucred &peer) {
    SetTimeout(connection, SO_RCVTIMEO, kRequestTimeoutMs);
    SetTimeout(connection, SO_SNDTIMEO, kRequestTimeoutMs);
    HeapReply reply;
    int fd = -1;
    HeapRequest request;
    ssize_t got = recv(connection, &request, sizeof request, 0);
    if (got == 0) {  // the client hung up unasked (it would not send its key there)
        close(connection);
        return;
    }
    if (got != static_cast<ssize_t>(sizeof request) || request.magic != HeapRequest::kMagic) {
        reply.code = openfam::FAM_ERR_INVALID;
        CopyMessage(&reply, "malformed heap request");
    } else {
        try {
            fd = server_->OpenHeapFor(Caller{peer.uid, peer.gid}, request.region_id, request.key,
                                      request.writable != 0);
        } catch (const Failure &failure) {
            reply.code = failure.fam_error();
            CopyMessage(&reply, failure.fam_error_msg());
        } catch (const std::exception &e) {  // nothing a client sends may end the server
            reply.code = openfam::FAM_ERR_RESOURCE;
            CopyMessage(&reply, e.what());
        }
    }
    iovec data{&reply, sizeof reply};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (fd >= 0) {
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
    }
    (fd >= 0 ? granted_ : refused_).fetch_add(1);  // counted before the client hears
    (void)!sendmsg(connection, &message, MSG_NOSIGNAL);
    if (fd >= 0) close(fd);
    close(connection);
}

int RequestHeap(const std::string &socket_path, uint64_t region_id, uint64_t key, bool writable,
                uint32_t server_uid) {
    sockaddr_un address = AddressOf(socket_path);
    int connection = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (connection < 0) {
        Fail(openfam::FAM_ERR_RESOURCE, "same-node socket {}: {}", socket_path,
             std::strerror(errno));
    }
    SetTimeout(connection, SO_RCVTIMEO, kAnswerTimeoutMs);
    SetTimeout(connection, SO_SNDTIMEO, kAnswerTimeoutMs);
    HeapRequest request;
    request.writable = writable ? 1 : 0;
    request.region_id = region_id;
    request.key = key;
    HeapReply reply;
    iovec data{&reply, sizeof reply};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    ssize_t got = -1;
    ucred peer{};
    socklen_t length = sizeof peer;
    int err = 0;
    if (connect(connection, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0) {
        err = errno;
    } else if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
               peer.uid != server_uid) {
        close(connection);
        Fail(openfam::FAM_ERR_RESOURCE,
             "same-node socket {} is answered by uid {}, not by the memory server's uid {}: "
             "the key is not sent there",
             socket_path, peer.uid, server_uid);
    } else if (send(connection, &request, sizeof request, MSG_NOSIGNAL) ==
               static_cast<ssize_t>(sizeof request)) {
        got = recvmsg(connection, &message, MSG_CMSG_CLOEXEC);
        err = errno;
    } else {
        err = errno;
    }
    close(connection);
    int fd = -1;
    for (cmsghdr *header = got > 0 ? CMSG_FIRSTHDR(&message) : nullptr; header;
         header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS) {
            std::memcpy(&fd, CMSG_DATA(header), sizeof fd);
        }
    }
    if (got != static_cast<ssize_t>(sizeof reply)) {
        if (fd >= 0) close(fd);
        Fail(openfam::FAM_ERR_RESOURCE, "same-node socket {} does not answer for region {}: {}",
             socket_path, region_id,
             got < 0 ? std::strerror(err) : "a short reply (the server is busy)");
    }
    reply.message[sizeof reply.message - 1] = '\0';
    if (reply.code != 0 || fd < 0) {
        if (fd >= 0) close(fd);
        throw Failure(static_cast<Fam_Error>(reply.code ? reply.code : openfam::FAM_ERR_RESOURCE),
                      reply.code ? reply.message : "the server sent no descriptor");
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != server_uid) {
        close(fd);
        Fail(openfam::FAM_ERR_RESOURCE,
             "same-node socket {} sent for region {} a descriptor that is not a heap file of "
             "the memory server's uid {}",
             socket_path, region_id, server_uid);
    }
    return fd;
}

std::shared_ptr<HeapMapping> MapHeapDescriptor(int fd, bool writable, const std::string &what) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        Fail(openfam::FAM_ERR_RESOURCE, "{}: fstat: {}", what, std::strerror(err));
    }
    uint64_t length = static_cast<uint64_t>(st.st_size);
    void *base = mmap(nullptr, length, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                      MAP_SHARED | MAP_NORESERVE, fd, 0);
    int err = errno;
    close(fd);
    if (base == MAP_FAILED) {
        Fail(openfam::FAM_ERR_RESOURCE, "{}: mmap: {}", what, std::strerror(err));
    }
    return std::make_shared<HeapMapping>(static_cast<char *>(base), length);
}

}  // namespace fampool
