#include "meta/metadata_store.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

#include "common/error.h"
#include "meta/extent_allocator.h"
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

// The permission bits of a region or item: any mode chmod(2) takes (0 to 07777; setuid,
// setgid and sticky are kept and shown, and grant nothing). Other bits are refused.
uint32_t CheckedMode(uint32_t perm, const char *what, const std::string &name) {
    if (perm & ~uint32_t{07777}) {
        Fail(openfam::FAM_ERR_INVALID, "mode {:o} of {} \"{}\" has bits outside 07777", perm,
             what, name);
    }
    return perm;
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

constexpr uint64_t kVirtualExtent = 255;  // allocator of an interleaved region's virtual space

uint64_t AllocatorOf(uint64_t region_id, uint64_t index) { return region_id * 256 + index; }

uint64_t RoundUp(uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; }

// How a region's bytes sit on its servers (see ServerIndexOf in metadata_service.h).
struct Layout {
    uint64_t servers = 1;       // K
    uint64_t interleave = 0;    // I; 0 when items are not striped
    uint64_t extent_size = 0;   // bytes of the region on each server
    bool interleaved() const { return interleave != 0; }
    uint64_t unit() const { return interleave * servers; }
};

Layout LayoutOf(const RegionInfo &region, uint64_t size) {
    Layout layout;
    layout.servers = std::max<uint64_t>(1, region.memory_servers.size());
    if (region.interleave_size && layout.servers > 1) {
        layout.interleave = region.interleave_size;
        layout.extent_size = RoundUp(size, layout.unit()) / layout.servers;
    } else {
        layout.extent_size = ExtentAllocator::Rounded((size + layout.servers - 1) / layout.servers);
    }
    return layout;
}

Layout LayoutOf(const RegionInfo &region) { return LayoutOf(region, region.size); }

// Where an item's bytes are on server `index`: [begin, end) of that server's extent.
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

uint64_t Fnv1a(const std::string &text) {
    uint64_t hash = 1469598103934665603ull;
    for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
    return hash;
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

// Looking a region up, or its record, needs read or write permission; its owner needs none (a
// file's owner may stat it and chmod it whatever its mode), so that a region of mode 0 can be
// found again and opened up.
void RequireAnyAccess(const RegionInfo &region, const Caller &caller) {
    if (caller.uid == region.uid) return;
    if (!Allowed(region.perm, region.uid, region.gid, caller, kRead) &&
        !Allowed(region.perm, region.uid, region.gid, caller, kWrite)) {
        Fail(openfam::FAM_ERR_NOPERM, "no read or write permission on region \"{}\" (mode {:o})",
             region.name, region.perm);
    }
}

// Whether `caller` owns the item or its region: its record is theirs to see whatever the mode
// (fam_lookup and fam_stat then work; reads and writes follow the bits).
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

MetadataStore::MetadataStore(std::shared_ptr<LmdbEnv> env, std::vector<MemoryServer *> servers,
                             PlacementOptions options)
    : env_(std::move(env)), servers_(std::move(servers)), options_(std::move(options)) {
    if (servers_.empty()) Fail(openfam::FAM_ERR_MEMSERV_LIST_EMPTY, "no memory servers configured");
    if (options_.scrub_in_background) scrubber_ = std::thread([this] { RunScrubber(); });
}

MetadataStore::~MetadataStore() {
    if (!scrubber_.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(scrubber_mutex_);
        stopping_.store(true);
    }
    scrubber_wake_.notify_all();
    scrubber_.join();
}

std::vector<uint64_t> MetadataStore::PlaceRegion(const std::string &name, uint64_t size,
                                                  bool interleaved, Fam_Memory_Type memory) {
    // The servers that hold this kind of memory.
    const char *kind = memory == PERSISTENT ? "persistent" : "volatile";
    std::vector<uint64_t> candidates;
    for (uint64_t id = 0; id < servers_.size(); ++id) {
        const std::string &type =
            id < options_.memory_types.size() ? options_.memory_types[id] : std::string();
        if (type.empty() || type == kind) candidates.push_back(id);
    }
    if (candidates.empty()) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "region \"{}\" is {}, and no memory server holds {} memory (memory_type of the "
             "cluster's memory servers)",
             name, kind, kind);
    }
    size_t count = candidates.size();
    size_t span = options_.region_span ? std::min(options_.region_span, count) : count;
    uint64_t span_size = options_.span_size.value_or(interleaved ? 0 : kDefaultSpanSize);
    if (span_size) {
        uint64_t wanted = size / span_size + (size % span_size ? 1 : 0);
        span = static_cast<size_t>(std::clamp<uint64_t>(wanted, 1, span));
    }
    std::vector<uint64_t> order(count);
    for (size_t i = 0; i < count; ++i) order[i] = candidates[(Fnv1a(name) + i) % count];
    if (options_.policy == "least-used") {
        std::vector<uint64_t> usage = ServerUsage();
        std::stable_sort(order.begin(), order.end(),
                         [&](uint64_t a, uint64_t b) { return usage[a] < usage[b]; });
    }
    order.resize(span);
    std::sort(order.begin(), order.end());
    return order;
}

RegionInfo MetadataStore::CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                                       const Fam_Region_Attributes &attributes,
                                       const Caller &caller) {
    CheckName("region", name);
    if (size == 0) Fail(openfam::FAM_ERR_INVALID, "region \"{}\" of size 0", name);
    RegionInfo region;
    region.name = name;
    region.size = size;
    region.perm = CheckedMode(perm, "region", name);
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
        region.attributes.interleaveEnable = options_.interleave_size ? ENABLE : DISABLE;
    }
    region.interleave_size =
        region.attributes.interleaveEnable == ENABLE ? options_.interleave_size : 0;
    region.memory_servers = PlaceRegion(name, size, region.interleave_size != 0,
                                        region.attributes.memoryType);
    if (size > (uint64_t{1} << kServerIndexShift) * region.memory_servers.size()) {
        Fail(openfam::FAM_ERR_NO_SPACE, "region \"{}\" of {} bytes exceeds 256 TiB per memory server",
             name, size);
    }
    Layout layout = LayoutOf(region);

    Txn txn(*env_, /*write=*/true);
    if (txn.Get(Table::kRegionNames, name, nullptr)) {
        Fail(openfam::FAM_ERR_ALREADYEXIST, "region \"{}\" already exists", name);
    }
    std::string_view next;
    txn.Get(Table::kMeta, "next_region", &next);
    region.id = ReadU64(next);
    txn.Put(Table::kMeta, "next_region", Key(region.id + 1));

    ExtentRef extent = ExtentOf(region);
    size_t created = 0;
    try {
        for (uint64_t server : region.memory_servers) {
            servers_[server]->CreateExtent(extent, layout.extent_size);
            ++created;
        }
        txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
        txn.Put(Table::kRegionNames, name, Key(region.id));
        if (layout.interleaved()) {
            ExtentAllocator::AddExtent(txn, AllocatorOf(region.id, kVirtualExtent),
                                       layout.extent_size * layout.servers);
        } else {
            for (uint64_t index = 0; index < layout.servers; ++index) {
                ExtentAllocator::AddExtent(txn, AllocatorOf(region.id, index), layout.extent_size);
            }
        }
        txn.Commit();
    } catch (...) {
        for (size_t i = 0; i < created; ++i) {
            try {
                servers_[region.memory_servers[i]]->DestroyExtent(extent);
            } catch (const Failure &) {
                // The server is gone; its heap goes with its next restart (volatile) or stays
                // as an orphan file (persistent), never referenced by metadata.
            }
        }
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
    ForgetGrants(region.id);
    for (uint64_t server : region.memory_servers) {
        try {
            servers_[server]->DestroyExtent(ExtentOf(region));
        } catch (const Failure &) {
            // The region is gone from the metadata; an unreachable server's heap is released
            // when it restarts (volatile) or stays as an unreferenced file (persistent).
        }
    }
}

RegionInfo MetadataStore::ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) {
    // Items waiting to be zeroed still hold their space: a shrink must not count them.
    std::string scrub_error;
    if (options_.scrub_in_background) Scrub(region_id, &scrub_error);
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    if (size == 0) Fail(openfam::FAM_ERR_INVALID, "region \"{}\" to size 0", region.name);
    RequireOwner(region, caller, "resize");
    Layout before = LayoutOf(region), after = LayoutOf(region, size);
    uint64_t old_extent = before.extent_size, new_extent = after.extent_size;
    // An interleaved region's allocator spans its virtual space; the others, one per server.
    std::vector<std::pair<uint64_t, uint64_t>> allocators;  // (allocator, multiplier)
    if (before.interleaved()) {
        allocators.push_back({AllocatorOf(region.id, kVirtualExtent), before.servers});
    } else {
        for (uint64_t index = 0; index < before.servers; ++index) {
            allocators.push_back({AllocatorOf(region.id, index), 1});
        }
    }
    for (auto [allocator, times] : allocators) {
        if (new_extent > old_extent) {
            ExtentAllocator::Grow(txn, allocator, old_extent * times, new_extent * times);
        } else if (!ExtentAllocator::Shrink(txn, allocator, old_extent * times,
                                            new_extent * times)) {
            Fail(openfam::FAM_ERR_INVALID,
                 "region \"{}\" cannot shrink to {} bytes: items are allocated past that size{}",
                 region.name, size,
                 scrub_error.empty()
                     ? std::string()
                     : " (or deallocated items there wait to be zeroed: " + scrub_error + ")");
        }
    }
    // Inside the transaction, both ways: a shrink releases the cut tail (free, so nothing is
    // lost if the commit then fails), and no grow and allocation there can come in between
    // and be cleared by it.
    if (new_extent != old_extent) {
        for (uint64_t server : region.memory_servers) {
            servers_[server]->ResizeExtent(ExtentOf(region), old_extent, new_extent);
        }
    }
    region.size = size;
    txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
    txn.Commit();
    ForgetGrants(region.id);
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
    region.perm = CheckedMode(perm, "region", region.name);
    txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
    txn.Commit();
    if (options_.grant_keys && region.attributes.permissionLevel != DATAITEM) {
        // Keys handed out under the old bits stop working; holders look the item up again.
        ForgetGrants(region.id);
        for (uint64_t server : region.memory_servers) {
            servers_[server]->RevokeKeys(ExtentOf(region), kAllGrants);
        }
    }
}

ItemInfo MetadataStore::AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
                                     uint32_t perm, const Caller &caller) {
    try {
        return AllocateOnce(region_id, name, size, perm, caller);
    } catch (const Failure &failure) {
        // Space waiting to be zeroed is as good as free: zero it now (or wait for the
        // scrubber, which may hold it) and try again.
        if (failure.fam_error() != openfam::FAM_ERR_NO_SPACE || !options_.scrub_in_background) {
            throw;
        }
        Scrub(region_id, nullptr);
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
    if (layout.interleaved()) {
        uint64_t span = RoundUp(size, layout.unit());
        try {
            item.offset =
                ExtentAllocator::Allocate(txn, AllocatorOf(region_id, kVirtualExtent), span);
            placed = true;
        } catch (const Failure &failure) {
            if (failure.fam_error() != openfam::FAM_ERR_NO_SPACE) throw;
        }
    } else {
        // Named items go to the server their name hashes to, unnamed ones round-robin; a full
        // server passes the item to the next.
        uint64_t start = name.empty() ? round_robin_++ : Fnv1a(name);
        for (uint64_t t = 0; t < layout.servers && !placed; ++t) {
            uint64_t index = (start + t) % layout.servers;
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
    if (options_.scrub_in_background) {
        // The space stays taken until the scrubber has zeroed it; the record survives a crash.
        txn.Put(Table::kScrub, Key(region_id, offset), Key(item.size));
    } else {
        ZeroItems(region, {{offset, item.size}});
        FreeItemSpace(txn, region, offset, item.size);
    }
    txn.Commit();
    if (options_.scrub_in_background) {
        bool wake = false;  // only a scrubber that is not already on its way needs waking
        {
            std::lock_guard<std::mutex> lock(scrubber_mutex_);
            wake = !scrub_pending_;
            scrub_pending_ = true;
        }
        if (wake) scrubber_wake_.notify_one();
    }
    // In the background, the scrubber revokes the item's keys before it zeroes the bytes:
    // nothing written with them can land in space that is free again.
    if (!options_.scrub_in_background && options_.grant_keys &&
        region.attributes.permissionLevel == DATAITEM) {
        RevokeItemGrants(region, offset, item.size);
    }
}

void MetadataStore::AddZeroing(const RegionInfo &region, const std::vector<ItemSpan> &items,
                               std::map<uint64_t, std::vector<ExtentRanges>> *per_server) {
    Layout layout = LayoutOf(region);
    for (uint64_t index = 0; index < layout.servers; ++index) {
        ExtentRanges extent{ExtentOf(region), {}};
        for (auto [offset, size] : items) {
            auto [begin, end] = PhysicalRange(layout, offset, size, index);
            if (end > begin) extent.ranges.emplace_back(begin, end - begin);
        }
        if (!extent.ranges.empty()) {
            (*per_server)[region.memory_servers[index]].push_back(std::move(extent));
        }
    }
}

void MetadataStore::ZeroItems(const RegionInfo &region, const std::vector<ItemSpan> &items) {
    std::map<uint64_t, std::vector<ExtentRanges>> per_server;
    AddZeroing(region, items, &per_server);
    for (const auto &[server, extents] : per_server) servers_[server]->ZeroExtents(extents);
}

void MetadataStore::FreeItemSpace(Txn &txn, const RegionInfo &region, uint64_t offset,
                                  uint64_t size) {
    Layout layout = LayoutOf(region);
    if (layout.interleaved()) {
        ExtentAllocator::Free(txn, AllocatorOf(region.id, kVirtualExtent), offset,
                              RoundUp(size, layout.unit()));
    } else {
        ExtentAllocator::Free(txn, AllocatorOf(region.id, ServerIndexOf(offset)),
                              PhysicalOf(offset), size);
    }
}

size_t MetadataStore::Scrub(uint64_t region_id, std::string *error) {
    // Items per pass, whatever their regions: each memory server gets one call per pass (one
    // per region cost a client of the service 10-20% of a core with 16 regions in use).
    constexpr size_t kBatch = 4096;
    size_t freed = 0;
    std::set<uint64_t> failed;  // regions whose zeroing failed: they wait for the next call
    for (;;) {
        if (stopping_.load()) return freed;  // shutting down: the rest waits for the restart
        // One pass at a time, the lock released between passes: an allocation that found its
        // region full waits for one pass, not for a whole sweep.
        std::lock_guard<std::mutex> lock(scrub_mutex_);
        // Under the lock the records read here stay as they are until this pass frees them:
        // only a pass frees them, and their space, still taken, cannot be allocated and
        // deallocated again meanwhile. Destroying a region removes its records.
        std::map<uint64_t, std::vector<ItemSpan>> waiting;  // region -> items
        std::map<uint64_t, RegionInfo> regions;
        {
            Txn txn(*env_, /*write=*/false);
            Cursor cursor(txn, Table::kScrub);
            std::string prefix = region_id == kAllRegions ? std::string() : Key(region_id);
            size_t taken = 0;
            bool ok = prefix.empty() ? cursor.First() : cursor.Seek(prefix);
            for (; ok && taken < kBatch && StartsWith(cursor.key(), prefix); ok = cursor.Next()) {
                uint64_t region = ReadU64(cursor.key());
                if (failed.count(region)) continue;
                waiting[region].push_back({ReadU64(cursor.key(), 8), ReadU64(cursor.value())});
                ++taken;
            }
            for (const auto &[id, items] : waiting) regions.emplace(id, ReadRegion(txn, id));
        }
        if (waiting.empty()) return freed;

        // Keys first: nothing written with an item's key may land in space that is free again.
        std::map<uint64_t, std::vector<ExtentRanges>> per_server;
        for (const auto &[id, items] : waiting) {
            const RegionInfo &region = regions.at(id);
            if (options_.grant_keys && region.attributes.permissionLevel == DATAITEM) {
                for (auto [offset, size] : items) RevokeItemGrants(region, offset, size);
            }
            AddZeroing(region, items, &per_server);
        }
        std::map<uint64_t, std::string> failures;  // region -> why
        for (const auto &[server, extents] : per_server) {
            try {
                servers_[server]->ZeroExtents(extents);
            } catch (const Failure &failure) {
                // An unreachable server fails every region it holds. Anything else may be one
                // region destroyed meanwhile: ask again region by region, so that the others
                // go on.
                for (const ExtentRanges &extent : extents) {
                    if (failure.fam_error() == openfam::FAM_ERR_RPC) {
                        failures.emplace(extent.extent.region_id, failure.fam_error_msg());
                        continue;
                    }
                    try {
                        servers_[server]->ZeroExtents({extent});
                    } catch (const Failure &alone) {
                        failures.emplace(extent.extent.region_id, alone.fam_error_msg());
                    }
                }
            }
        }

        Txn txn(*env_, /*write=*/true);
        for (const auto &[id, items] : waiting) {
            std::string_view record;
            if (!txn.Get(Table::kRegions, Key(id), &record)) continue;  // destroyed: nothing left
            auto why = failures.find(id);
            if (why != failures.end()) {
                failed.insert(id);
                if (error && error->empty()) *error = why->second;
                continue;
            }
            RegionInfo region = DecodeRegion(id, record);  // as it is now (resized meanwhile?)
            for (auto [offset, size] : items) {
                FreeItemSpace(txn, region, offset, size);
                txn.Del(Table::kScrub, Key(id, offset));
            }
            freed += items.size();
        }
        txn.Commit();
    }
}

void MetadataStore::RunScrubber() {
    // Retries what failed (a memory server down) at this period.
    constexpr auto kRetry = std::chrono::seconds(1);
    constexpr auto kGather = std::chrono::milliseconds(5);
    std::unique_lock<std::mutex> lock(scrubber_mutex_);
    bool failed = false;
    std::string reported;  // the failure last logged: a server down for long is logged once
    for (;;) {
        scrubber_wake_.wait_for(lock, kRetry, [&] { return stopping_ || scrub_pending_; });
        if (stopping_) return;
        if (!scrub_pending_ && !failed) continue;
        // Let deallocations gather first: one round per item cost a memory-server call per
        // deallocation, CPU the callers of the service need (one client's allocate+deallocate
        // rate went up 30-50% with the rounds gathered). Nobody waits for a round: an
        // allocation that finds its region full scrubs it at once (AllocateItem).
        scrubber_wake_.wait_for(lock, kGather, [&] { return stopping_.load(); });
        if (stopping_) return;
        scrub_pending_ = false;
        lock.unlock();
        std::string error;
        try {
            Scrub(kAllRegions, &error);
        } catch (const std::exception &e) {  // the store itself failed: try again later
            error = e.what();
        }
        failed = !error.empty();
        if (failed && error != reported) {
            std::fprintf(stderr,
                         "fampool-server: zeroing deallocated items: %s (retrying every second)\n",
                         error.c_str());
        }
        reported = error;
        lock.lock();
    }
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
    std::string_view bytes;
    if (!txn.Get(Table::kItems, Key(region_id, offset), &bytes)) {
        Fail(openfam::FAM_ERR_NOTFOUND, "no item at offset {} of region \"{}\"", offset,
             region.name);
    }
    ItemInfo item = DecodeItem(region_id, offset, bytes);
    item.region = region;
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
    item.perm = CheckedMode(perm, "item", item.name);
    txn.Put(Table::kItems, Key(region_id, offset), EncodeItem(item));
    txn.Commit();
    if (options_.grant_keys) RevokeItemGrants(region, offset, item.size);
}

void MetadataStore::Sync() { env_->Sync(); }

std::string MetadataStore::GetValue(const std::string &name) {
    Txn txn(*env_, /*write=*/false);
    std::string_view value;
    return txn.Get(Table::kMeta, "value/" + name, &value) ? std::string(value) : std::string();
}

void MetadataStore::SetValue(const std::string &name, const std::string &value) {
    Txn txn(*env_, /*write=*/true);
    txn.Put(Table::kMeta, "value/" + name, value);
    txn.Commit();
}

ItemInfo MetadataStore::Finish(ItemInfo item, const Caller &caller) {
    Govern(item, caller);
    if (!options_.grant_keys || (!item.can_read && !item.can_write)) return item;
    // Hand out the keys the permission check allows: read-only unless the caller may write.
    const RegionInfo &region = item.region;
    Layout layout = LayoutOf(region);
    bool per_item = region.attributes.permissionLevel == DATAITEM;
    item.access.resize(layout.servers);
    for (uint64_t index = 0; index < layout.servers; ++index) {
        auto [begin, end] = PhysicalRange(layout, item.offset, item.size, index);
        if (end <= begin) continue;  // the item has no bytes there
        uint64_t offset = per_item ? begin : 0, size = per_item ? end - begin : 0;
        auto key = std::make_tuple(region.id, index, offset, size, item.can_write);
        KeyGrant grant;
        {
            std::lock_guard<std::mutex> lock(grants_mutex_);
            auto found = grants_.find(key);
            if (found != grants_.end()) grant = found->second;
        }
        uint64_t server = region.memory_servers[index];
        if (grant.fabric_address.empty()) {
            grant = servers_[server]->GrantKey(ExtentOf(region), offset, size, item.can_write);
            std::lock_guard<std::mutex> lock(grants_mutex_);
            grants_[key] = grant;
        }
        item.access[index] = ServerAccess{server,         grant.fabric_address, grant.key,
                                          grant.base,     grant.heap_path,      grant.node};
    }
    return item;
}

void MetadataStore::ForgetGrants(uint64_t region_id) {
    std::lock_guard<std::mutex> lock(grants_mutex_);
    auto first = grants_.lower_bound(std::make_tuple(region_id, 0, 0, 0, false));
    auto last = grants_.lower_bound(std::make_tuple(region_id + 1, 0, 0, 0, false));
    grants_.erase(first, last);
}

void MetadataStore::RevokeItemGrants(const RegionInfo &region, uint64_t offset, uint64_t size) {
    Layout layout = LayoutOf(region);
    for (uint64_t index = 0; index < layout.servers; ++index) {
        auto [begin, end] = PhysicalRange(layout, offset, size, index);
        if (end <= begin) continue;
        {
            std::lock_guard<std::mutex> lock(grants_mutex_);
            grants_.erase(std::make_tuple(region.id, index, begin, end - begin, false));
            grants_.erase(std::make_tuple(region.id, index, begin, end - begin, true));
        }
        try {
            servers_[region.memory_servers[index]]->RevokeKeys(ExtentOf(region), begin);
        } catch (const Failure &) {
            // An unreachable server has lost its registrations already.
        }
    }
}

std::vector<MetadataStore::RegionUsage> MetadataStore::ListRegions() {
    Txn txn(*env_, /*write=*/false);
    std::vector<RegionUsage> list;
    Cursor cursor(txn, Table::kRegions);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        RegionUsage usage;
        usage.region = DecodeRegion(ReadU64(cursor.key()), cursor.value());
        list.push_back(usage);
    }
    for (RegionUsage &usage : list) {
        uint64_t id = usage.region.id;
        Cursor items(txn, Table::kItems);
        for (bool ok = items.Seek(Key(id)); ok && ReadU64(items.key()) == id; ok = items.Next()) {
            ++usage.items;
        }
        Layout layout = LayoutOf(usage.region);
        for (uint64_t index = 0; index < 256; ++index) {
            if (index == layout.servers) index = kVirtualExtent;
            uint64_t free_bytes, largest;
            ExtentAllocator::Usage(txn, AllocatorOf(id, index), &free_bytes, &largest);
            usage.free_bytes += free_bytes;
        }
    }
    return list;
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

std::vector<uint64_t> MetadataStore::ServerUsage() {
    std::vector<uint64_t> usage(servers_.size(), 0);
    Txn txn(*env_, /*write=*/false);
    Cursor cursor(txn, Table::kRegions);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        RegionInfo region = DecodeRegion(ReadU64(cursor.key()), cursor.value());
        uint64_t extent = LayoutOf(region).extent_size;
        for (uint64_t server : region.memory_servers) {
            if (server < usage.size()) usage[server] += extent;
        }
    }
    return usage;
}

void MetadataStore::ServerRestarted(uint64_t server_id) {
    std::vector<RegionInfo> gone, all;
    {
        Txn txn(*env_, /*write=*/true);
        Cursor cursor(txn, Table::kRegions);
        for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
            all.push_back(DecodeRegion(ReadU64(cursor.key()), cursor.value()));
        }
        for (const RegionInfo &region : all) {
            bool on_server = std::find(region.memory_servers.begin(), region.memory_servers.end(),
                                       server_id) != region.memory_servers.end();
            if (on_server && region.attributes.memoryType != PERSISTENT) gone.push_back(region);
        }
        for (const RegionInfo &region : gone) RemoveRegionRecords(txn, region);
        txn.Commit();
    }
    for (const RegionInfo &region : all) ForgetGrants(region.id);
    for (const RegionInfo &region : gone) {
        for (uint64_t server : region.memory_servers) {
            if (server == server_id) continue;
            try {
                servers_[server]->DestroyExtent(ExtentOf(region));
            } catch (const Failure &) {
            }
        }
    }
}

}  // namespace fampool
