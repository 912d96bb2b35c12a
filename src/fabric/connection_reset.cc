#include "fabric/connection_reset.h"

#include <dirent.h>
#include <netinet/in.h>
#include <rdma/fi_domain.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

namespace fampool {
namespace {

using Endpoint = std::pair<in6_addr, uint16_t>;  // IPv6 (IPv4 mapped), port

bool SocketAddress(const sockaddr_storage &address, socklen_t length, Endpoint *out) {
    if (address.ss_family == AF_INET && length >= sizeof(sockaddr_in)) {
        const auto *v4 = reinterpret_cast<const sockaddr_in *>(&address);
        std::memset(&out->first, 0, sizeof out->first);
        out->first.s6_addr[10] = out->first.s6_addr[11] = 0xff;
        std::memcpy(&out->first.s6_addr[12], &v4->sin_addr, 4);
        out->second = v4->sin_port;
        return true;
    }
    if (address.ss_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
        const auto *v6 = reinterpret_cast<const sockaddr_in6 *>(&address);
        out->first = v6->sin6_addr;
        out->second = v6->sin6_port;
        return true;
    }
    return false;
}

// Whether a connection to `peer` is one to `wanted`: the same address and port, or the same
// port where `wanted` names no address (a server listening on every address is reached at
// one of them).
bool Reaches(const Endpoint &peer, const Endpoint &wanted) {
    static const in6_addr kAny = IN6ADDR_ANY_INIT;
    static const in6_addr kAnyV4 = {{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0}}};
    if (peer.second != wanted.second) return false;
    return std::memcmp(&peer.first, &wanted.first, sizeof peer.first) == 0 ||
           std::memcmp(&wanted.first, &kAny, sizeof kAny) == 0 ||
           std::memcmp(&wanted.first, &kAnyV4, sizeof kAnyV4) == 0;
}

// The peer of socket `fd`, when it is a connected TCP socket.
bool PeerOf(int fd, Endpoint *peer) {
    int type = 0;
    socklen_t size = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) {
        return false;
    }
    sockaddr_storage name{};
    socklen_t length = sizeof name;
    return getpeername(fd, reinterpret_cast<sockaddr *>(&name), &length) == 0 &&
           SocketAddress(name, length, peer);
}

bool Wanted(const Endpoint &peer, const std::vector<Endpoint> &wanted) {
    for (const Endpoint &each : wanted) {
        if (Reaches(peer, each)) return true;
    }
    return false;
}

// The addresses of `peers` that name sockets: none for formats other than sockaddrs.
std::vector<Endpoint> Addresses(fid_av *av, uint32_t addr_format,
                                const std::vector<fi_addr_t> &peers) {
    std::vector<Endpoint> wanted;
    if (addr_format != FI_SOCKADDR && addr_format != FI_SOCKADDR_IN &&
        addr_format != FI_SOCKADDR_IN6) {
        return wanted;
    }
    for (fi_addr_t peer : peers) {
        sockaddr_storage name{};
        size_t length = sizeof name;
        Endpoint endpoint;
        if (fi_av_lookup(av, peer, &name, &length) == 0 && length <= sizeof name &&
            SocketAddress(name, static_cast<socklen_t>(length), &endpoint)) {
            wanted.push_back(endpoint);
        }
    }
    return wanted;
}

// Calls `each` with every descriptor of the process: the provider does not name its sockets.
// One listing at a time in the process: another would find this one's own descriptor, and
// look at it while it closes.
template <typename Each>
void ForEachDescriptor(Each &&each) {
    static std::mutex listing_one;
    std::lock_guard<std::mutex> lock(listing_one);
    DIR *listing = opendir("/proc/self/fd");
    if (!listing) return;
    while (dirent *entry = readdir(listing)) {
        char *end = nullptr;
        const int fd = static_cast<int>(std::strtol(entry->d_name, &end, 10));
        if (end == entry->d_name || *end != '\0' || fd == dirfd(listing)) continue;
        each(fd);
    }
    closedir(listing);
}

// The inode of socket `fd`; false when `fd` is no socket. Read from the descriptor's link
// ("socket:[INODE]"), not from the descriptor itself, which another thread may be closing.
bool InodeOf(int fd, uint64_t *inode) {
    char path[64], target[64];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(path, target, sizeof target - 1);
    if (length <= 0) return false;
    target[length] = '\0';
    unsigned long long number = 0;
    if (std::sscanf(target, "socket:[%llu]", &number) != 1) return false;
    *inode = number;
    return true;
}

bool Named(const SocketName &socket) {
    uint64_t inode = 0;
    return InodeOf(socket.fd, &inode) && inode == socket.inode;
}

// Sets `fd`, when it is connected to one of `wanted`, to reset when closed.
bool SetReset(int fd, const std::vector<Endpoint> &wanted) {
    Endpoint peer;
    if (!PeerOf(fd, &peer) || !Wanted(peer, wanted)) return false;
    linger abort{1, 0};
    if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort) != 0) return false;
    // Another thread may have closed the descriptor and opened another socket under its
    // number meanwhile: that one is put back as it was.
    if (PeerOf(fd, &peer) && Wanted(peer, wanted)) return true;
    linger keep{0, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &keep, sizeof keep);
    return false;
}

}  // namespace

size_t ResetOnClose(fid_av *av, uint32_t addr_format, const std::vector<fi_addr_t> &peers) {
    std::vector<Endpoint> wanted = Addresses(av, addr_format, peers);
    if (wanted.empty()) return 0;
    size_t set = 0;
    ForEachDescriptor([&](int fd) { set += SetReset(fd, wanted) ? 1 : 0; });
    return set;
}

std::vector<SocketName> OpenSockets() {
    std::vector<SocketName> sockets;
    ForEachDescriptor([&](int fd) {
        uint64_t inode = 0;
        if (InodeOf(fd, &inode)) sockets.push_back({fd, inode});
    });
    std::sort(sockets.begin(), sockets.end());
    return sockets;
}

std::mutex &SocketsOpening() {
    static std::mutex opening;
    return opening;
}

std::vector<SocketName> DropConnections(fid_av *av, uint32_t addr_format, fi_addr_t peer,
                                        const std::vector<SocketName> &among) {
    std::vector<SocketName> dropped;
    std::vector<Endpoint> wanted = Addresses(av, addr_format, {peer});
    if (wanted.empty()) return dropped;
    auto drop = [&](const SocketName &socket) {
        if (!SetReset(socket.fd, wanted)) return;
        // Connecting a TCP socket to AF_UNSPEC aborts its connection (RFC 793's ABORT): a
        // reset goes to the peer, both queues are emptied, and the socket holds the error.
        sockaddr unspecified{};
        unspecified.sa_family = AF_UNSPEC;
        if (connect(socket.fd, &unspecified, sizeof unspecified) != 0) return;
        // A socket closed that way polls as an error and a hang-up, not as readable, and the
        // provider reads it only when readable: ending reception makes it so. (The call says
        // ENOTCONN and marks the socket all the same.)
        shutdown(socket.fd, SHUT_RD);
        dropped.push_back(socket);
    };
    for (const SocketName &socket : among) {
        if (Named(socket)) drop(socket);
    }
    return dropped;
}

bool StillOpen(const SocketName &socket) { return Named(socket); }

}  // namespace fampool
