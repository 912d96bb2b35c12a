// How a memory server reaches the memory of other memory servers, for the memory-side work that
// spans servers (copy between servers, backup and restore of interleaved items): reads and
// writes of an item's bytes that lie on another server, with the keys the client handed over.
// FabricPeers does it with libfabric RMA; the embedded model has no peers.
#ifndef FAMPOOL_MEMSERVER_PEERS_H_
#define FAMPOOL_MEMSERVER_PEERS_H_

#include <cstdint>
#include <memory>

#include "common/memory_server.h"

namespace fampool {

// One operation's transfers to and from one item's bytes on other servers. Transfers run in
// the background; Finish waits for them (bounded) and reports the first failure.
class PeerTransfers {
  public:
    virtual ~PeerTransfers() = default;
    // Starts reading item bytes [at, at + nbytes) into `local`, or writing them from `local`.
    // `local` must stay valid until Finish returns.
    virtual void Read(uint64_t at, void *local, uint64_t nbytes) = 0;
    virtual void Write(uint64_t at, const void *local, uint64_t nbytes) = 0;
    // Waits until every transfer started has completed; throws the first failure (a peer that
    // is down or refused the key: FAM_ERR_LIBFABRIC).
    virtual void Finish() = 0;
};

class Peers {
  public:
    virtual ~Peers() = default;
    virtual std::unique_ptr<PeerTransfers> Open(const ItemLayout &item) = 0;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_PEERS_H_
