// Operations given up on that must not go out later, or crash the process when their
// endpoint closes: what a channel does to its connections before it closes them.
//
// On socket providers (tcp) closing an endpoint closes its connections gracefully: the kernel
// goes on sending what they had queued once the peer can be reached again, seconds later maybe
// (an RMA write given up on because its server's link was cut), after the caller made the
// operation again and wrote newer bytes over it. ResetOnClose makes such connections reset
// when they close instead: what they still hold is dropped on this node.
//
// libfabric's tcp provider before 1.18 reports a read whose response is half received twice
// when its endpoint closes, the second time with no context, and ofi_rxm dereferences that
// context: the process dies (docs/robustness.md). DropConnections aborts such a connection
// first, so that the provider, driven, finds it failed and fails the read once, as it does
// when a server resets a connection.
#ifndef FAMPOOL_FABRIC_CONNECTION_RESET_H_
#define FAMPOOL_FABRIC_CONNECTION_RESET_H_

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace fampool {

// Every TCP socket of this process connected to one of `peers` (addresses in `av`, whose
// format is `addr_format`: only the sockaddr formats name sockets; others set nothing; a peer
// at the unspecified address matches by port) is reset when it is closed (SO_LINGER with no
// time) rather than closed gracefully. A socket of
// an endpoint that stays open works on as before; when that endpoint closes, it too drops
// what it still holds. Returns how many sockets it set.
size_t ResetOnClose(fid_av *av, uint32_t addr_format, const std::vector<fi_addr_t> &peers);

// A socket of this process: its descriptor, and the inode that tells it from a socket opened
// later under the same number.
struct SocketName {
    int fd;
    uint64_t inode;
    bool operator<(const SocketName &other) const {
        return fd != other.fd ? fd < other.fd : inode < other.inode;
    }
    bool operator==(const SocketName &other) const {
        return fd == other.fd && inode == other.inode;
    }
};

// The sockets this process has open, ordered.
std::vector<SocketName> OpenSockets();

// Held while a caller finds which sockets an operation of its own opened (OpenSockets before
// and after it): the process's other callers open none meanwhile.
std::mutex &SocketsOpening();

// Aborts the TCP connections to `peer` (as for ResetOnClose) among `among` (those still open
// under their names): a reset goes to the peer now, and what either side of this node held of
// them is dropped. Their sockets stay open, failed: a provider reading one next finds the
// error and fails what it was receiving. Returns the sockets whose connections it aborted.
std::vector<SocketName> DropConnections(fid_av *av, uint32_t addr_format, fi_addr_t peer,
                                        const std::vector<SocketName> &among);

// Whether `socket` is still open under its name (a provider closes a failed connection's
// socket once it has seen the failure).
bool StillOpen(const SocketName &socket);

}  // namespace fampool

#endif  // FAMPOOL_FABRIC_CONNECTION_RESET_H_
