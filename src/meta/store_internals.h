// What the metadata store's classes share (MetadataStore: regions, items, placement;
// MemberRecords: redundant members; ScrubQueue: zeroing freed space; store_caches.cc: the keys
// and profiles kept in memory): the keys of its tables, a region's layout on its servers, and
// the permission checks.
// Internal to meta/.
#ifndef FAMPOOL_META_STORE_INTERNALS_H_
#define FAMPOOL_META_STORE_INTERNALS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fam_objects.h"
#include "common/hash.h"  // Fnv1a: where hash placement starts
#include "common/memory_server.h"
#include "meta/lmdb.h"

namespace fampool::store {

constexpr uint64_t kVirtualExtent = 255;  // allocator of an interleaved region's virtual space
constexpr uint64_t kMinimumHeap = uint64_t{1} << 20;  // OpenFAM 3.2's smallest heap per server

// How a region's bytes sit on its servers (see ServerIndexOf in common/fam_objects.h).
// Each server's extent spans more than the region's share of it (docs/semantics.md, "Region
// capacity"): at least OpenFAM 3.2's heap for the region (the next power of two of the share,
// 1 MiB at least), and in a region whose items are not striped, the region's whole size, so
// that an item as large as the region fits on any one of its servers. Heaps are sparse:
// capacity counts the share and what items hold past it (ServerUsage), never the span.
struct Layout {
    uint64_t servers = 1;      // K
    uint64_t interleave = 0;   // I; 0 when items are not striped
    uint64_t extent_size = 0;  // bytes each server's extent spans
    uint64_t share = 0;        // the region's size over its servers: what each one reserves
    bool interleaved() const { return interleave != 0; }
    uint64_t unit() const { return interleave * servers; }
};

// OpenFAM 3.2's heap on each of `servers` servers for a region of `size` bytes.
uint64_t OpenFamHeapSize(uint64_t size, uint64_t servers);

// Table keys: big-endian ids (so that keys sort as numbers), and a region's id before a name.
std::string Key(uint64_t a);
std::string Key(uint64_t a, uint64_t b);
std::string NameKey(uint64_t region_id, const std::string &name);

// This boot of the machine (volatile heaps do not outlive it).
std::string BootId();

// Throws FAM_ERR_INVALID for an empty name, FAM_ERR_NAME_TOO_LONG past kMaxNameLength.
void CheckName(const char *what, const std::string &name);

// The permission bits of a region or item: any mode chmod(2) takes (0 to 07777; setuid,
// setgid and sticky are kept and shown, and grant nothing). Other bits are refused.
uint32_t CheckedMode(uint32_t perm, const char *what, const std::string &name);

bool StartsWith(std::string_view key, std::string_view prefix);
// Deletes every key of `table` that starts with `prefix`.
void DeletePrefix(Txn &txn, Table table, const std::string &prefix);

// The region's record; throws FAM_ERR_NOTFOUND when it is gone.
RegionInfo ReadRegion(const Txn &txn, uint64_t region_id);
// The record of the item at `offset` of `region` (its `region` filled in); throws
// FAM_ERR_NOTFOUND when there is none.
ItemInfo ReadItem(const Txn &txn, const RegionInfo &region, uint64_t offset);
// The region's extent on each of its servers.
ExtentRef ExtentOf(const RegionInfo &region);
// One extent of a region on one server: each member of a redundant region (see Members in
// common/fam_objects.h), else the extent on each of its servers. `index` is the server
// position PhysicalRange takes for the bytes the extent holds.
struct PlacedExtent {
    uint64_t server = 0;
    ExtentRef extent;
    uint64_t index = 0;
    size_t member = 0;
};
std::vector<PlacedExtent> ExtentsOf(const RegionInfo &region);
// Whether a redundant region still holds all its bytes: no member lost together with one
// whose loss it cannot survive (RAID1: the other copy; RAID5: any other member).
bool RegionRecoverable(const RegionInfo &region);
// Whether every partner of `member` is healthy: writes then go on without it (it misses them
// if it is lost), and its bytes can be rebuilt from them.
bool WritesGoOnWithout(const RegionInfo &region, size_t member);
// Those members of `member`: RAID1 the other copy of its extent, RAID5 every other member.
std::vector<size_t> Partners(const RegionInfo &region, size_t member);
// The extent allocator of server `index` of a region (kVirtualExtent: its virtual space).
uint64_t AllocatorOf(uint64_t region_id, uint64_t index);
uint64_t RoundUp(uint64_t value, uint64_t unit);

// The layout of the region at `size` bytes (or at its size).
Layout LayoutOf(const RegionInfo &region, uint64_t size);
Layout LayoutOf(const RegionInfo &region);

// Where an item's bytes are on server `index`: [begin, end) of that server's extent.
std::pair<uint64_t, uint64_t> PhysicalRange(const Layout &layout, uint64_t offset, uint64_t size,
                                            uint64_t index);

// The permission bits that govern an item: the region's in a REGION-level region.
void Govern(ItemInfo &item, const Caller &caller);

// Looking a region up, or its record, needs read or write permission; its owner needs none (a
// file's owner may stat it and chmod it whatever its mode), so that a region of mode 0 can be
// found again and opened up.
void RequireAnyAccess(const RegionInfo &region, const Caller &caller);

// Whether `caller` owns the item or its region: its record is theirs to see whatever the mode
// (fam_lookup and fam_stat then work; reads and writes follow the bits).
bool Owns(const ItemInfo &item, const Caller &caller);

// Throws FAM_ERR_NOPERM unless `caller` owns the region, naming `action`.
void RequireOwner(const RegionInfo &region, const Caller &caller, const char *action);

// Deletes the region's records: items, names, pending zeroing, allocators, the region.
void RemoveRegionRecords(Txn &txn, const RegionInfo &region);

}  // namespace fampool::store

#endif  // FAMPOOL_META_STORE_INTERNALS_H_
