// Operations given up on that must not go out later. On socket providers (tcp) closing an
// endpoint closes its connections gracefully: the kernel goes on sending what they had queued
// once the peer can be reached again, seconds later maybe (an RMA write given up on because its
// server's link was cut), after the caller made the operation again and wrote newer bytes over
// it. ResetOnClose makes such connections reset when they close instead: what they still hold
// is dropped on this node.
#ifndef FAMPOOL_FABRIC_CONNECTION_RESET_H_
#define FAMPOOL_FABRIC_CONNECTION_RESET_H_

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fampool {

// Every TCP socket of this process connected to one of `peers` (addresses in `av`, whose
// format is `addr_format`: only the sockaddr formats name sockets; others set nothing; a peer
// at the unspecified address matches by port) is reset when it is closed (SO_LINGER with no
// time) rather than closed gracefully. A socket of
// an endpoint that stays open works on as before; when that endpoint closes, it too drops
// what it still holds. Returns how many sockets it set.
size_t ResetOnClose(fid_av *av, uint32_t addr_format, const std::vector<fi_addr_t> &peers);

}  // namespace fampool

#endif  // FAMPOOL_FABRIC_CONNECTION_RESET_H_
