// The data path: how a PE reads, writes and updates the bytes of an item once the metadata
// service has granted access. One implementation per transport (transport/shm: load/store on
// mapped heaps; transport/fabric: libfabric RMA), chosen at fam_initialize.
#ifndef FAMPOOL_TRANSPORT_TRANSPORT_H_
#define FAMPOOL_TRANSPORT_TRANSPORT_H_

#include <cstdint>
#include <memory>

#include "client/descriptor_state.h"

namespace fampool {

enum class AtomicOp : uint8_t {
    kSet, kAdd, kSubtract, kMin, kMax, kAnd, kOr, kXor,  // result: the previous value
    kFetch, kSwap, kCompareSwap
};

enum class DataType : uint8_t { kInt32, kInt64, kInt128, kUint32, kUint64, kFloat, kDouble };

class Transport {
  public:
    virtual ~Transport() = default;
    virtual const char *name() const = 0;

    // Binds an item to the data path (maps its heap, obtains keys). Offsets below are bytes
    // within the item; the caller has checked bounds and permissions.
    virtual std::shared_ptr<Binding> Attach(const ItemInfo &item) = 0;
    virtual void Read(Binding &item, uint64_t offset, void *local, uint64_t nbytes) = 0;
    virtual void Write(Binding &item, uint64_t offset, const void *local, uint64_t nbytes) = 0;
    // Applies `op` to the value of `type` at `offset`. `operand` (and for kCompareSwap,
    // `compare`) point to values of that type; `result`, if not null, receives the old value.
    virtual void Atomic(Binding &item, uint64_t offset, AtomicOp op, DataType type,
                        const void *operand, const void *compare, void *result) = 0;
    // Load/store address of the item in this process (read-only memory unless `writable`).
    // Throws FAM_ERR_INVALIDOP when the item's memory is not reachable from this node.
    virtual void *Map(Binding &item, bool writable) = 0;
    virtual void Unmap(void *local) = 0;
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_TRANSPORT_H_
