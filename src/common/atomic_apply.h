// Applies an atomic operation to memory this process can address, with CPU atomics. Used by the
// embedded data path and by memory servers for the operations a fabric provider cannot do
// (128-bit compare-and-swap, operations its atomics table lacks). Atomic across processes that
// map the same memory: 128-bit operations use cmpxchg16b, never a process-local lock.
#ifndef FAMPOOL_COMMON_ATOMIC_APPLY_H_
#define FAMPOOL_COMMON_ATOMIC_APPLY_H_

#include "common/data_path.h"

namespace fampool {

void ApplyAtomic(char *address, AtomicOp op, DataType type, const void *operand,
                 const void *compare, void *result);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_ATOMIC_APPLY_H_
