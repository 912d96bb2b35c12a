// The data path: how a PE reads, writes and updates the bytes of an item once the metadata
// service has granted access. One implementation per transport (transport/shm: load/store on
// mapped heaps; transport/fabric: libfabric RMA to memory servers), chosen at fam_initialize.
//
// A Transport binds items (Attach) and opens Channels. Each fam object and each fam_context
// owns one Channel: its own endpoint and completion tracking, so a context's quiet waits for
// that context's operations only.
#ifndef FAMPOOL_TRANSPORT_TRANSPORT_H_
#define FAMPOOL_TRANSPORT_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "common/data_path.h"
#include "common/fam_objects.h"

namespace fampool {

class Transport {
  public:
    virtual ~Transport() = default;
    virtual const char *name() const = 0;

    // Binds an item to the data path (maps its heap, or connects to its memory servers and
    // keeps their keys).
    virtual std::shared_ptr<Binding> Attach(const ItemInfo &item) = 0;
    virtual std::unique_ptr<Channel> OpenChannel() = 0;
    // Load/store address of the item in this process (read-only memory unless `writable`).
    // Throws FAM_ERR_INVALIDOP when the item's memory is not reachable from this node.
    virtual void *Map(Binding &item, bool writable) = 0;
    virtual void Unmap(void *local) = 0;
    // This process destroyed the region: bindings of its items report !valid() from now on.
    virtual void Forget(uint64_t region_id) { (void)region_id; }
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_TRANSPORT_H_
