// MetadataStore: items: allocation, deallocation, lookups, permission changes, listing.
#include "common/error.h"
#include "meta/extent_allocator.h"
#include "meta/metadata_store.h"
#include "meta/records.h"
#include "meta/store_internals.h"

namespace fampool {

using namespace store;

ItemInfo MetadataStore::AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
                                     uint32_t perm, const Caller &caller) {
    try {
        return AllocateOnce(region_id, name, size, perm, caller);
    } catch (const Failure &failure) {
        // Space waiting to be zeroed is as good as free: zero it now (or wait for the
        // scrubber, which may hold it) and try again.
        if (failure.fam_error() != openfam::FAM_ERR_NO_SPACE || !scrub_.background()) throw;
        scrub_.Scrub(region_id, nullptr);
    }
    return AllocateOnce(region_id, name, size, perm, caller);
}

ItemInfo MetadataStore::AllocateOnce(uint64_t region_id, const std::string &name, uint64_t size,
                                     uint32_t perm, const Caller &caller) {
    if (!name.empty()) CheckName("item", name);
    Txn txn(*env_, /*write=*/true);
    ItemInfo item;
    item.region_id = region_id;
    item.region = ReadRegion(txn, region_id);
    const RegionInfo &region = item.region;
    if (size == 0) Fail(openfam::FAM_ERR_INVALID, "item of size 0 in region \"{}\"", region.name);
    if (!Allowed(region.perm, region.uid, region.gid, caller, kWrite)) {
        Fail(openfam::FAM_ERR_NOPERM, "no write permission on region \"{}\" (mode {:o})",
             region.name, region.perm);
    }
    if (!name.empty() && txn.Get(Table::kItemNames, NameKey(region_id, name), nullptr)) {
        Fail(openfam::FAM_ERR_ALREADYEXIST, "item \"{}\" already exists in region \"{}\"", name,
             region.name);
    }
    Layout layout = LayoutOf(region);
    bool placed = false;
    // With a capacity on any of its servers, an item that takes a server past the region's
    // share there counts (metadata_capacity.cc): then, what each server holds (read once, only
    // then: it reads every region) and the first reason a server was passed over.
    const bool limited = CapacityLimited(region);
    std::vector<uint64_t> usage;
    std::string over;
    auto fits = [&](uint64_t index, uint64_t nbytes) {
        if (!limited) return true;
        std::vector<uint64_t> more(layout.servers, 0);
        bool any = false;
        for (uint64_t i = 0; i < layout.servers; ++i) {
            if (layout.interleaved() || i == index) {
                more[i] = ExtraHeld(txn, region, layout, i, nbytes);
                any = any || more[i] != 0;
            }
        }
        if (!any) return true;
        if (usage.empty()) usage = ServerUsage(txn);
        std::string why = OverCapacity(usage, region, more);
        if (over.empty()) over = why;
        return why.empty();
    };
    if (layout.interleaved()) {
        uint64_t span = RoundUp(size, layout.unit());
        try {
            if (fits(0, span / layout.servers)) {
                item.offset =
                    ExtentAllocator::Allocate(txn, AllocatorOf(region_id, kVirtualExtent), span);
                placed = true;
            }
        } catch (const Failure &failure) {
            if (failure.fam_error() != openfam::FAM_ERR_NO_SPACE) throw;
        }
    } else {
        // Named items go to the server their name hashes to, unnamed ones round-robin; a full
        // server passes the item to the next.
        uint64_t start = name.empty() ? round_robin_++ : Fnv1a(name);
        for (uint64_t t = 0; t < layout.servers && !placed; ++t) {
            uint64_t index = (start + t) % layout.servers;
            if (!fits(index, ExtentAllocator::Rounded(size))) continue;
            try {
                uint64_t physical =
                    ExtentAllocator::Allocate(txn, AllocatorOf(region_id, index), size);
                item.offset = (index << kServerIndexShift) | physical;
                placed = true;
            } catch (const Failure &failure) {
                if (failure.fam_error() != openfam::FAM_ERR_NO_SPACE) throw;
            }
        }
    }
    if (!placed && !over.empty()) {
        Fail(openfam::FAM_ERR_NO_SPACE, "item of {} bytes in region \"{}\": {}", size, region.name,
             over);
    }
    if (!placed) {
        Fail(openfam::FAM_ERR_NO_SPACE, "region \"{}\" (size {}) has no free range of {} bytes",
             region.name, region.size, size);
    }
    item.size = size;
    item.name = name;
    item.perm = CheckedMode(perm, "item", name);
    item.uid = caller.uid;
    item.gid = caller.gid;
    // Free space reads as zeros already (see the header): nothing to clear.
    txn.Put(Table::kItems, Key(region_id, item.offset), EncodeItem(item));
    if (!name.empty()) txn.Put(Table::kItemNames, NameKey(region_id, name), Key(item.offset));
    txn.Commit();
    return Finish(std::move(item), caller);
}

void MetadataStore::DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    ItemInfo item = ReadItem(txn, region, offset);
    if (!Allowed(region.perm, region.uid, region.gid, caller, kWrite)) {
        Fail(openfam::FAM_ERR_NOPERM, "no write permission on region \"{}\" (mode {:o})",
             region.name, region.perm);
    }
    if (caller.uid != item.uid && caller.uid != region.uid) {
        Fail(openfam::FAM_ERR_NOPERM, "item \"{}\" is owned by uid {}", item.name, item.uid);
    }
    txn.Del(Table::kItems, Key(region_id, offset));
    if (!item.name.empty()) txn.Del(Table::kItemNames, NameKey(region_id, item.name));
    scrub_.Release(txn, region, offset, item.size);
    txn.Commit();
    scrub_.Deallocated(region, offset, item.size);
}

ItemInfo MetadataStore::LookupItem(const std::string &item_name, const std::string &region_name,
                                   const Caller &caller) {
    CheckName("item", item_name);
    CheckName("region", region_name);
    Txn txn(*env_, /*write=*/false);
    std::string_view id, offset, bytes;
    if (!txn.Get(Table::kRegionNames, region_name, &id)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "region \"{}\" not found", region_name);
    }
    uint64_t region_id = ReadU64(id);
    if (!txn.Get(Table::kItemNames, NameKey(region_id, item_name), &offset)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "item \"{}\" not found in region \"{}\"", item_name,
             region_name);
    }
    txn.Get(Table::kItems, Key(region_id, ReadU64(offset)), &bytes);
    ItemInfo item = DecodeItem(region_id, ReadU64(offset), bytes);
    item.region = ReadRegion(txn, region_id);
    Govern(item, caller);
    if (!item.can_read && !item.can_write && !Owns(item, caller)) {
        Fail(openfam::FAM_ERR_NOPERM, "no read or write permission on item \"{}\" of region \"{}\"",
             item_name, region_name);
    }
    txn.Abort();
    return Finish(std::move(item), caller);
}

ItemInfo MetadataStore::GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    Txn txn(*env_, /*write=*/false);
    RegionInfo region = ReadRegion(txn, region_id);
    ItemInfo item = ReadItem(txn, region, offset);
    Govern(item, caller);
    if (!item.can_read && !item.can_write && !Owns(item, caller)) {
        Fail(openfam::FAM_ERR_NOPERM, "no read or write permission on item at offset {} of \"{}\"",
             offset, region.name);
    }
    txn.Abort();
    return Finish(std::move(item), caller);
}

void MetadataStore::ChangeItemPermissions(uint64_t region_id, uint64_t offset, uint32_t perm,
                                          const Caller &caller) {
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    ItemInfo item = ReadItem(txn, region, offset);
    if (region.attributes.permissionLevel != DATAITEM) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "item \"{}\" is in region \"{}\" whose permission level is REGION; change the "
             "region's permissions instead",
             item.name, region.name);
    }
    if (caller.uid != item.uid) {
        Fail(openfam::FAM_ERR_NOPERM,
             "only the owner (uid {}) of item \"{}\" may change its "
             "permissions",
             item.uid, item.name);
    }
    item.perm = CheckedMode(perm, "item", item.name);
    txn.Put(Table::kItems, Key(region_id, offset), EncodeItem(item));
    txn.Commit();
    if (options_.grant_keys) grants_.Revoke(region, offset, item.size);
}

std::vector<ItemInfo> MetadataStore::ListItems(uint64_t region_id, const Caller &caller) {
    Txn txn(*env_, /*write=*/false);
    RegionInfo region = ReadRegion(txn, region_id);
    RequireAnyAccess(region, caller);
    std::vector<ItemInfo> list;
    Cursor cursor(txn, Table::kItems);
    for (bool ok = cursor.Seek(Key(region_id)); ok && ReadU64(cursor.key()) == region_id;
         ok = cursor.Next()) {
        ItemInfo item = DecodeItem(region_id, ReadU64(cursor.key(), 8), cursor.value());
        item.region = region;
        Govern(item, caller);
        list.push_back(std::move(item));
    }
    return list;
}

ItemInfo MetadataStore::Finish(ItemInfo item, const Caller &caller) {
    Govern(item, caller);
    if (options_.grant_keys && (item.can_read || item.can_write)) grants_.Hand(item);
    return item;
}

}  // namespace fampool
