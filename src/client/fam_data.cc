// FamImpl: get, put, gather, scatter, map and atomics (the data path). Every check happens
// before the first byte moves, so a call that fails writes nothing.
#include <vector>

#include "client/fam_impl.h"

namespace fampool {
namespace {

const char *AccessName(unsigned access) {
    return access == kRead ? "read" : access == kWrite ? "write" : "read and write";
}

void CheckPermission(const ItemInfo &info, unsigned access) {
    if (((access & kRead) && !info.can_read) || ((access & kWrite) && !info.can_write)) {
        Fail(openfam::FAM_ERR_NOPERM, "no {} permission on {}", AccessName(access), Describe(info));
    }
}

bool SameKeys(const ItemInfo &a, const ItemInfo &b) {
    if (a.access.size() != b.access.size()) return false;
    for (size_t i = 0; i < a.access.size(); ++i) {
        const ServerAccess &x = a.access[i], &y = b.access[i];
        if (x.server_id != y.server_id || x.key != y.key || x.base != y.base ||
            x.fabric_address != y.fabric_address) {
            return false;
        }
    }
    return true;
}

}  // namespace

void RequireSameItem(const ItemInfo &fresh, const ItemInfo &held) {
    if (fresh.name != held.name || fresh.size != held.size || fresh.uid != held.uid ||
        fresh.gid != held.gid) {
        Fail(openfam::FAM_ERR_NOTFOUND, "{} was deallocated: another item lies at its offset",
             Describe(held));
    }
}

DescriptorState &FamImpl::Access(Session &session, Fam_Descriptor *item, unsigned access,
                                 uint64_t offset, uint64_t nbytes) {
    DescriptorState &state = Resolve(session, item);
    const ItemInfo &info = state.item;
    const std::shared_ptr<Binding> &binding = state.binding();
    if (!binding || !binding->valid()) {
        Fail(openfam::FAM_ERR_INVALID, "the region of {} was destroyed", Describe(info));
    }
    if (offset > info.size || nbytes > info.size - offset) {
        Fail(openfam::FAM_ERR_OUTOFRANGE, "offset {} + {} bytes past end of {} (size {})", offset,
             nbytes, Describe(info), info.size);
    }
    CheckPermission(info, access);
    return state;
}

ItemInfo FamImpl::Granted(Session &session, Fam_Descriptor *item, unsigned access, uint64_t offset,
                          uint64_t nbytes) {
    const ItemInfo &held = Access(session, item, access, offset, nbytes).item;
    ItemInfo fresh = session.metadata->GetItem(held.region_id, held.offset, session.caller);
    RequireSameItem(fresh, held);
    CheckPermission(fresh, access);
    return fresh;
}

bool FamImpl::Rebind(Session &session, DescriptorState &state, const Binding *used, ItemInfo *now) {
    ItemInfo held;
    {
        std::lock_guard<std::mutex> lock(resolve_mutex_);
        if (state.status != DESC_INIT_DONE || !used) return false;  // closed or deallocated
        held = state.item;
        if (state.binding().get() != used) {  // another thread bound it again already
            *now = std::move(held);
            return true;
        }
    }
    ItemInfo fresh = session.metadata->GetItem(held.region_id, held.offset, session.caller);
    RequireSameItem(fresh, held);
    std::lock_guard<std::mutex> lock(resolve_mutex_);
    if (state.status != DESC_INIT_DONE) return false;
    if (state.binding().get() == used) {
        if (SameKeys(fresh, state.item)) return false;
        state.Rebind(session.transport->Attach(fresh));
        state.item.access = fresh.access;
    }
    *now = std::move(fresh);
    return true;
}

template <typename Move>
void FamImpl::Transfer(Session &session, DescriptorState &state, unsigned access, bool repeatable,
                       const Move &move) {
    const std::shared_ptr<Binding> *binding = &state.binding();
    try {
        move(*binding);
        return;
    } catch (const Failure &failure) {
        if (failure.fam_error() != openfam::FAM_ERR_LIBFABRIC) throw;
        ItemInfo now;
        bool rebound = false;
        try {
            rebound = Rebind(session, state, binding->get(), &now);
        } catch (const Failure &answer) {
            // The item is gone, or no longer this caller's to use: say that. When the
            // metadata service cannot be asked, the transfer's own failure stands.
            if (answer.fam_error() == openfam::FAM_ERR_NOPERM ||
                answer.fam_error() == openfam::FAM_ERR_NOTFOUND) {
                throw;
            }
            throw failure;
        }
        if (!rebound || !repeatable) throw;
        CheckPermission(now, access);
        binding = &state.binding();
        if (!*binding) throw;  // closed meanwhile by another thread
    }
    move(*binding);
}

void FamImpl::Get(void *local, Fam_Descriptor *item, uint64_t offset, uint64_t nbytes,
                  bool blocking) {
    Session &session = Live();
    DescriptorState &state = Access(session, item, kRead, offset, nbytes);
    if (nbytes == 0) return;
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "local buffer is NULL for {} bytes", nbytes);
    if (!blocking) return channel_->Read(state.binding(), offset, local, nbytes, false);
    Transfer(session, state, kRead, /*repeatable=*/true,
             [&](const std::shared_ptr<Binding> &binding) {
                 channel_->Read(binding, offset, local, nbytes, true);
             });
}

void FamImpl::Put(void *local, Fam_Descriptor *item, uint64_t offset, uint64_t nbytes,
                  bool blocking) {
    Session &session = Live();
    DescriptorState &state = Access(session, item, kWrite, offset, nbytes);
    if (nbytes == 0) return;
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "local buffer is NULL for {} bytes", nbytes);
    // On a cluster, a plain region's item: FabricChannel::Write (transport/fabric/
    // fabric_channel.cc) posts fi_writemsg per server piece; a RAID item: RedundantChannel
    // (transport/redundant/redundant_channel.cc); embedded: ShmChannel, a memcpy.
    if (!blocking) return channel_->Write(state.binding(), offset, local, nbytes, false);
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

void FamImpl::Elements(void *local, Fam_Descriptor *item, uint64_t count, uint64_t element_size,
                       ElementPlan plan, bool to_fam, bool blocking) {
    Session &session = Live();
    DescriptorState &state = Access(session, item, 0, 0, 0);
    const ItemInfo &info = state.item;
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
    if (!blocking) {
        return channel_->Elements(state.binding(), std::move(plan), static_cast<char *>(local),
                                  count, element_size, to_fam, false);
    }
    Transfer(session, state, access, /*repeatable=*/true,
             [&](const std::shared_ptr<Binding> &binding) {
                 channel_->Elements(binding, plan, static_cast<char *>(local), count, element_size,
                                    to_fam, true);
             });
}

void FamImpl::RefreshQueued(Session &session, DescriptorState &state) {
    const std::shared_ptr<Binding> &binding = state.binding();
    if (!binding || !binding->valid()) {
        Fail(openfam::FAM_ERR_INVALID, "the region of {} was destroyed", Describe(state.item));
    }
    // The queue was filled over time: the item and the caller's rights are checked as they are
    // now (as for copy), and the memory servers get the keys granted now.
    ItemInfo fresh =
        session.metadata->GetItem(state.item.region_id, state.item.offset, session.caller);
    RequireSameItem(fresh, state.item);
    if (!SameKeys(fresh, state.item)) state.set_binding(session.transport->Attach(fresh));
    state.item = std::move(fresh);
}

void FamImpl::ApplyElements(Session &session, DescriptorState &state, ElementOp op, unsigned access,
                            const uint64_t *index, uint64_t count, uint64_t element_size,
                            char *data) {
    CheckPermission(state.item, access);
    Transfer(session, state, access, op != ElementOp::kAdd,
             [&](const std::shared_ptr<Binding> &binding) {
                 channel_->ApplyElements(binding, op, index, count, element_size, data);
             });
}

void FamImpl::Gather(void *local, Fam_Descriptor *item, uint64_t count, uint64_t first,
                     uint64_t stride, uint64_t element_size, bool blocking) {
    Elements(local, item, count, element_size, Strided(first, stride), false, blocking);
}

void FamImpl::Gather(void *local, Fam_Descriptor *item, uint64_t count, const uint64_t *index,
                     uint64_t element_size, bool blocking) {
    Elements(local, item, count, element_size, Indexed(index, count), false, blocking);
}

void FamImpl::Scatter(void *local, Fam_Descriptor *item, uint64_t count, uint64_t first,
                      uint64_t stride, uint64_t element_size, bool blocking) {
    Elements(local, item, count, element_size, Strided(first, stride), true, blocking);
}

void FamImpl::Scatter(void *local, Fam_Descriptor *item, uint64_t count, const uint64_t *index,
                      uint64_t element_size, bool blocking) {
    Elements(local, item, count, element_size, Indexed(index, count), true, blocking);
}

void *FamImpl::Map(Fam_Descriptor *item) {
    Session &session = Control();
    DescriptorState &state = Access(session, item, kRead, 0, 0);
    return session.transport->Map(*state.binding(), state.item.can_write);
}

void FamImpl::Unmap(void *local, Fam_Descriptor *item) {
    Session &session = Control();
    Resolve(session, item);
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "address to unmap is NULL");
    session.transport->Unmap(local);
}

void FamImpl::AtomicBytes(AtomicOp op, bool fetching, DataType type, size_t size,
                          Fam_Descriptor *item, uint64_t offset, const void *operand,
                          const void *compare, void *result) {
    Session &session = Live();
    unsigned access = op == AtomicOp::kFetch ? kRead : fetching ? kRead | kWrite : kWrite;
    DescriptorState &state = Access(session, item, access, offset, size);
    if (offset % size != 0) {
        Fail(openfam::FAM_ERR_INVALID,
             "offset {} of {} is not aligned to the {}-byte operand of the atomic", offset,
             Describe(state.item), size);
    }
    // Done twice, these leave what once does (a fetch, or a non-fetching set, min, max, and,
    // or); the others are not made again after a failure, whatever the keys.
    bool repeatable =
        op == AtomicOp::kFetch ||
        (!fetching && (op == AtomicOp::kSet || op == AtomicOp::kMin || op == AtomicOp::kMax ||
                       op == AtomicOp::kAnd || op == AtomicOp::kOr));
    Transfer(session, state, access, repeatable, [&](const std::shared_ptr<Binding> &binding) {
        channel_->Atomic(*binding, offset, op, type, operand, compare, fetching ? result : nullptr);
    });
}

}  // namespace fampool
