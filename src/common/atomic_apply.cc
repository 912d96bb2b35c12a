#include "common/atomic_apply.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
        case AtomicOp::kAdd:
            return old + operand;
        case AtomicOp::kSubtract:
            return old - operand;
        case AtomicOp::kMin:
            return operand < old ? operand : old;
        case AtomicOp::kMax:
            return operand > old ? operand : old;
        default:
            break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case AtomicOp::kAnd:
                return old & operand;
            case AtomicOp::kOr:
                return old | operand;
            case AtomicOp::kXor:
                return old ^ operand;
            default:
                break;
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
            case AtomicOp::kSwap:
                return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kAdd:
                return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kSubtract:
                return __atomic_fetch_sub(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kAnd:
                return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kOr:
                return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
            case AtomicOp::kXor:
                return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
            default:
                break;
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

}  // namespace

size_t SizeOf(DataType type) {
    switch (type) {
        case DataType::kInt32:
        case DataType::kUint32:
        case DataType::kFloat:
            return 4;
        case DataType::kInt64:
        case DataType::kUint64:
        case DataType::kDouble:
            return 8;
        case DataType::kInt128:
            return 16;
    }
    return 0;
}

const char *NameOf(ElementOp op) {
    switch (op) {
        case ElementOp::kAdd:
            return "OP_ADD_INDEXED";
        case ElementOp::kScatter:
            return "OP_SCATTER";
        case ElementOp::kGather:
            return "OP_GATHER";
    }
    return "an unknown element operation";
}

void ApplyAtomic(char *address, AtomicOp op, DataType type, const void *operand,
                 const void *compare, void *result) {
    switch (type) {
        case DataType::kInt32:
            return ApplyTyped<int32_t>(address, op, operand, compare, result);
        case DataType::kInt64:
            return ApplyTyped<int64_t>(address, op, operand, compare, result);
        case DataType::kInt128:
            return ApplyTyped<__int128>(address, op, operand, compare, result);
        case DataType::kUint32:
            return ApplyTyped<uint32_t>(address, op, operand, compare, result);
        case DataType::kUint64:
            return ApplyTyped<uint64_t>(address, op, operand, compare, result);
        case DataType::kFloat:
            return ApplyTyped<float>(address, op, operand, compare, result);
        case DataType::kDouble:
            return ApplyTyped<double>(address, op, operand, compare, result);
    }
}

namespace {

// CopyFamBytes copies sizes in [kLoopFrom, kLoopBelow) itself: 16-byte loads at any alignment,
// 16-byte stores aligned in the destination. glibc's memcpy here (rep movsb in that range)
// moved 1.6-2.3 GB/s instead of 6-8 when the source was aligned and the destination was not:
// a get from a mapped heap (page-aligned) into a buffer from malloc (16 bytes past a page) is
// exactly that, and the benchmarks' memcpy baseline, between two malloc'd buffers, is not.
// This loop moved 6.7-8.6 GB/s at every alignment measured, memcpy's best or better. From
// 1 MiB memcpy uses non-temporal stores and is as fast at any alignment.
constexpr size_t kLoopFrom = 2048;
constexpr size_t kLoopBelow = size_t{1} << 20;

}  // namespace

__attribute__((noinline)) void CopyFamBytes(void *to, const void *from, size_t nbytes) {
#if defined(__SSE2__)
    if (nbytes >= kLoopFrom && nbytes < kLoopBelow) {
        char *d = static_cast<char *>(to);
        const char *s = static_cast<const char *>(from);
        size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
        std::memcpy(d, s, head);
        d += head;
        s += head;
        nbytes -= head;
        for (; nbytes >= 64; nbytes -= 64, d += 64, s += 64) {
            __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s));
            __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 16));
            __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 32));
            __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + 48));
            _mm_store_si128(reinterpret_cast<__m128i *>(d), a);
            _mm_store_si128(reinterpret_cast<__m128i *>(d + 16), b);
            _mm_store_si128(reinterpret_cast<__m128i *>(d + 32), c);
            _mm_store_si128(reinterpret_cast<__m128i *>(d + 48), e);
        }
        std::memcpy(d, s, nbytes);
        return;
    }
#endif
    std::memcpy(to, from, nbytes);
}

namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14
#endif
constexpr size_t kPopulateFrom = size_t{4} << 20;
constexpr size_t kPopulateStep = size_t{8} << 20;

// Whether the pages at both ends of [at, at + length) exist (mincore: in the page cache of the
// mapped file). Two pages stand for the step: a step written before has them, a fresh one not.
bool Present(uintptr_t at, size_t length, uintptr_t page) {
    unsigned char first = 0, last = 0;
    uintptr_t end_page = (at + length - 1) / page * page;
    if (mincore(reinterpret_cast<void *>(at), 1, &first) != 0) return true;
    if (mincore(reinterpret_cast<void *>(end_page), 1, &last) != 0) return true;
    return (first & 1) && (last & 1);
}

}  // namespace

void WriteFamBytes(void *to, const void *from, size_t nbytes) {
    if (nbytes < kPopulateFrom) return CopyFamBytes(to, from, nbytes);
    static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    char *d = static_cast<char *>(to);
    // The pages first, the bytes after in one copy: memcpy in steps of 8 MiB moved 5-6 GB/s
    // where one of the whole range, with non-temporal stores, moved 9-10.
    for (size_t done = 0; done < nbytes;) {
        size_t length = std::min(kPopulateStep, nbytes - done);
        uintptr_t first = reinterpret_cast<uintptr_t>(d + done) / page * page;
        uintptr_t end = reinterpret_cast<uintptr_t>(d + done + length);
        done += length;
        // Populating pages already there still walks their page tables: only steps whose
        // pages are not there yet. EINVAL (an older kernel), ENOMEM, EFAULT: the copy's own
        // faults do it, or say what is wrong.
        if (!Present(first, end - first, page) &&
            madvise(reinterpret_cast<void *>(first), end - first, MADV_POPULATE_WRITE) != 0) {
            break;
        }
    }
    CopyFamBytes(to, from, nbytes);
}

}  // namespace fampool
