// MetadataStore: the store itself (its identity, its small values, its usage) and regions:
// names, placement on memory servers, creation, resizing, permissions, a restarted server.
#include "meta/metadata_store.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "common/at_once.h"
#include "common/error.h"
#include "common/region_attributes.h"
#include "common/shards.h"
#include "meta/extent_allocator.h"
#include "meta/intent_placement.h"
#include "meta/records.h"
#include "meta/store_internals.h"

namespace fampool {

using namespace store;

std::string MetadataStore::Prepare(LmdbEnv &env, uint32_t shard, uint32_t shards) {
    Txn txn(env, /*write=*/true);
    std::string_view value;
    std::string instance;
    // "k/N": shard k of N. A store from before shards has none, and is shard 0 of 1.
    std::string place = fmt::format("{}/{}", shard, shards);
    if (txn.Get(Table::kMeta, "instance", &value)) {
        instance = std::string(value);
        std::string recorded = txn.Get(Table::kMeta, "shard", &value) ? std::string(value) : "0/1";
        if (recorded != place) {
            Fail(openfam::FAM_ERR_INVALID,
                 "metadata store {} is shard {} (shard/shards), not {} as configured: its "
                 "regions' names would lead clients to other shards. Start it with the shard "
                 "and shard count it was created with, or give this shard a new metadata_dir",
                 env.dir(), recorded, place);
        }
    } else {
        std::random_device random;
        uint64_t id = (static_cast<uint64_t>(random()) << 32) ^ random();
        instance = fmt::format("fampool-{:016x}", id);
        txn.Put(Table::kMeta, "instance", instance);
        txn.Put(Table::kMeta, "next_region", Key(FirstRegionId(shard)));
        txn.Put(Table::kMeta, "shard", place);
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

MetadataStore::Identity MetadataStore::ReadIdentity(LmdbEnv &env) {
    Txn txn(env, /*write=*/false);
    std::string_view value;
    Identity identity;
    if (txn.Get(Table::kMeta, "instance", &value)) identity.instance = std::string(value);
    identity.this_boot = txn.Get(Table::kMeta, "boot_id", &value) && value == BootId();
    return identity;
}

MetadataStore::MetadataStore(std::shared_ptr<LmdbEnv> env, std::vector<MemoryServer *> servers,
                             PlacementOptions options)
    : env_(std::move(env)), servers_(std::move(servers)), options_(std::move(options)) {
    if (servers_.empty()) Fail(openfam::FAM_ERR_MEMSERV_LIST_EMPTY, "no memory servers configured");
}

MetadataStore::~MetadataStore() = default;

RegionInfo MetadataStore::CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                                       const Fam_Region_Attributes &attributes,
                                       const RegionIntent &intent, const Caller &caller) {
    CheckName("region", name);
    if (size == 0) Fail(openfam::FAM_ERR_INVALID, "region \"{}\" of size 0", name);
    RegionInfo region;
    region.name = name;
    region.size = size;
    region.perm = CheckedMode(perm, "region", name);
    region.uid = caller.uid;
    region.gid = caller.gid;
    region.attributes = CheckedAttributes(attributes, name);
    std::string why;  // intent: the resilience part, then the servers (PlaceRegion)
    if (!intent.empty()) {
        region.intent = intent;
        if (!intent.kind.empty() && KindValue(intent.kind) == FAM_KIND_ANY) {
            Fail(openfam::FAM_ERR_INVALID, "region \"{}\": intent kind \"{}\" is not one of {}",
                 name, intent.kind, MemoryKindList());
        }
        ApplyIntentAttributes(intent, name, &region.attributes, &why);
    }
    if (region.attributes.memoryType == MEMORY_TYPE_DEFAULT)
        region.attributes.memoryType = VOLATILE;
    if (region.attributes.permissionLevel == PERMISSION_LEVEL_DEFAULT) {
        region.attributes.permissionLevel = REGION;
    }
    if (region.attributes.redundancyLevel == REDUNDANCY_LEVEL_DEFAULT) {
        region.attributes.redundancyLevel = NONE;
    }
    CheckRedundancy(name, region.attributes);
    if (region.attributes.interleaveEnable == INTERLEAVE_DEFAULT) {
        region.attributes.interleaveEnable = options_.interleave_size ? ENABLE : DISABLE;
    }
    region.interleave_size =
        region.attributes.interleaveEnable == ENABLE ? options_.interleave_size : 0;
    std::string placed;
    region.memory_servers =
        PlaceRegion(name, size, region.interleave_size != 0, region.attributes, intent, &placed);
    if (!intent.empty()) region.placement = placed + why;
    if (region.attributes.redundancyLevel == RAID1) {
        std::vector<uint64_t> allowed =
            options_.Candidates(servers_.size(), region.attributes.memoryType);
        if (!intent.empty()) {
            // Copies go where the constraints allow (not only where the hints would).
            RegionIntent constraints = intent;
            constraints.hints = 0;
            std::string ignored;
            allowed = ChooseByIntent(constraints, name, AsCandidates(allowed, {}), &ignored).ranked;
            std::sort(allowed.begin(), allowed.end());
            if (allowed.size() < 2) {
                Fail(openfam::FAM_ERR_RESOURCE,
                     "region \"{}\" is RAID1 (intent: {}), which needs 2 memory servers, and its "
                     "constraints allow one: {}",
                     name, HintNames(intent.hints), allowed.front());
            }
        }
        region.copy_servers = PlaceCopies(region.memory_servers, allowed);
        if (!intent.empty()) {
            region.placement += fmt::format("; copies on {}", fmt::join(region.copy_servers, ", "));
        }
    }
    region.member_state.assign(MemberCount(region), kHealthy);
    Layout layout = LayoutOf(region);
    if (layout.extent_size > (uint64_t{1} << kServerIndexShift)) {
        Fail(openfam::FAM_ERR_NO_SPACE,
             "region \"{}\" of {} bytes exceeds 256 TiB per memory server{}", name, size,
             layout.interleaved() ? "" : " (each of its servers can hold an item of its size)");
    }

    // The name and id are taken in one short transaction, the extents made with none open,
    // and the region recorded in a second: a write transaction held across the servers' calls
    // held every other metadata write (allocations too) for as long as the slowest server took
    // to answer, seconds when its link was full and a packet had to be sent again. A server's
    // loss or restart, which records members' states, waits for creations in flight.
    const QuotaTaken elsewhere = TakenElsewhere(region);  // before any transaction: a call
    std::shared_lock<std::shared_mutex> creating(membership_);
    auto require_new_name = [&](Txn &txn) {
        if (txn.Get(Table::kRegionNames, name, nullptr)) {
            Fail(openfam::FAM_ERR_ALREADYEXIST, "region \"{}\" already exists", name);
        }
    };
    {
        Txn txn(*env_, /*write=*/true);
        require_new_name(txn);
        std::string_view next;
        txn.Get(Table::kMeta, "next_region", &next);
        region.id = ReadU64(next);
        txn.Put(Table::kMeta, "next_region", Key(region.id + 1));
        RequireCapacity(txn, region, Layout{}, layout, size, "create");
        RequireQuota(txn, region, Layout{}, layout, size, "create", elsewhere);
        txn.Commit();
    }
    std::vector<PlacedExtent> extents = ExtentsOf(region);
    std::vector<std::exception_ptr> failed = OnExtents(extents, [&](const PlacedExtent &each) {
        Server(each.server).CreateExtent(each.extent, layout.extent_size, layout.share);
    });
    try {
        RethrowFirst(failed);
        Txn txn(*env_, /*write=*/true);
        require_new_name(txn);  // a call made at the same time may have taken it meanwhile
        RequireCapacity(txn, region, Layout{}, layout, size, "create");
        RequireQuota(txn, region, Layout{}, layout, size, "create", elsewhere);
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
        std::vector<PlacedExtent> created;
        for (size_t i = 0; i < extents.size(); ++i) {
            if (!failed[i]) created.push_back(extents[i]);
        }
        // A server that fails here is gone; its heap goes with its next restart (volatile) or
        // stays as an orphan file (persistent), never referenced by metadata.
        DestroyExtents(created);
        throw;
    }
    return region;
}

std::unique_lock<std::shared_mutex> MetadataStore::HoldMembers() {
    return std::unique_lock<std::shared_mutex>(membership_);
}

void MetadataStore::DestroyExtents(const std::vector<PlacedExtent> &extents) const {
    OnExtents(extents, [&](const PlacedExtent &each) {
        try {
            Server(each.server).DestroyExtent(each.extent);
        } catch (const Failure &) {
        }
    });
}

std::vector<std::exception_ptr> MetadataStore::OnExtents(
    const std::vector<PlacedExtent> &extents,
    const std::function<void(const PlacedExtent &)> &call) const {
    bool remote = std::any_of(servers_.begin(), servers_.end(),
                              [](const MemoryServer *server) { return server->remote(); });
    return AtOnce(
        extents.size(), [&](size_t i) { call(extents[i]); }, remote);
}

void MetadataStore::DestroyRegion(uint64_t region_id, const Caller &caller) {
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    RequireOwner(region, caller, "destroy");
    RemoveRegionRecords(txn, region);
    txn.Commit();
    grants_.Forget(region.id);
    // The region is gone from the metadata; an unreachable server's heap is released when it
    // restarts (volatile) or stays as an unreferenced file (persistent).
    DestroyExtents(ExtentsOf(region));
}

RegionInfo MetadataStore::ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) {
    // Items waiting to be zeroed still hold their space: a shrink must not count them.
    std::string scrub_error;
    if (scrub_.background()) scrub_.Scrub(region_id, &scrub_error);
    QuotaTaken elsewhere;
    if (elsewhere_) {
        // Asked before the write transaction (a call to each other shard); the owner and
        // group read here are the region's until it is destroyed.
        Txn read(*env_, /*write=*/false);
        elsewhere = TakenElsewhere(ReadRegion(read, region_id));
    }
    Txn txn(*env_, /*write=*/true);
    RegionInfo region = ReadRegion(txn, region_id);
    if (size == 0) Fail(openfam::FAM_ERR_INVALID, "region \"{}\" to size 0", region.name);
    RequireOwner(region, caller, "resize");
    Layout before = LayoutOf(region), after = LayoutOf(region, size);
    uint64_t old_extent = before.extent_size, new_extent = after.extent_size;
    if (new_extent > (uint64_t{1} << kServerIndexShift)) {
        Fail(openfam::FAM_ERR_NO_SPACE, "region \"{}\" to {} bytes: past 256 TiB per memory server",
             region.name, size);
    }
    RequireCapacity(txn, region, before, after, size, "resize");
    RequireQuota(txn, region, before, after, size, "resize", elsewhere);
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
        for (size_t m = 0; m < MemberCount(region); ++m) {
            if (!LostIntact(region, m)) continue;
            Fail(openfam::FAM_ERR_RESOURCE,
                 "region \"{}\" cannot be resized now: member {} holds the newest copy of some "
                 "of its bytes and its memory server {} is down (resize once it is back)",
                 region.name, m, MemberServer(region, m));
        }
        std::vector<PlacedExtent> kept;  // a lost member is rebuilt at the new size
        for (const PlacedExtent &each : ExtentsOf(region)) {
            if (StateOf(region, each.member) != kLost) kept.push_back(each);
        }
        RethrowFirst(OnExtents(kept, [&](const PlacedExtent &each) {
            Server(each.server)
                .ResizeExtent(each.extent, old_extent, new_extent,
                              after.share - std::min(after.share, before.share));
        }));
    }
    region.size = size;
    txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
    txn.Commit();
    grants_.Forget(region.id);
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
        grants_.Forget(region.id);
        for (const PlacedExtent &each : ExtentsOf(region)) {
            if (StateOf(region, each.member) == kLost) continue;
            Server(each.server).RevokeKeys(each.extent, kAllGrants);
        }
        // Again: a lookup between the first Forget and a server's revocation may have been
        // granted a key that server then revoked (KeyGrants keeps none granted across this).
        grants_.Forget(region.id);
    }
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
        uint64_t span = layout.extent_size * layout.servers;
        usage.used_bytes = span - std::min(span, usage.free_bytes);
    }
    return list;
}

void MetadataStore::ServerRestarted(uint64_t server_id) {
    std::unique_lock<std::shared_mutex> members = HoldMembers();
    std::vector<RegionInfo> gone, all;
    {
        Txn txn(*env_, /*write=*/true);
        {
            // Closed before the commit, which frees a write transaction's cursors itself (the
            // cursor outliving it was a double free, found by AddressSanitizer).
            Cursor cursor(txn, Table::kRegions);
            for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
                all.push_back(DecodeRegion(ReadU64(cursor.key()), cursor.value()));
            }
        }
        for (RegionInfo &region : all) {
            if (region.attributes.memoryType == PERSISTENT) continue;
            bool on_server = false;
            for (const PlacedExtent &each : ExtentsOf(region))
                on_server |= each.server == server_id;
            if (!on_server) continue;
            if (IsRedundant(region)) {
                // Its extents there went with the heaps: those members are lost, and the
                // others still hold the region unless too many are.
                region.member_state.resize(MemberCount(region), kHealthy);
                for (size_t m = 0; m < MemberCount(region); ++m) {
                    if (MemberServer(region, m) == server_id) region.member_state[m] = kLost;
                }
                if (RegionRecoverable(region)) {
                    txn.Put(Table::kRegions, Key(region.id), EncodeRegion(region));
                    continue;
                }
            }
            gone.push_back(region);
        }
        for (const RegionInfo &region : gone) RemoveRegionRecords(txn, region);
        txn.Commit();
    }
    for (const RegionInfo &region : all) grants_.Forget(region.id);
    for (const RegionInfo &region : gone) {
        std::vector<PlacedExtent> elsewhere;
        for (const PlacedExtent &each : ExtentsOf(region)) {
            if (each.server != server_id) elsewhere.push_back(each);
        }
        DestroyExtents(elsewhere);
    }
}

}  // namespace fampool
