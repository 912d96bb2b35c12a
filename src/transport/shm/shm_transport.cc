#include "transport/shm/shm_transport.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

#include "common/error.h"

namespace fampool {
namespace {

// Compare-and-swap returning the previous value; 128-bit through cmpxchg16b (this file is built
// with -mcx16), so that it stays lock-free and atomic across processes.
template <typename T>
T CompareSwap(T *p, T expected, T desired) {
    if constexpr (sizeof(T) == 16) {
        return __sync_val_compare_and_swap(p, expected, desired);
    } else {
        __atomic_compare_exchange(p, &expected, &desired, false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
        return expected;  // on failure the current value, on success equal to it
    }
}

template <typename T>
T Load(T *p) {
    if constexpr (sizeof(T) == 16) {
        return __sync_val_compare_and_swap(p, T(0), T(0));
    } else {
        T value;
        __atomic_load(p, &value, __ATOMIC_SEQ_CST);
        return value;
    }
}

template <typename T>
T Combine(AtomicOp op, T old, T operand) {
    switch (op) {
        case AtomicOp::kAdd: return old + operand;
        case AtomicOp::kSubtract: return old - operand;
        case AtomicOp::kMin: return operand < old ? operand : old;
        case AtomicOp::kMax: return operand > old ? operand : old;
        default: break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case AtomicOp::kAnd: return old & operand;
            case AtomicOp::kOr: return old | operand;
            case AtomicOp::kXor: return old ^ operand;
            default: break;
        }
    }
    return operand;  // kSet, kSwap
}

// A read-modify-write as a compare-and-swap loop: for the operations the CPU has no single
// instruction for (min, max, floating point, 128-bit).
template <typename T>
T UpdateLoop(T *p, AtomicOp op, T operand) {
    T old = Load(p);
    for (;;) {
        T seen = CompareSwap(p, old, Combine(op, old, operand));
        if (std::memcmp(&seen, &old, sizeof(T)) == 0) return old;
        old = seen;
    }
}

template <typename T>
T Apply(T *p, AtomicOp op, T operand, T compare) {
    if (op == AtomicOp::kFetch) return Load(p);
    if (op == AtomicOp::kCompareSwap) return CompareSwap(p, compare, operand);
    if constexpr (std::is_integral_v<T> && sizeof(T) <= 8) {
        switch (op) {
            case AtomicOp::kSet:
            case AtomicOp::kSwap: return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kAdd: return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kSubtract: return __atomic_fetch_sub(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kAnd: return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kOr: return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kXor: return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
            default: break;
        }
    }
    return UpdateLoop(p, op, operand);
}

template <typename T>
void ApplyTyped(char *address, AtomicOp op, const void *operand, const void *compare,
                void *result) {
    T value{}, expected{};
    std::memcpy(&value, operand, sizeof(T));
    if (compare) std::memcpy(&expected, compare, sizeof(T));
    T old = Apply(reinterpret_cast<T *>(address), op, value, expected);
    if (result) std::memcpy(result, &old, sizeof(T));
}

char *Base(Binding &item) { return static_cast<ShmBinding &>(item).base; }

}  // namespace

std::shared_ptr<Binding> ShmTransport::Attach(const ItemInfo &item) {
    auto binding = std::make_shared<ShmBinding>();
    ExtentRef extent{item.region_id, item.region.attributes.memoryType == PERSISTENT};
    binding->mapping = memory_server_->Map(extent, item.offset + item.size);
    binding->base = binding->mapping->base() + item.offset;
    binding->path = memory_server_->HeapPath(extent);
    binding->offset = item.offset;
    binding->size = item.size;
    return binding;
}

void ShmTransport::Read(Binding &item, uint64_t offset, void *local, uint64_t nbytes) {
    std::memcpy(local, Base(item) + offset, nbytes);
}

void ShmTransport::Write(Binding &item, uint64_t offset, const void *local, uint64_t nbytes) {
    std::memcpy(Base(item) + offset, local, nbytes);
}

void *ShmTransport::Map(Binding &item, bool writable) {
    if (writable) return Base(item);
    // Without write permission the item is mapped again, read-only, so that a store faults
    // instead of changing FAM.
    auto &shm = static_cast<ShmBinding &>(item);
    const uint64_t page = 4096;
    uint64_t start = shm.offset & ~(page - 1);
    size_t length = static_cast<size_t>(shm.offset + shm.size - start);
    int fd = open(shm.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) Fail(openfam::FAM_ERR_RESOURCE, "cannot open heap {}: {}", shm.path, strerror(errno));
    void *range = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
    close(fd);
    if (range == MAP_FAILED) {
        Fail(openfam::FAM_ERR_RESOURCE, "cannot map heap {}: {}", shm.path, strerror(errno));
    }
    void *address = static_cast<char *>(range) + (shm.offset - start);
    std::lock_guard<std::mutex> lock(read_only_mutex_);
    read_only_maps_[address] = {range, length};
    return address;
}

void ShmTransport::Unmap(void *local) {
    std::lock_guard<std::mutex> lock(read_only_mutex_);
    auto it = read_only_maps_.find(local);
    if (it == read_only_maps_.end()) return;  // a writable map is the heap mapping itself
    munmap(it->second.first, it->second.second);
    read_only_maps_.erase(it);
}

void ShmTransport::Atomic(Binding &item, uint64_t offset, AtomicOp op, DataType type,
                          const void *operand, const void *compare, void *result) {
    char *address = Base(item) + offset;
    switch (type) {
        case DataType::kInt32: return ApplyTyped<int32_t>(address, op, operand, compare, result);
        case DataType::kInt64: return ApplyTyped<int64_t>(address, op, operand, compare, result);
        case DataType::kInt128: return ApplyTyped<__int128>(address, op, operand, compare, result);
        case DataType::kUint32: return ApplyTyped<uint32_t>(address, op, operand, compare, result);
        case DataType::kUint64: return ApplyTyped<uint64_t>(address, op, operand, compare, result);
        case DataType::kFloat: return ApplyTyped<float>(address, op, operand, compare, result);
        case DataType::kDouble: return ApplyTyped<double>(address, op, operand, compare, result);
    }
}

}  // namespace fampool
