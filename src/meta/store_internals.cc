#include "meta/store_internals.h"

#include <algorithm>
#include <bit>
#include <fstream>

#include "common/error.h"
#include "meta/extent_allocator.h"
#include "meta/records.h"

namespace fampool::store {

std::string Key(uint64_t a) {
    std::string key;
    AppendU64(key, a);
    return key;
}

std::string Key(uint64_t a, uint64_t b) {
    std::string key = Key(a);
    AppendU64(key, b);
    return key;
}

std::string NameKey(uint64_t region_id, const std::string &name) { return Key(region_id) + name; }

std::string BootId() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
}

void CheckName(const char *what, const std::string &name) {
    if (name.empty()) Fail(openfam::FAM_ERR_INVALID, "{} name is empty", what);
    if (name.size() > kMaxNameLength) {
        Fail(openfam::FAM_ERR_NAME_TOO_LONG, "{} name of {} bytes exceeds the limit of {}", what,
             name.size(), kMaxNameLength);
    }
}

uint32_t CheckedMode(uint32_t perm, const char *what, const std::string &name) {
    if (perm & ~uint32_t{07777}) {
        Fail(openfam::FAM_ERR_INVALID, "mode {:o} of {} \"{}\" has bits outside 07777", perm, what,
             name);
    }
    return perm;
}

bool StartsWith(std::string_view key, std::string_view prefix) {
    return key.substr(0, prefix.size()) == prefix;
}

void DeletePrefix(Txn &txn, Table table, const std::string &prefix) {
    Cursor cursor(txn, table);
    while (cursor.Seek(prefix) && StartsWith(cursor.key(), prefix)) cursor.Delete();
}

RegionInfo ReadRegion(const Txn &txn, uint64_t region_id) {
    std::string_view bytes;
    if (!txn.Get(Table::kRegions, Key(region_id), &bytes)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "region {} not found (destroyed?)", region_id);
    }
    return DecodeRegion(region_id, bytes);
}

ItemInfo ReadItem(const Txn &txn, const RegionInfo &region, uint64_t offset) {
    std::string_view bytes;
    if (!txn.Get(Table::kItems, Key(region.id, offset), &bytes)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "no item at offset {} of region \"{}\" (deallocated?)",
             offset, region.name);
    }
    ItemInfo item = DecodeItem(region.id, offset, bytes);
    item.region = region;
    return item;
}

ExtentRef ExtentOf(const RegionInfo &region) {
    return ExtentRef{region.id, region.attributes.memoryType == PERSISTENT};
}

std::vector<PlacedExtent> ExtentsOf(const RegionInfo &region) {
    std::vector<PlacedExtent> extents;
    size_t members = MemberCount(region), k = region.memory_servers.size();
    if (members == 0) {
        for (size_t i = 0; i < k; ++i) {
            extents.push_back({region.memory_servers[i], ExtentOf(region), i, i});
        }
        return extents;
    }
    for (size_t m = 0; m < members; ++m) {
        ExtentRef extent = ExtentOf(region);
        extent.copy = region.attributes.redundancyLevel == RAID1 && m >= k;
        extents.push_back({MemberServer(region, m), extent, m % k, m});
    }
    return extents;
}

uint64_t AllocatorOf(uint64_t region_id, uint64_t index) { return region_id * 256 + index; }

uint64_t RoundUp(uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; }

uint64_t OpenFamHeapSize(uint64_t size, uint64_t servers) {
    uint64_t share = ExtentAllocator::Rounded((size + servers - 1) / servers);
    return std::bit_ceil(std::max<uint64_t>(kMinimumHeap, share));
}

Layout LayoutOf(const RegionInfo &region, uint64_t size) {
    Layout layout;
    layout.servers = std::max<uint64_t>(1, DataColumns(region));
    uint64_t heap = OpenFamHeapSize(size, layout.servers);
    if (region.interleave_size && layout.servers > 1) {
        layout.interleave = region.interleave_size;
        layout.share = RoundUp(size, layout.unit()) / layout.servers;
        layout.extent_size = std::max(RoundUp(heap, layout.interleave), layout.share);
    } else {
        layout.share = ExtentAllocator::Rounded((size + layout.servers - 1) / layout.servers);
        layout.extent_size = std::max(heap, ExtentAllocator::Rounded(size));
    }
    return layout;
}

Layout LayoutOf(const RegionInfo &region) { return LayoutOf(region, region.size); }

std::pair<uint64_t, uint64_t> PhysicalRange(const Layout &layout, uint64_t offset, uint64_t size,
                                            uint64_t index) {
    if (!layout.interleaved()) {
        if (ServerIndexOf(offset) != index) return {0, 0};
        return {PhysicalOf(offset), PhysicalOf(offset) + ExtentAllocator::Rounded(size)};
    }
    uint64_t span = RoundUp(size, layout.unit());
    return {offset / layout.unit() * layout.interleave,
            (offset + span) / layout.unit() * layout.interleave};
}

void Govern(ItemInfo &item, const Caller &caller) {
    const bool region_level = item.region.attributes.permissionLevel != DATAITEM;
    uint32_t mode = region_level ? item.region.perm : item.perm;
    uint32_t owner = region_level ? item.region.uid : item.uid;
    uint32_t group = region_level ? item.region.gid : item.gid;
    item.can_read = Allowed(mode, owner, group, caller, kRead);
    item.can_write = Allowed(mode, owner, group, caller, kWrite);
}

void RequireAnyAccess(const RegionInfo &region, const Caller &caller) {
    if (caller.uid == region.uid) return;
    if (!Allowed(region.perm, region.uid, region.gid, caller, kRead) &&
        !Allowed(region.perm, region.uid, region.gid, caller, kWrite)) {
        Fail(openfam::FAM_ERR_NOPERM, "no read or write permission on region \"{}\" (mode {:o})",
             region.name, region.perm);
    }
}

bool Owns(const ItemInfo &item, const Caller &caller) {
    return caller.uid == item.uid || caller.uid == item.region.uid;
}

void RequireOwner(const RegionInfo &region, const Caller &caller, const char *action) {
    if (caller.uid != region.uid) {
        Fail(openfam::FAM_ERR_NOPERM, "only the owner (uid {}) of region \"{}\" may {} it",
             region.uid, region.name, action);
    }
}

void RemoveRegionRecords(Txn &txn, const RegionInfo &region) {
    DeletePrefix(txn, Table::kItems, Key(region.id));
    DeletePrefix(txn, Table::kItemNames, Key(region.id));
    DeletePrefix(txn, Table::kScrub, Key(region.id));
    for (uint64_t index = 0; index < region.memory_servers.size(); ++index) {
        ExtentAllocator::DropExtent(txn, AllocatorOf(region.id, index));
    }
    ExtentAllocator::DropExtent(txn, AllocatorOf(region.id, kVirtualExtent));
    txn.Del(Table::kRegions, Key(region.id));
    txn.Del(Table::kRegionNames, region.name);
}

}  // namespace fampool::store
