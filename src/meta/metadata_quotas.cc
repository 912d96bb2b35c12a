// MetadataStore: the bytes and regions each user's and group's regions take, held within the
// quotas the cluster file gives them (common/quotas.h, docs/configuration.md "Quotas").
//
// A region takes what it reserves on the memory servers: its share on each of its extents,
// copies and parity included (a RAID1 region of 1 GiB takes 2 GiB), as capacity counts it
// when it is made. It counts for its owner and its group. The sums are read from the store
// in the same write transaction that records the region, so two calls at once on one shard
// cannot both pass a bound that only one fits. With several shards, what the other shards'
// regions take is asked first (Metadata.QuotaUsage, a call to each): two calls at once on two
// shards may each pass a bound that only one of them fits.
#include "common/error.h"
#include "meta/metadata_store.h"
#include "meta/records.h"
#include "meta/store_internals.h"

namespace fampool {

using namespace store;

namespace {

uint64_t ReservedBytes(const RegionInfo &region, const Layout &layout) {
    return layout.share * ExtentsOf(region).size();
}

struct Taken {
    uint64_t bytes = 0, regions = 0;
};

// "user 1001 (alice) holds 3 regions of 2147483648 bytes; its quota is 4294967296 bytes":
// throws FAM_ERR_NO_SPACE when `more` bytes and `new_regions` regions do not fit `limits`.
void RequireRoom(const QuotaLimits &limits, const Taken &taken, uint64_t more, uint64_t new_regions,
                 bool group, uint32_t id, const char *action, const RegionInfo &region,
                 uint64_t size) {
    std::string over;
    if (limits.regions && taken.regions + new_regions > *limits.regions) {
        over = fmt::format("{} regions, its quota (quotas: regions)", *limits.regions);
    } else if (limits.bytes && taken.bytes + more > *limits.bytes) {
        over = fmt::format("{} bytes, its quota (quotas: bytes); this region would take {} more",
                           *limits.bytes, more);
    }
    if (over.empty()) return;
    Fail(openfam::FAM_ERR_NO_SPACE,
         "{} region \"{}\" to {} bytes: refused: {} owns {} region{} taking {} bytes of the "
         "memory servers, and may hold {}",
         action, region.name, size, QuotaOwner(group, id), taken.regions,
         taken.regions == 1 ? "" : "s", taken.bytes, over);
}

}  // namespace

void MetadataStore::SetQuotas(Quotas quotas, uint32_t cluster_user, QuotaElsewhere elsewhere) {
    quotas_ = std::move(quotas);
    cluster_user_ = cluster_user;
    elsewhere_ = std::move(elsewhere);
}

MetadataStore::QuotaTaken MetadataStore::TakenBy(uint32_t uid, uint32_t gid) {
    QuotaTaken taken;
    Txn txn(*env_, /*write=*/false);
    Cursor cursor(txn, Table::kRegions);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        RegionInfo region = DecodeRegion(ReadU64(cursor.key()), cursor.value());
        uint64_t bytes = ReservedBytes(region, LayoutOf(region));
        if (region.uid == uid) taken.user_bytes += bytes, taken.user_regions += 1;
        if (region.gid == gid) taken.group_bytes += bytes, taken.group_regions += 1;
    }
    return taken;
}

MetadataStore::QuotaTaken MetadataStore::TakenElsewhere(const RegionInfo &region) {
    if (!elsewhere_ || !quotas_.BoundsRegions() || region.uid == cluster_user_) return {};
    return elsewhere_(region.uid, region.gid);
}

void MetadataStore::RequireQuota(const Txn &txn, const RegionInfo &region, const Layout &before,
                                 const Layout &after, uint64_t size, const char *action,
                                 const QuotaTaken &elsewhere) {
    if (!quotas_.BoundsRegions() || region.uid == cluster_user_) return;
    QuotaLimits user = quotas_.User(region.uid);
    const QuotaLimits *group = quotas_.Group(region.gid);
    bool user_bound = user.bytes || user.regions;
    if (!user_bound && !group) return;
    bool created = before.extent_size == 0;
    uint64_t was = created ? 0 : ReservedBytes(region, before);
    uint64_t now = ReservedBytes(region, after);
    if (!created && now <= was) return;  // a shrink never needs room
    // A resized region is in the table and counts as it is now; a new one is not yet.
    Taken mine{elsewhere.user_bytes, elsewhere.user_regions};
    Taken ours{elsewhere.group_bytes, elsewhere.group_regions};
    Cursor cursor(txn, Table::kRegions);
    for (bool ok = cursor.First(); ok; ok = cursor.Next()) {
        RegionInfo other = DecodeRegion(ReadU64(cursor.key()), cursor.value());
        bool own = other.uid == region.uid, shared = group && other.gid == region.gid;
        if (!own && !shared) continue;
        uint64_t bytes = ReservedBytes(other, LayoutOf(other));
        if (own) mine.bytes += bytes, mine.regions += 1;
        if (shared) ours.bytes += bytes, ours.regions += 1;
    }
    uint64_t new_regions = created ? 1 : 0;
    if (user_bound) {
        RequireRoom(user, mine, now - was, new_regions, false, region.uid, action, region, size);
    }
    if (group) {
        RequireRoom(*group, ours, now - was, new_regions, true, region.gid, action, region, size);
    }
}

}  // namespace fampool
