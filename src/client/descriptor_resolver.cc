// DescriptorResolver (descriptor_resolver.h): from a descriptor to the item behind it, checked.
#include "client/descriptor_resolver.h"

#include <utility>

#include "common/error.h"

namespace fampool {
namespace {

const char *AccessName(unsigned access) {
    return access == kRead ? "read" : access == kWrite ? "write" : "read and write";
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

// Whether `a` and `b` record a region alike in what can change after it is made: its size,
// mode, servers and the state of its members.
bool SameRegionRecord(const RegionInfo &a, const RegionInfo &b) {
    return a.size == b.size && a.perm == b.perm && a.memory_servers == b.memory_servers &&
           a.copy_servers == b.copy_servers && a.member_state == b.member_state;
}

}  // namespace

void CheckPermission(const ItemInfo &info, unsigned access) {
    if (((access & kRead) && !info.can_read) || ((access & kWrite) && !info.can_write)) {
        Fail(openfam::FAM_ERR_NOPERM, "no {} permission on {}", AccessName(access), Describe(info));
    }
}

void RequireSameItem(const ItemInfo &fresh, const ItemInfo &held) {
    if (fresh.name != held.name || fresh.size != held.size || fresh.uid != held.uid ||
        fresh.gid != held.gid) {
        Fail(openfam::FAM_ERR_NOTFOUND, "{} was deallocated: another item lies at its offset",
             Describe(held));
    }
}

DescriptorState &DescriptorResolver::Resolve(Session &session, Fam_Descriptor *item) {
    if (!item) Fail(openfam::FAM_ERR_NULLPTR, "descriptor is NULL");
    DescriptorState &state = *item->state();
    if (state.status == DESC_INIT_DONE) return state;
    std::lock_guard<std::mutex> lock(mutex_);
    if (state.status == DESC_INVALID) {
        if (state.closed) {
            Fail(openfam::FAM_ERR_INVALID,
                 "descriptor of {} was closed (fam_close); look the item up again to use it",
                 Describe(state.item()));
        }
        Fail(openfam::FAM_ERR_INVALID, "descriptor refers to an item that was deallocated");
    }
    if (state.status != DESC_INIT_DONE) {
        // Built from a Fam_Global_Descriptor: fetch what it lacks from the metadata service.
        ItemInfo info =
            session.metadata->GetItem(state.global.regionId, state.global.offset, session.caller);
        state.set_binding(session.transport->Attach(info));
        state.set_item(std::move(info));
        state.size_known = true;
        state.status = DESC_INIT_DONE;
    }
    return state;
}

RegionDescriptorState &DescriptorResolver::ResolveRegion(Session &session,
                                                         Fam_Region_Descriptor *region) {
    if (!region) Fail(openfam::FAM_ERR_NULLPTR, "region descriptor is NULL");
    RegionDescriptorState &state = *region->state();
    if (state.status == DESC_INIT_DONE) return state;
    std::lock_guard<std::mutex> lock(mutex_);
    if (state.status == DESC_INVALID) {
        Fail(openfam::FAM_ERR_INVALID, "region descriptor refers to a destroyed region");
    }
    if (state.status != DESC_INIT_DONE) {
        state.region = session.metadata->GetRegion(state.global.regionId, session.caller);
        state.size_known = true;
        state.status = DESC_INIT_DONE;
    }
    return state;
}

DescriptorState &DescriptorResolver::Access(Session &session, Fam_Descriptor *item, unsigned access,
                                            uint64_t offset, uint64_t nbytes) {
    DescriptorState &state = Resolve(session, item);
    const ItemInfo &info = state.item();
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

ItemInfo DescriptorResolver::Granted(Session &session, Fam_Descriptor *item, unsigned access,
                                     uint64_t offset, uint64_t nbytes) {
    const ItemInfo &held = Access(session, item, access, offset, nbytes).item();
    ItemInfo fresh = session.metadata->GetItem(held.region_id, held.offset, session.caller);
    RequireSameItem(fresh, held);
    CheckPermission(fresh, access);
    return fresh;
}

bool DescriptorResolver::Rebind(Session &session, DescriptorState &state, const Binding *used,
                                ItemInfo *now) {
    ItemInfo held;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (state.status != DESC_INIT_DONE || !used) return false;  // closed or deallocated
        held = state.item();
        if (state.binding().get() != used) {  // another thread bound it again already
            *now = std::move(held);
            return true;
        }
    }
    ItemInfo fresh = session.metadata->GetItem(held.region_id, held.offset, session.caller);
    RequireSameItem(fresh, held);
    std::lock_guard<std::mutex> lock(mutex_);
    if (state.status != DESC_INIT_DONE) return false;
    if (state.binding().get() == used) {
        if (SameKeys(fresh, state.item())) return false;
        state.Rebind(session.transport->Attach(fresh));
        ItemInfo now = state.item();
        now.access = fresh.access;
        state.PublishItem(std::move(now));
    }
    *now = std::move(fresh);
    return true;
}

void DescriptorResolver::RefreshQueued(Session &session, DescriptorState &state) {
    const std::shared_ptr<Binding> &binding = state.binding();
    if (!binding || !binding->valid()) {
        Fail(openfam::FAM_ERR_INVALID, "the region of {} was destroyed", Describe(state.item()));
    }
    // The queue was filled over time: the item and the caller's rights are checked as they are
    // now (as for copy), and the memory servers get the keys granted now. The queue's copy is
    // its shipper's alone: the record is replaced, not published.
    const ItemInfo &held = state.item();
    ItemInfo fresh = session.metadata->GetItem(held.region_id, held.offset, session.caller);
    RequireSameItem(fresh, held);
    if (!SameKeys(fresh, held)) state.set_binding(session.transport->Attach(fresh));
    state.set_item(std::move(fresh));
}

void DescriptorResolver::Close(DescriptorState &state) {
    std::lock_guard<std::mutex> lock(mutex_);
    state.set_binding(nullptr);
    state.status = DESC_INVALID;
    state.closed = true;
}

void DescriptorResolver::Restat(DescriptorState &state, const ItemInfo &fresh) {
    std::lock_guard<std::mutex> lock(mutex_);
    const ItemInfo &held = state.item();
    if (fresh.perm == held.perm && SameRegionRecord(fresh.region, held.region)) return;
    ItemInfo now = held;
    now.perm = fresh.perm;
    now.region = fresh.region;
    state.PublishItem(std::move(now));
}

void DescriptorResolver::Replace(Session &session, DescriptorState &state, ItemInfo fresh) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state.status != DESC_INIT_DONE) return;  // closed meanwhile by another thread
    if (fresh.can_read || fresh.can_write) state.Rebind(session.transport->Attach(fresh));
    state.PublishItem(std::move(fresh));
}

}  // namespace fampool
