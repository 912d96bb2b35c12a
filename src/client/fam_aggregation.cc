// FamImpl: memory-side aggregation (fam_queue_operation, fam_aggregate_flush): the checks of a
// queued operation's arguments and the caller's rights; the queues and their shipping are
// AggregationQueues (aggregation_queues.h). On the embedded model the PE's own CPU is the
// memory side.
#include <algorithm>

#include "client/fam_impl.h"

namespace fampool {
namespace {

// FAM_QUEUE_OP values as fam/fam.h numbers them.
bool ToElementOp(int op, ElementOp *out) {
    switch (op) {
        case OP_ADD_INDEXED:
            *out = ElementOp::kAdd;
            return true;
        case OP_SCATTER:
            *out = ElementOp::kScatter;
            return true;
        case OP_GATHER:
            *out = ElementOp::kGather;
            return true;
    }
    return false;
}

}  // namespace

void FamImpl::QueueOperation(int op_number, void *local, Fam_Descriptor *item, uint64_t count,
                             const uint64_t *index, uint64_t element_size) {
    Session &session = Live();
    const Config &config = session.config;
    if (!config.aggregation) {
        Fail(openfam::FAM_ERR_ATL_NOT_ENABLED,
             "memory-side aggregation is turned off (aggregation: false, or "
             "FAMPOOL_AGGREGATION=0)");
    }
    ElementOp op;
    if (!ToElementOp(op_number, &op)) {
        Fail(openfam::FAM_ERR_ATL_QUEUE_INSERT,
             "operation {} is not OP_ADD_INDEXED, OP_SCATTER or OP_GATHER", op_number);
    }
    if (element_size == 0) Fail(openfam::FAM_ERR_INVALID, "element size is 0");
    if (op == ElementOp::kAdd && element_size != 4 && element_size != 8) {
        Fail(openfam::FAM_ERR_ATL_QUEUE_INSERT,
             "OP_ADD_INDEXED adds 4- or 8-byte integers, not {}-byte elements", element_size);
    }
    DescriptorState &state = descriptors_.Access(session, item, AccessFor(op), 0, 0);
    const ItemInfo &info = state.item();
    if (count == 0) return;
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "local buffer is NULL for {} elements", count);
    if (!index) Fail(openfam::FAM_ERR_NULLPTR, "element index array is NULL");
    uint64_t last = 0, end = 0;
    for (uint64_t i = 0; i < count; ++i) last = std::max(last, index[i]);
    if (__builtin_add_overflow(last, 1, &end) || __builtin_mul_overflow(end, element_size, &end) ||
        end > info.size) {
        Fail(openfam::FAM_ERR_OUTOFRANGE,
             "element {} of {} bytes (of {} elements) lies past end of {} (size {})", last,
             element_size, count, Describe(info), info.size);
    }
    if (op == ElementOp::kAdd && info.offset % element_size != 0) {
        Fail(openfam::FAM_ERR_ATL_QUEUE_INSERT,
             "{} does not start at a multiple of {} bytes: its elements cannot be added "
             "atomically",
             Describe(info), element_size);
    }
    queues_.Add(config, state, op, local, index, count, element_size);
}

void FamImpl::AggregateFlush(Fam_Descriptor *item) {
    Live();
    if (!item) Fail(openfam::FAM_ERR_NULLPTR, "descriptor is NULL");
    Fam_Global_Descriptor global = item->get_global_descriptor();
    queues_.Flush({global.regionId, global.offset});
}

}  // namespace fampool
