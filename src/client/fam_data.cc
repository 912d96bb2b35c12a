// DataPath (fam_data.h): get, put, gather, scatter, element operations and atomics. Every
// check happens before the first byte moves, so a call that fails writes nothing.
#include "client/fam_data.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/error.h"

namespace fampool {

namespace {

// Times a blocking call for the session's usage reports, when it makes them (from here to the
// end of the scope: the transfer and its completion; a call that fails is timed too).
class UsageTimer {
  public:
    UsageTimer(Session &session, UsageReporter::Kind kind)
        : usage_(session.usage.get()), kind_(kind) {
        if (usage_) start_ = std::chrono::steady_clock::now();
    }
    ~UsageTimer() {
        if (usage_) usage_->Took(kind_, std::chrono::steady_clock::now() - start_);
    }

  private:
    UsageReporter *usage_;
    UsageReporter::Kind kind_;
    std::chrono::steady_clock::time_point start_;
};

// A transfer whose keys were revoked is made again with the keys granted since, while the
// caller keeps its rights; at most this many times, so that a program changing the item's
// permissions without end (each change revokes the keys again) cannot hold a transfer forever.
constexpr int kMostRebinds = 16;

}  // namespace

template <typename Move>
void DataPath::Transfer(Session &session, DescriptorState &state, unsigned access, bool repeatable,
                        const Move &move) {
    const std::shared_ptr<Binding> *binding = &state.binding();
    for (int rebinds = 0;; ++rebinds) {
        try {
            move(*binding);
            return;
        } catch (const Failure &failure) {
            if (failure.fam_error() != openfam::FAM_ERR_LIBFABRIC) throw;
            ItemInfo now;
            bool rebound = false;
            try {
                rebound = descriptors_.Rebind(session, state, binding->get(), &now);
            } catch (const Failure &answer) {
                // The item is gone, or no longer this caller's to use: say that. When the
                // metadata service cannot be asked, the transfer's own failure stands.
                if (answer.fam_error() == openfam::FAM_ERR_NOPERM ||
                    answer.fam_error() == openfam::FAM_ERR_NOTFOUND) {
                    throw;
                }
                throw failure;
            }
            if (!rebound || !repeatable || rebinds == kMostRebinds) throw;
            CheckPermission(now, access);
            binding = &state.binding();
            if (!*binding) throw;  // closed meanwhile by another thread
        }
    }
}

void DataPath::Get(void *local, Fam_Descriptor *item, uint64_t offset, uint64_t nbytes,
                   bool blocking) {
    Session &session = LiveSession(session_);
    DescriptorState &state = descriptors_.Access(session, item, kRead, offset, nbytes);
    if (nbytes == 0) return;
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "local buffer is NULL for {} bytes", nbytes);
    if (session.usage) session.usage->Count(UsageReporter::kGet, nbytes);
    if (!blocking) return channel_->Read(state.binding(), offset, local, nbytes, false);
    UsageTimer timed(session, UsageReporter::kGet);
    Transfer(session, state, kRead, /*repeatable=*/true,
             [&](const std::shared_ptr<Binding> &binding) {
                 channel_->Read(binding, offset, local, nbytes, true);
             });
}

void DataPath::Put(void *local, Fam_Descriptor *item, uint64_t offset, uint64_t nbytes,
                   bool blocking) {
    Session &session = LiveSession(session_);
    DescriptorState &state = descriptors_.Access(session, item, kWrite, offset, nbytes);
    if (nbytes == 0) return;
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "local buffer is NULL for {} bytes", nbytes);
    if (session.usage) session.usage->Count(UsageReporter::kPut, nbytes);
    // On a cluster, a plain region's item: FabricChannel::Write (transport/fabric/
    // fabric_channel.cc) posts fi_writemsg per server piece; a RAID item: RedundantChannel
    // (transport/redundant/redundant_channel.cc); embedded: ShmChannel, a memcpy.
    if (!blocking) return channel_->Write(state.binding(), offset, local, nbytes, false);
    UsageTimer timed(session, UsageReporter::kPut);
    Transfer(session, state, kWrite, /*repeatable=*/true,
             [&](const std::shared_ptr<Binding> &binding) {
                 channel_->Write(binding, offset, local, nbytes, true);
             });
}

namespace {

ElementPlan Strided(uint64_t first, uint64_t stride) {
    ElementPlan plan;
    plan.first = first;
    plan.stride = stride;
    return plan;
}

ElementPlan Indexed(const uint64_t *index, uint64_t count) {
    if (!index && count) Fail(openfam::FAM_ERR_NULLPTR, "element index array is NULL");
    ElementPlan plan;
    plan.strided = false;
    if (count) plan.indices.assign(index, index + count);
    return plan;
}

}  // namespace

void DataPath::Elements(void *local, Fam_Descriptor *item, uint64_t count, uint64_t element_size,
                        ElementPlan plan, bool to_fam, bool blocking) {
    Session &session = LiveSession(session_);
    DescriptorState &state = descriptors_.Access(session, item, 0, 0, 0);
    const ItemInfo &info = state.item();
    if (element_size == 0) Fail(openfam::FAM_ERR_INVALID, "element size is 0");
    if (count == 0) return;
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "local buffer is NULL for {} elements", count);
    uint64_t last = 0, end = 0;
    bool overflow = false;
    if (plan.strided) {
        uint64_t span;
        overflow = __builtin_mul_overflow(count - 1, plan.stride, &span) ||
                   __builtin_add_overflow(plan.first, span, &last);
    } else {
        for (uint64_t index : plan.indices) last = std::max(last, index);
    }
    if (overflow || __builtin_add_overflow(last, 1, &end) ||
        __builtin_mul_overflow(end, element_size, &end) || end > info.size) {
        Fail(openfam::FAM_ERR_OUTOFRANGE,
             "element {} of {} bytes (of {} elements) lies past end of {} (size {})", last,
             element_size, count, Describe(info), info.size);
    }
    unsigned access = to_fam ? kWrite : kRead;
    CheckPermission(info, access);
    if (session.usage) {
        session.usage->Count(to_fam ? UsageReporter::kScatter : UsageReporter::kGather,
                             count * element_size);
    }
    if (!blocking) {
        return channel_->Elements(state.binding(), std::move(plan), static_cast<char *>(local),
                                  count, element_size, to_fam, false);
    }
    UsageTimer timed(session, to_fam ? UsageReporter::kScatter : UsageReporter::kGather);
    Transfer(session, state, access, /*repeatable=*/true,
             [&](const std::shared_ptr<Binding> &binding) {
                 channel_->Elements(binding, plan, static_cast<char *>(local), count, element_size,
                                    to_fam, true);
             });
}

void DataPath::ApplyElements(DescriptorState &state, ElementOp op, unsigned access,
                             const uint64_t *index, uint64_t count, uint64_t element_size,
                             char *data) {
    CheckPermission(state.item(), access);
    Transfer(*session_, state, access, op != ElementOp::kAdd,
             [&](const std::shared_ptr<Binding> &binding) {
                 channel_->ApplyElements(binding, op, index, count, element_size, data);
             });
}

void DataPath::Gather(void *local, Fam_Descriptor *item, uint64_t count, uint64_t first,
                      uint64_t stride, uint64_t element_size, bool blocking) {
    Elements(local, item, count, element_size, Strided(first, stride), false, blocking);
}

void DataPath::Gather(void *local, Fam_Descriptor *item, uint64_t count, const uint64_t *index,
                      uint64_t element_size, bool blocking) {
    Elements(local, item, count, element_size, Indexed(index, count), false, blocking);
}

void DataPath::Scatter(void *local, Fam_Descriptor *item, uint64_t count, uint64_t first,
                       uint64_t stride, uint64_t element_size, bool blocking) {
    Elements(local, item, count, element_size, Strided(first, stride), true, blocking);
}

void DataPath::Scatter(void *local, Fam_Descriptor *item, uint64_t count, const uint64_t *index,
                       uint64_t element_size, bool blocking) {
    Elements(local, item, count, element_size, Indexed(index, count), true, blocking);
}

void DataPath::AtomicBytes(AtomicOp op, bool fetching, DataType type, size_t size,
                           Fam_Descriptor *item, uint64_t offset, const void *operand,
                           const void *compare, void *result) {
    Session &session = LiveSession(session_);
    unsigned access = op == AtomicOp::kFetch ? kRead : fetching ? kRead | kWrite : kWrite;
    DescriptorState &state = descriptors_.Access(session, item, access, offset, size);
    if (offset % size != 0) {
        Fail(openfam::FAM_ERR_INVALID,
             "offset {} of {} is not aligned to the {}-byte operand of the atomic", offset,
             Describe(state.item()), size);
    }
    // Done twice, these leave what once does (a fetch, or a non-fetching set, min, max, and,
    // or); the others are not made again after a failure, whatever the keys.
    if (session.usage) session.usage->Count(UsageReporter::kAtomic, size);
    bool repeatable =
        op == AtomicOp::kFetch ||
        (!fetching && (op == AtomicOp::kSet || op == AtomicOp::kMin || op == AtomicOp::kMax ||
                       op == AtomicOp::kAnd || op == AtomicOp::kOr));
    UsageTimer timed(session, UsageReporter::kAtomic);
    Transfer(session, state, access, repeatable, [&](const std::shared_ptr<Binding> &binding) {
        channel_->Atomic(*binding, offset, op, type, operand, compare, fetching ? result : nullptr);
    });
}

}  // namespace fampool
