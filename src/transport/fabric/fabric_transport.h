// The cluster model's data path: libfabric RMA and atomics from this process to the memory
// servers that hold an item's bytes. The descriptor carries each server's endpoint address, key
// and base address, so that reads and writes (split across servers for interleaved items) go
// straight to the servers with no metadata call. Atomics the provider cannot do (128-bit ones,
// or ones missing from its table) go to the memory server's CPU through MemoryServer::Atomic.
// Over shm (memory servers on this node) an item whose heaps' descriptors the servers give this
// process (memserver/heap_socket.h) is reached with loads and stores instead (docs/semantics.md,
// "Same-node memory servers").
#ifndef FAMPOOL_TRANSPORT_FABRIC_FABRIC_TRANSPORT_H_
#define FAMPOOL_TRANSPORT_FABRIC_FABRIC_TRANSPORT_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "fabric/fabric_context.h"
#include "memserver/heap.h"
#include "transport/transport.h"

namespace fampool {

class FabricTransport : public Transport {
  public:
    // `servers_for_fallback` reaches a memory server's control path for the atomics the
    // provider cannot do.
    FabricTransport(const FabricConfig &config, FabricContext::ServerLookup servers_for_fallback);

    const char *name() const override { return "fabric"; }
    std::shared_ptr<Binding> Attach(const ItemInfo &item) override;
    std::unique_ptr<Channel> OpenChannel() override;
    // Maps the item's heap when its memory server runs on this node and gives this process the
    // heap's descriptor (and the item is on one server); otherwise throws FAM_ERR_INVALIDOP
    // (FAM_ERR_NOPERM with the server's reason when it refuses).
    void *Map(Binding &item, bool writable) override;
    void Unmap(void *local) override;
    void Forget(uint64_t region_id) override;

  private:
    // Maps the heaps of the item's servers when they run on this node and the provider is shm
    // (FabricBinding::direct); leaves the item on the fabric when any of them cannot be.
    void MapDirect(FabricBinding &binding);
    // A mapping of `server`'s heap of the item's region covering at least [0, end): the
    // server's descriptor of it (or the file opened by name, fabric_direct: path), read-only
    // unless the binding is writable. Throws Failure when refused or unreachable.
    std::shared_ptr<HeapMapping> HeapOf(const FabricBinding &binding,
                                        const FabricBinding::Server &server, uint64_t end);

    std::shared_ptr<FabricContext> context_;
    bool direct_ = false;
    bool by_path_ = false;
    std::mutex heaps_mutex_;
    // By heap (socket or path, region, writable).
    std::map<std::string, std::weak_ptr<HeapMapping>> heaps_;
    std::mutex regions_mutex_;
    std::map<uint64_t, std::shared_ptr<std::atomic<bool>>> regions_;  // live regions' flags
    std::mutex maps_mutex_;
    std::map<void *, std::pair<void *, size_t>> maps_;  // address -> mmap'd range
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_FABRIC_FABRIC_TRANSPORT_H_
