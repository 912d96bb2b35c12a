// How fampool's atomics map onto libfabric's: which call (fi_atomic, fi_fetch_atomic,
// fi_compare_atomic), which fi_op and which fi_datatype. Subtraction has no fi_op: it is a sum
// of the negated operand.
#ifndef FAMPOOL_FABRIC_FABRIC_ATOMICS_H_
#define FAMPOOL_FABRIC_FABRIC_ATOMICS_H_

#include <rdma/fi_atomic.h>

#include "common/data_path.h"

namespace fampool {

struct FabricAtomic {
    enum Kind : uint8_t { kPlain, kFetch, kCompare };
    Kind kind = kPlain;
    fi_op op = FI_ATOMIC_WRITE;
    fi_datatype type = FI_UINT64;
};

// False when libfabric has no such operation at all (128-bit types): the memory server applies
// it instead. `fetching`: the caller wants the previous value.
bool ToFabric(AtomicOp op, DataType type, bool fetching, FabricAtomic *out);

// Writes the operand libfabric should apply into `out` (SizeOf(type) bytes): `operand` itself,
// or its negation for kSubtract (two's complement for integers, so unsigned values wrap as the
// memory-side subtraction does).
void FabricOperand(AtomicOp op, DataType type, const void *operand, void *out);

}  // namespace fampool

#endif  // FAMPOOL_FABRIC_FABRIC_ATOMICS_H_
