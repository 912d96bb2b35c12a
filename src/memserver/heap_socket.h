// The memory server's same-node socket: how a client on the server's node gets a heap's file
// descriptor, to reach an item with loads and stores instead of the fabric, without any heap
// file being open to other users (docs/security.md).
//
// The client connects to the Unix socket the server's grants name (KeyGrant::socket) and asks
// for the heap of a region, presenting a key the metadata service granted it. The server learns
// who asks from the kernel (SO_PEERCRED: the uid and gid at connect time), not from the
// request, and answers with the descriptor (SCM_RIGHTS) only when the key is a live grant of
// the whole extent and the permissions recorded with it let that uid and gid read (and, for a
// writable descriptor, write) the region: LocalMemoryServer::OpenHeapFor. A read-only
// descriptor cannot be mapped writable. Anything else gets the reason, and the client stays on
// the fabric.
#ifndef FAMPOOL_MEMSERVER_HEAP_SOCKET_H_
#define FAMPOOL_MEMSERVER_HEAP_SOCKET_H_

#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "memserver/local_memory_server.h"

namespace fampool {

// What a client asks (one SOCK_SEQPACKET message).
struct HeapRequest {
    static constexpr uint32_t kMagic = 0x64687066;  // "fphd"
    uint32_t magic = kMagic;
    uint32_t writable = 0;
    uint64_t region_id = 0;
    uint64_t key = 0;
};

// The answer: code 0 and a descriptor, or a Fam_Error and the reason.
struct HeapReply {
    int32_t code = 0;
    char message[500] = {};
};

// Serves one memory server's socket until destroyed: a thread accepts, and each connection is
// answered on a thread of its own, so that a client that connects and says nothing holds up
// nobody else (a connection has 1 s to ask). At most kMostPerUser connections of one uid, and
// kMostAnswering in all, are answered at once; more are closed at once (their clients stay on
// the fabric).
class HeapSocketServer {
  public:
    // Listens on `path` (a stale socket file there is replaced) for `server`'s heaps. The
    // socket file is mode 0666: every local user may ask; OpenHeapFor decides. Throws
    // Failure(FAM_ERR_RESOURCE) naming the path when it cannot listen.
    HeapSocketServer(LocalMemoryServer *server, std::string path);
    ~HeapSocketServer();
    HeapSocketServer(const HeapSocketServer &) = delete;
    HeapSocketServer &operator=(const HeapSocketServer &) = delete;

    const std::string &path() const { return path_; }
    // Requests answered with a descriptor, and refused; a connection closed unasked is neither.
    uint64_t granted() const { return granted_.load(); }
    uint64_t refused() const { return refused_.load(); }

    static constexpr int kMostPerUser = 4;
    static constexpr int kMostAnswering = 32;

  private:
    void Serve();
    // Answers one connection of `peer` and closes it.
    void Answer(int connection, const ucred &peer);

    LocalMemoryServer *server_;
    std::string path_;
    int listener_ = -1;
    int wake_[2] = {-1, -1};  // a pipe: written to stop Serve
    std::atomic<uint64_t> granted_{0}, refused_{0};
    std::mutex answering_mutex_;
    std::condition_variable answered_;
    std::map<uid_t, int> answering_;  // connections being answered, by uid
    int answering_total_ = 0;
    std::thread thread_;
};

// The client's side: the heap descriptor `socket`'s server gives for region `region_id` to a
// holder of `key`, read-only unless `writable`. The key is sent only when the process that
// answers on the socket runs as `server_uid` (SO_PEERCRED; another user could have bound the
// name), and the descriptor taken only when it is a regular file of that uid. Throws Failure
// with the server's reason (FAM_ERR_NOPERM when refused; FAM_ERR_RESOURCE when the socket
// cannot be reached or is not the server's).
int RequestHeap(const std::string &socket, uint64_t region_id, uint64_t key, bool writable,
                uint32_t server_uid);

// A mapping of the whole file behind `fd` (read-only unless `writable`); closes `fd`.
std::shared_ptr<HeapMapping> MapHeapDescriptor(int fd, bool writable, const std::string &what);

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_HEAP_SOCKET_H_
