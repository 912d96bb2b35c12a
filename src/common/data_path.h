// The data path's vocabulary, shared by every transport and by the memory servers: atomic
// operations and their operand types, where the elements of a gather or scatter lie, a
// transport's hold on an item (Binding), and one stream of data-path operations (Channel).
#ifndef FAMPOOL_COMMON_DATA_PATH_H_
#define FAMPOOL_COMMON_DATA_PATH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace fampool {

// What a transport needs to reach one item's bytes (a mapping, or keys and addresses).
struct Binding {
    virtual ~Binding() = default;
    // False once the item's region was destroyed (as far as this process can tell).
    virtual bool valid() const { return true; }
};

enum class AtomicOp : uint8_t {
    kSet,
    kAdd,
    kSubtract,
    kMin,
    kMax,
    kAnd,
    kOr,
    kXor,  // result: the previous value
    kFetch,
    kSwap,
    kCompareSwap
};

enum class DataType : uint8_t { kInt32, kInt64, kInt128, kUint32, kUint64, kFloat, kDouble };

size_t SizeOf(DataType type);

// Where the elements of a gather or scatter are: strided, or listed by index.
struct ElementPlan {
    bool strided = true;
    uint64_t first = 0, stride = 0;
    std::vector<uint64_t> indices;
    uint64_t IndexOf(uint64_t i) const { return strided ? first + i * stride : indices[i]; }
};

// Element operations done where the bytes are (fam_queue_operation, and the gathers and scatters
// memory servers do for a client): element i lies at byte index[i] * element_size of the item.
// kAdd adds the integer of element_size bytes (4 or 8, two's complement, wrapping) given for
// element i to it, atomically; kScatter writes the given bytes; kGather reads them.
enum class ElementOp : uint8_t { kAdd, kScatter, kGather };

const char *NameOf(ElementOp op);

// One stream of data-path operations. Offsets are bytes within the item; the caller has checked
// bounds and permissions. Unless `blocking`, a call may return before its bytes have moved (the
// caller keeps `local` valid until Quiet); errors of such calls surface at Quiet.
class Channel {
  public:
    virtual ~Channel() = default;
    virtual void Read(const std::shared_ptr<Binding> &item, uint64_t offset, void *local,
                      uint64_t nbytes, bool blocking) = 0;
    virtual void Write(const std::shared_ptr<Binding> &item, uint64_t offset, const void *local,
                       uint64_t nbytes, bool blocking) = 0;
    // Writes the same bytes at `offset` of each item (the copies of a mirrored item), blocking:
    // all are posted before the one wait. A failure of any throws; which copies then hold the
    // bytes is unknown. By default, one blocking write after another.
    virtual void WriteCopies(const std::vector<std::shared_ptr<Binding>> &items, uint64_t offset,
                             const void *local, uint64_t nbytes) {
        for (const auto &item : items) Write(item, offset, local, nbytes, true);
    }
    // Gather (to_fam false) or scatter: element i at plan.IndexOf(i) * element_size in the
    // item, at i * element_size in `local`.
    virtual void Elements(const std::shared_ptr<Binding> &item, ElementPlan plan, char *local,
                          uint64_t count, uint64_t element_size, bool to_fam, bool blocking) = 0;
    // Applies `op` to `count` elements with the CPU next to their bytes, blocking: the memory
    // servers' own (one request per server holding any of them, after checking the item's key
    // there) or, where this process maps the item, its own. `data` holds element_size bytes per
    // element: the operands of kAdd and kScatter, the results of kGather. Ordered after this
    // channel's earlier operations.
    virtual void ApplyElements(const std::shared_ptr<Binding> &item, ElementOp op,
                               const uint64_t *index, uint64_t count, uint64_t element_size,
                               char *data) = 0;
    // Applies `op` to the value of `type` at `offset`. `operand` (and for kCompareSwap,
    // `compare`) point to values of that type; `result`, if not null, receives the old value.
    // Without `result` the atomic may complete later, by the next Fence or Quiet (whose
    // failures it then reports), as a non-blocking write does; the operand is copied first.
    virtual void Atomic(Binding &item, uint64_t offset, AtomicOp op, DataType type,
                        const void *operand, const void *compare, void *result) = 0;
    // Orders earlier non-blocking writes before later operations.
    virtual void Fence() = 0;
    // Waits for every earlier operation; throws the first error any of them hit.
    virtual void Quiet() = 0;
    // Waits like Quiet but keeps errors (for fam_finalize).
    virtual void Drain() = 0;
    // Operations posted and not yet complete.
    virtual uint64_t Pending() = 0;
};

}  // namespace fampool

#endif  // FAMPOOL_COMMON_DATA_PATH_H_
