#include "fabric/fabric_atomics.h"

#include <cstring>

namespace fampool {
namespace {

template <typename T>
void Negate(const void *operand, void *out) {
    T value;
    std::memcpy(&value, operand, sizeof(T));
    if constexpr (std::is_integral_v<T>) {
        using Unsigned = std::make_unsigned_t<T>;
        value = static_cast<T>(Unsigned{0} - static_cast<Unsigned>(value));
    } else {
        value = -value;
    }
    std::memcpy(out, &value, sizeof(T));
}

}  // namespace

bool ToFabric(AtomicOp op, DataType type, bool fetching, FabricAtomic *out) {
    switch (type) {
        case DataType::kInt32:
            out->type = FI_INT32;
            break;
        case DataType::kInt64:
            out->type = FI_INT64;
            break;
        case DataType::kUint32:
            out->type = FI_UINT32;
            break;
        case DataType::kUint64:
            out->type = FI_UINT64;
            break;
        case DataType::kFloat:
            out->type = FI_FLOAT;
            break;
        case DataType::kDouble:
            out->type = FI_DOUBLE;
            break;
        case DataType::kInt128:
            return false;
    }
    out->kind = fetching ? FabricAtomic::kFetch : FabricAtomic::kPlain;
    switch (op) {
        case AtomicOp::kSet:
            out->op = FI_ATOMIC_WRITE;
            break;
        case AtomicOp::kAdd:
        case AtomicOp::kSubtract:
            out->op = FI_SUM;
            break;
        case AtomicOp::kMin:
            out->op = FI_MIN;
            break;
        case AtomicOp::kMax:
            out->op = FI_MAX;
            break;
        case AtomicOp::kAnd:
            out->op = FI_BAND;
            break;
        case AtomicOp::kOr:
            out->op = FI_BOR;
            break;
        case AtomicOp::kXor:
            out->op = FI_BXOR;
            break;
        case AtomicOp::kFetch:
            out->op = FI_ATOMIC_READ;
            out->kind = FabricAtomic::kFetch;
            break;
        case AtomicOp::kSwap:
            out->op = FI_ATOMIC_WRITE;
            out->kind = FabricAtomic::kFetch;
            break;
        case AtomicOp::kCompareSwap:
            out->op = FI_CSWAP;
            out->kind = FabricAtomic::kCompare;
            break;
    }
    return true;
}

void FabricOperand(AtomicOp op, DataType type, const void *operand, void *out) {
    size_t size = SizeOf(type);
    if (op == AtomicOp::kFetch || !operand) {
        std::memset(out, 0, size);  // FI_ATOMIC_READ ignores it; keep it defined
        return;
    }
    if (op != AtomicOp::kSubtract) {
        std::memcpy(out, operand, size);
        return;
    }
    switch (type) {
        case DataType::kInt32:
            return Negate<int32_t>(operand, out);
        case DataType::kInt64:
            return Negate<int64_t>(operand, out);
        case DataType::kUint32:
            return Negate<uint32_t>(operand, out);
        case DataType::kUint64:
            return Negate<uint64_t>(operand, out);
        case DataType::kFloat:
            return Negate<float>(operand, out);
        case DataType::kDouble:
            return Negate<double>(operand, out);
        case DataType::kInt128:
            return Negate<__int128>(operand, out);
    }
}

}  // namespace fampool
