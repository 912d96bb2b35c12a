// The initiator side of a memory server: libfabric reads and writes from this server's heaps
// to other memory servers, for memory-side work that spans servers. It opens, on first need, a
// client-role fabric context of the same provider as the server's target endpoint and keeps a
// few channels (endpoints) for the operations that run at once.
#ifndef FAMPOOL_TRANSPORT_FABRIC_FABRIC_PEERS_H_
#define FAMPOOL_TRANSPORT_FABRIC_FABRIC_PEERS_H_

#include <memory>
#include <mutex>
#include <vector>

#include "common/data_path.h"
#include "fabric/fabric.h"
#include "memserver/peers.h"

namespace fampool {

class FabricContext;

class FabricPeers : public Peers {
  public:
    // `config`: the provider, the local interface (node) and the bound on every wait; the
    // service (port) is not used.
    explicit FabricPeers(FabricConfig config);
    ~FabricPeers() override;

    std::unique_ptr<PeerTransfers> Open(const ItemLayout &item) override;

    // A channel for one operation, and back when it is done (kept for the next one).
    std::unique_ptr<Channel> TakeChannel();
    void ReturnChannel(std::unique_ptr<Channel> channel);

  private:
    FabricConfig config_;
    std::mutex mutex_;
    std::shared_ptr<FabricContext> context_;  // opened on first use
    std::vector<std::unique_ptr<Channel>> idle_;
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_FABRIC_FABRIC_PEERS_H_
