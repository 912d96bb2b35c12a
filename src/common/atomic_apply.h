// Applies an atomic operation to memory this process can address, with CPU atomics. Used by the
// embedded data path and by memory servers for the operations a fabric provider cannot do
// (128-bit compare-and-swap, operations its atomics table lacks). Atomic across processes that
// map the same memory: 128-bit operations use cmpxchg16b, never a process-local lock.
#ifndef FAMPOOL_COMMON_ATOMIC_APPLY_H_
#define FAMPOOL_COMMON_ATOMIC_APPLY_H_

#include "common/data_path.h"

namespace fampool {

// Copies `nbytes` between FAM (a mapped heap) and local memory. FAM is memory other threads and
// processes read and write at the same time (a flag polled in FAM, say): its copies are kept in
// this one function, which scripts/sanitize's ThreadSanitizer run leaves out (tests/tsan.supp).
void CopyFamBytes(void *to, const void *from, size_t nbytes);
// CopyFamBytes into FAM: a copy of kPopulateFrom bytes or more first has the kernel make the
// destination's pages that are not there yet (MADV_POPULATE_WRITE, kPopulateStep at a time),
// instead of faulting them in one by one under the copy. Into a fresh 1 GiB of /dev/shm,
// memcpy alone moved 1.2-1.4 GB/s and populate-then-copy 2.2-2.6 (transfer_bench large).
// Where the kernel cannot (before Linux 5.14) it copies as CopyFamBytes does.
void WriteFamBytes(void *to, const void *from, size_t nbytes);

void ApplyAtomic(char *address, AtomicOp op, DataType type, const void *operand,
                 const void *compare, void *result);

// Applies one element operation (see ElementOp) to the element at `fam` with the bytes at
// `mine`: an atomic add for kAdd (element_size 4 or 8), a copy otherwise.
inline void ApplyElement(ElementOp op, uint64_t element_size, char *fam, char *mine) {
    switch (op) {
        case ElementOp::kAdd:
            ApplyAtomic(fam, AtomicOp::kAdd,
                        element_size == 4 ? DataType::kUint32 : DataType::kUint64, mine, nullptr,
                        nullptr);
            return;
        case ElementOp::kScatter:
            return CopyFamBytes(fam, mine, element_size);
        case ElementOp::kGather:
            return CopyFamBytes(mine, fam, element_size);
    }
}

}  // namespace fampool

#endif  // FAMPOOL_COMMON_ATOMIC_APPLY_H_
