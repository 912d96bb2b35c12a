#include "meta/metadata_store.h"

#include <fstream>
#include <random>

#include "common/error.h"
#include "memserver/extent_allocator.h"
#include "meta/records.h"

namespace fampool {
namespace {

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

bool StartsWith(std::string_view key, std::string_view prefix) {
    return key.substr(0, prefix.size()) == prefix;
}

// Deletes every key of `table` that starts with `prefix`.
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

ExtentRef ExtentOf(const RegionInfo &region) {
    return ExtentRef{region.id, region.attributes.memoryType == PERSISTENT};
}

// The permission bits that govern an item: the region's in a REGION-level region.
void Govern(ItemInfo &item, const Caller &caller) {
    const bool region_level = item.region.attributes.permissionLevel != DATAITEM;
    uint32_t mode = region_level ? item.region.perm : item.perm;
    uint32_t owner = region_level ? item.region.uid : item.uid;
    uint32_t group = region_level ? item.region.gid : item.gid;
    item.can_read = Allowed(mode, owner, group, caller, kRead);
    item.can_write = Allowed(mode, owner, group, caller, kWrite);
}

void RequireAnyAccess(const RegionInfo &region, const Caller &caller) {
    if (!Allowed(region.perm, region.uid, region.gid, caller, kRead) &&
        !Allowed(region.perm, region.uid, region.gid, caller, kWrite)) {
        Fail(openfam::FAM_ERR_NOPERM, "no read or write permission on region \"{}\" (mode {:o})",
             region.name, region.perm);
    }
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
    ExtentAllocator::DropExtent(txn, region.id);
    txn.Del(Table::kRegions, Key(region.id));
    txn.Del(Table::kRegionNames, region.name);
}

}  // namespace

std::string MetadataStore::Prepare(LmdbEnv &env) {
    Txn txn(env, /*write=*/true);
    std::string_view value;
    std::string instance;
    if (txn.Get(Table::kMeta, "instance", &value)) {
        instance = std::string(value);
    } else {
        std::random_device random;
        uint64_t id = (static_cast<uint64_t>(random()) << 32) ^ random();
        instance = fmt::format("fampool-{:016x}", id);
        txn.Put(Table::kMeta, "instance", instance);
        txn.Put(Table::kMeta, "next_region", Key(1));
    }
    std::string boot = BootId();
    if (!txn.Get(Table::kMeta, "boot_id", &value) || value != boot) {
        // Volatile heaps did not survive the reboot: release their regions and names.
        std::vector<RegionInfo> gone;
        Cursor cursor(txn, Table::kRegions);
        for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
            RegionInfo region = DecodeRegion(ReadU64(cursor.key()), cursor.value());
            if (region.attributes.memoryType != PERSISTENT) gone.push_back(region);
        }
        for (const RegionInfo &region : gone) RemoveRegionRecords(txn, region);
        txn.Put(Table::kMeta, "boot_id", boot);
    }
    txn.Commit();
    return instance;
}

MetadataStore::MetadataStore(std::shared_ptr<LmdbEnv> env, MemoryServer *memory_server,
                             uint64_t interleave_size)
    : env_(std::move(env)), memory_server_(memory_server), interleave_size_(interleave_size) {}

RegionInfo MetadataStore::CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                                       const Fam_Region_Attributes &attributes,
                                       const Caller &caller) {
    CheckName("region", name);
    if (size == 0) Fail(openfam::FAM_ERR_INVALID, "region \"{}\" of size 0", name);
    RegionInfo region;
    region.name = name;
    region.size = size;
    region.perm = perm & 0777;
    region.uid = caller.uid;
    region.gid = caller.gid;
    region.attributes = attributes;
    if (region.attributes.memoryType == MEMORY_TYPE_DEFAULT) region.attributes.memoryType = VOLATILE;
    if (region.attributes.permissionLevel == PERMISSION_LEVEL_DEFAULT) {
        region.attributes.permissionLevel = REGION;
    }
    if (region.attributes.redundancyLevel == REDUNDANCY_LEVEL_DEFAULT) {
        region.attributes.redundancyLevel = NONE;
    }
    if (region.attributes.interleaveEnable == INTERLEAVE_DEFAULT) {
        region.attributes.interleaveEnable = interleave_size_ ? ENABLE : DISABLE;
    }
    region.interleave_size = region.attributes.interleaveEnable == ENABLE ? interleave_size_ : 0;
    region.memory_servers = {memory_server_->id()};
    uint64_t extent_size = ExtentAllocator::Rounded(size);
    if (extent_size < size) Fail(openfam::FAM_ERR_NO_SPACE, "region \"{}\" of {} bytes", name, size);

    Txn txn(*env_, /*write=*/true);
    if (txn.Get(Table::kRegionNames, name, nullptr)) {
        Fail(openfam::FAM_ERR_ALREADYEXIST, "region \"{}\" already exists", name);
    }
    std::string_view next;
    txn.Get(Table::kMeta, "next_region", &next);
    region.id = ReadU64(next);
    txn.Put(Table::kMeta, "next_region", Key(region.id + 1));

    ExtentRef extent = ExtentOf(region);
    memory_server_->CreateExtent(extent, extent_size);
    try {
        txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
        txn.Put(Table::kRegionNames, name, Key(region.id));
        ExtentAllocator::AddExtent(txn, region.id, extent_size);
        txn.Commit();
    } catch (...) {
        memory_server_->DestroyExtent(extent);
        throw;
    }
    return region;
}

void MetadataStore::DestroyRegion(uint64_t region_id, const Caller &caller) {
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    RequireOwner(region, caller, "destroy");
    RemoveRegionRecords(txn, region);
    txn.Commit();
    memory_server_->DestroyExtent(ExtentOf(region));
}

RegionInfo MetadataStore::ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) {
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    if (size == 0) Fail(openfam::FAM_ERR_INVALID, "region \"{}\" to size 0", region.name);
    RequireOwner(region, caller, "resize");
    uint64_t old_extent = ExtentAllocator::Rounded(region.size);
    uint64_t new_extent = ExtentAllocator::Rounded(size);
    if (new_extent > old_extent) {
        memory_server_->ResizeExtent(ExtentOf(region), old_extent, new_extent);
        ExtentAllocator::Grow(txn, region.id, old_extent, new_extent);
    } else if (!ExtentAllocator::Shrink(txn, region.id, old_extent, new_extent)) {
        Fail(openfam::FAM_ERR_INVALID,
             "region \"{}\" cannot shrink to {} bytes: items are allocated past that size",
             region.name, size);
    }
    region.size = size;
    txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
    txn.Commit();
    if (new_extent < old_extent) {
        memory_server_->ResizeExtent(ExtentOf(region), old_extent, new_extent);
    }
    return region;
}

RegionInfo MetadataStore::LookupRegion(const std::string &name, const Caller &caller) {
    CheckName("region", name);
    Txn txn(*env_, /*write=*/false);
    std::string_view id;
    if (!txn.Get(Table::kRegionNames, name, &id)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "region \"{}\" not found", name);
    }
    RegionInfo region = ReadRegion(txn, ReadU64(id));
    RequireAnyAccess(region, caller);
    return region;
}

RegionInfo MetadataStore::GetRegion(uint64_t region_id, const Caller &caller) {
    Txn txn(*env_, /*write=*/false);
    RegionInfo region = ReadRegion(txn, region_id);
    RequireAnyAccess(region, caller);
    return region;
}

void MetadataStore::ChangeRegionPermissions(uint64_t region_id, uint32_t perm,
                                            const Caller &caller) {
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    RequireOwner(region, caller, "change the permissions of");
    region.perm = perm & 0777;
    txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
    txn.Commit();
}

ItemInfo MetadataStore::AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
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
    try {
        item.offset = ExtentAllocator::Allocate(txn, region_id, size);
    } catch (const Failure &failure) {
        if (failure.fam_error() != openfam::FAM_ERR_NO_SPACE) throw;
        Fail(openfam::FAM_ERR_NO_SPACE, "region \"{}\" (size {}) has no free range of {} bytes",
             region.name, region.size, size);
    }
    item.size = size;
    item.name = name;
    item.perm = perm & 0777;
    item.uid = caller.uid;
    item.gid = caller.gid;
    memory_server_->Zero(ExtentOf(region), item.offset, ExtentAllocator::Rounded(size));
    txn.Put(Table::kItems, Key(region_id, item.offset), EncodeItem(item));
    if (!name.empty()) txn.Put(Table::kItemNames, NameKey(region_id, name), Key(item.offset));
    txn.Commit();
    Govern(item, caller);
    return item;
}

void MetadataStore::DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    std::string_view bytes;
    if (!txn.Get(Table::kItems, Key(region_id, offset), &bytes)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "no item at offset {} of region \"{}\" (deallocated?)",
             offset, region.name);
    }
    ItemInfo item = DecodeItem(region_id, offset, bytes);
    if (!Allowed(region.perm, region.uid, region.gid, caller, kWrite)) {
        Fail(openfam::FAM_ERR_NOPERM, "no write permission on region \"{}\" (mode {:o})",
             region.name, region.perm);
    }
    if (caller.uid != item.uid && caller.uid != region.uid) {
        Fail(openfam::FAM_ERR_NOPERM, "item \"{}\" is owned by uid {}", item.name, item.uid);
    }
    txn.Del(Table::kItems, Key(region_id, offset));
    if (!item.name.empty()) txn.Del(Table::kItemNames, NameKey(region_id, item.name));
    ExtentAllocator::Free(txn, region_id, offset, item.size);
    txn.Commit();
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
    if (!item.can_read && !item.can_write) {
        Fail(openfam::FAM_ERR_NOPERM, "no read or write permission on item \"{}\" of region \"{}\"",
             item_name, region_name);
    }
    return item;
}

ItemInfo MetadataStore::GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    Txn txn(*env_, /*write=*/false);
    RegionInfo region = ReadRegion(txn, region_id);
    std::string_view bytes;
    if (!txn.Get(Table::kItems, Key(region_id, offset), &bytes)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "no item at offset {} of region \"{}\"", offset,
             region.name);
    }
    ItemInfo item = DecodeItem(region_id, offset, bytes);
    item.region = region;
    Govern(item, caller);
    if (!item.can_read && !item.can_write) {
        Fail(openfam::FAM_ERR_NOPERM, "no read or write permission on item at offset {} of \"{}\"",
             offset, region.name);
    }
    return item;
}

void MetadataStore::ChangeItemPermissions(uint64_t region_id, uint64_t offset, uint32_t perm,
                                          const Caller &caller) {
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    std::string_view bytes;
    if (!txn.Get(Table::kItems, Key(region_id, offset), &bytes)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "no item at offset {} of region \"{}\"", offset,
             region.name);
    }
    ItemInfo item = DecodeItem(region_id, offset, bytes);
    if (region.attributes.permissionLevel != DATAITEM) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "item \"{}\" is in region \"{}\" whose permission level is REGION; change the "
             "region's permissions instead",
             item.name, region.name);
    }
    if (caller.uid != item.uid) {
        Fail(openfam::FAM_ERR_NOPERM, "only the owner (uid {}) of item \"{}\" may change its "
             "permissions", item.uid, item.name);
    }
    item.perm = perm & 0777;
    txn.Put(Table::kItems, Key(region_id, offset), EncodeItem(item));
    txn.Commit();
}

void MetadataStore::Sync() { env_->Sync(); }

}  // namespace fampool
