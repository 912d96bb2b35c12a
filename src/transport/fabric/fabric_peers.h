// The initiator side of a memory server: libfabric reads and writes from this server's heaps
// to other memory servers, for memory-side work that spans servers. It opens, on first need, a
// client-role fabric context of the same provider as the server's target endpoint and keeps a
// few channels (endpoints) for the operations that run at once.
#ifndef FAMPOOL_TRANSPORT_FABRIC_FABRIC_PEERS_H_
#define FAMPOOL_TRANSPORT_FABRIC_FABRIC_PEERS_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
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

    // A channel for one operation, and back when it is done (kept for the next one, unless a
    // peer restarted since it was taken: `generation` is the one TakeChannel gave).
    std::unique_ptr<Channel> TakeChannel(uint64_t *generation);
    void ReturnChannel(std::unique_ptr<Channel> channel, uint64_t generation);

  private:
    // Records the lives of `item`'s servers (each key names the life that granted it); a
    // server in a life other than the one last seen, or first seen with channels already
    // open, may have restarted, and the channels' connections to its earlier life are dead:
    // the idle channels are closed and those in use are not kept (a new generation). Without
    // it the first transfer to the new life waited for the data path's bound (5 s) and failed:
    // a connection to a life that ended is not found dead until a transfer on it times out.
    void NoteLives(const ItemLayout &item);

    FabricConfig config_;
    std::mutex mutex_;
    std::shared_ptr<FabricContext> context_;  // opened on first use
    std::vector<std::unique_ptr<Channel>> idle_;
    uint64_t generation_ = 0;
    std::map<std::string, std::string> lives_;  // fabric address -> incarnation last seen
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_FABRIC_FABRIC_PEERS_H_
