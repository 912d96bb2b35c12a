// The metadata service's logic over LMDB: regions, items, names, permissions and (through
// ExtentAllocator) the free space of every extent. The embedded model calls it in-process, with
// several processes of the node sharing one store; the metadata server will call it behind gRPC.
//
// Tables (keys are big-endian so that byte order is numeric order):
//   meta           "instance" | "next_region" | "boot_id" | "shard"  -> value
//   regions        region id                                -> region record
//   region_names   region name                              -> region id
//   items          region id, offset                        -> item record
//   item_names     region id, item name                     -> offset
//   free_by_*      see ExtentAllocator
//   scrub          region id, offset                        -> size of a deallocated item
//                  whose bytes are still to be zeroed before its space is free again
//
// Free space always reads as zeros: a new extent is zero, and a deallocated item's bytes are
// zeroed before its space returns to the allocator, so allocation never waits for zeroing.
#ifndef FAMPOOL_META_METADATA_STORE_H_
#define FAMPOOL_META_METADATA_STORE_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/memory_server.h"
#include "meta/client/metadata_service.h"
#include "meta/intent_placement.h"
#include "meta/lmdb.h"
#include "meta/store_caches.h"

namespace fampool {

namespace store {
struct Layout;
}

// OpenFAM's default region_span_size_per_memoryserver.
constexpr uint64_t kDefaultSpanSize = uint64_t{1} << 30;

// How regions are spread over memory servers.
struct PlacementOptions {
    uint64_t interleave_size = 0;  // for regions with interleaving (ENABLE or the default)
    size_t region_span = 0;        // servers per region at most; 0: all of them
    // Bytes a region places on each server before it takes another (OpenFAM's
    // region_span_size_per_memoryserver): a region of S bytes spans ceil(S / span_size)
    // servers, at least one and at most region_span. 0: every region takes region_span.
    // Unset: a region without interleaving spans ceil(S / kDefaultSpanSize) servers, since
    // each of its items lives on one server and must fit there (a small region spread over
    // every server would refuse items half its size); an interleaved region, whose items are
    // striped over all its servers, takes region_span.
    std::optional<uint64_t> span_size;
    std::string policy = "hash";  // "hash" (by region name) or "least-used" (fewest bytes)
    // By server id: the regions each holds, "volatile", "persistent" or "" (both); empty: every
    // server holds both.
    std::vector<std::string> memory_types;
    // By server id: its failure domain (a rack, a power feed); RAID1 keeps an extent's copy in
    // another domain than the extent when the cluster has one. Empty: every server its own.
    std::vector<std::string> failure_domains;
    // By server id: spares, which get no region when it is created (only lost members).
    std::vector<bool> spares;
    // By server id: its memory's kind, speed, capacity and node as configured (intent-based
    // placement); what is unset (0, "") the server is asked for. Empty: ask every server.
    std::vector<MemoryProfile> profiles;
    // By server id: servers only regions with an intent are placed on (the embedded model's
    // extra memory tiers). Empty: none.
    std::vector<bool> intent_only;
    // Whether redundant regions can be kept: not in the embedded model, whose memory tiers are
    // all on one node (and whose data path writes one copy).
    bool redundancy = true;
    bool grant_keys = false;  // fill ItemInfo::access with fabric keys (memory-server model)
    // Zero deallocated items on a thread of the store (the metadata server, whose memory
    // servers are a round trip away) rather than inside fam_deallocate (embedded: a memset).
    bool scrub_in_background = false;
};

class MetadataStore : public MetadataService {
  public:
    // Opens the store's tables and, the first time, writes its identity: shard `shard` of
    // `shards` (common/shards.h; its region ids start at FirstRegionId(shard)). Throws
    // Failure(FAM_ERR_INVALID) when the store was made as another shard or for another count.
    // Drops the volatile regions of an earlier boot (their heaps are gone). Returns the store's
    // instance id, which names its heap files. Safe when many processes open a fresh store at
    // once.
    static std::string Prepare(LmdbEnv &env, uint32_t shard = 0, uint32_t shards = 1);
    // What Prepare recorded, read without writing (for tools that look at a store in place):
    // the instance id (empty: the store was never prepared) and whether it was last prepared
    // in this boot of the machine (if not, its volatile regions' heaps are gone, and the next
    // Prepare drops their records).
    struct Identity {
        std::string instance;
        bool this_boot = false;
    };
    static Identity ReadIdentity(LmdbEnv &env);

    // `servers[i]` is the memory server with id i.
    MetadataStore(std::shared_ptr<LmdbEnv> env, std::vector<MemoryServer *> servers,
                  PlacementOptions options);
    ~MetadataStore() override;
    MetadataStore(const MetadataStore &) = delete;
    MetadataStore &operator=(const MetadataStore &) = delete;

    using MetadataService::CreateRegion;
    RegionInfo CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                            const Fam_Region_Attributes &attributes, const RegionIntent &intent,
                            const Caller &caller) override;
    void DestroyRegion(uint64_t region_id, const Caller &caller) override;
    RegionInfo ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) override;
    RegionInfo LookupRegion(const std::string &name, const Caller &caller) override;
    RegionInfo GetRegion(uint64_t region_id, const Caller &caller) override;
    void ChangeRegionPermissions(uint64_t region_id, uint32_t perm, const Caller &caller) override;

    ItemInfo AllocateItem(uint64_t region_id, const std::string &name, uint64_t size, uint32_t perm,
                          const Caller &caller) override;
    void DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) override;
    ItemInfo LookupItem(const std::string &item, const std::string &region,
                        const Caller &caller) override;
    ItemInfo GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) override;
    void ChangeItemPermissions(uint64_t region_id, uint64_t offset, uint32_t perm,
                               const Caller &caller) override;
    void Sync() override;

    // Every region with its item count and free bytes (for `fampool status` and `ls`).
    struct RegionUsage {
        RegionInfo region;
        uint64_t items = 0, free_bytes = 0, used_bytes = 0;  // free: slack included
    };
    std::vector<RegionUsage> ListRegions();
    std::vector<ItemInfo> ListItems(uint64_t region_id, const Caller &caller);
    // Bytes each server (by id) holds for this store's regions: per extent, its region's share
    // or what items hold there, whichever is more (metadata_capacity.cc).
    std::vector<uint64_t> ServerUsage();
    // Each server's memory (kind, speed, capacity, node): ServerProfiles (store_caches.h).
    std::vector<MemoryProfile> Profiles() { return profiles_.Get(); }
    // A memory server restarted: its keys are void, and its volatile regions are gone with its
    // heaps; their records and names are released (and their other extents destroyed).
    void ServerRestarted(uint64_t server_id);
    // Small named values kept with the metadata (e.g. each server's last seen incarnation).
    std::string GetValue(const std::string &name);
    void SetValue(const std::string &name, const std::string &value);
    // Zeroes and frees the deallocated items of `region_id` (every region: kAllRegions) still
    // waiting for it; returns how many were freed. Items whose server cannot be reached wait
    // for the next call; the first such failure goes to `error` when it is not null.
    static constexpr uint64_t kAllRegions = ~uint64_t{0};
    size_t Scrub(uint64_t region_id, std::string *error);

    // Redundant regions (metadata_redundancy.cc).
    // Every redundant region.
    std::vector<RegionInfo> RedundantRegions();
    // Memory server `server_id` died: each member on it is lost (its bytes are read from the
    // others from now on). Returns the regions that changed.
    std::vector<RegionInfo> ServerLost(uint64_t server_id);
    // A server declared dead answers again (it was stopped, not killed): the keys of its lost
    // members stop working, so that a client that did not notice cannot read their stale bytes.
    void FenceLostMembers(uint64_t server_id);
    // Where a lost member may be rebuilt, among the servers `alive`: its own server back (a
    // replacement), else a spare, else (unless `automatic`) any server that holds no member
    // its loss could take along (RAID1: not the other copy's server; RAID5: no member at
    // all), in another failure domain first. None: no such server is alive.
    std::optional<uint64_t> RebuildTarget(const RegionInfo &region, size_t member,
                                          const std::set<uint64_t> &alive, bool automatic);
    // Puts the member on `target`, in a fresh extent, as kRebuilding: from now on clients
    // write there too.
    RegionInfo StartRebuild(uint64_t region_id, size_t member, uint64_t target);
    // The member, still on `target`, holds its bytes again: kHealthy.
    void FinishRebuild(uint64_t region_id, size_t member, uint64_t target);
    // Its rebuild failed: the member, if still being rebuilt on `target`, is lost again (to be
    // rebuilt by a later attempt).
    void AbortRebuild(uint64_t region_id, size_t member, uint64_t target);
    // A member's whole extent, writable: what memory servers rebuilding it reach it with.
    ServerAccess MemberKey(const RegionInfo &region, size_t member);
    uint64_t ExtentSize(const RegionInfo &region);
    bool IsSpare(uint64_t server_id) const {
        return server_id < options_.spares.size() && options_.spares[server_id];
    }

  private:
    // Capacity (metadata_capacity.cc). ServerUsage within a transaction of the caller's.
    std::vector<uint64_t> ServerUsage(const Txn &txn);
    // The capacity the cluster gives server `server_id` (0: no limit), and whether any server
    // of the region has one.
    uint64_t CapacityOf(uint64_t server_id) const;
    bool CapacityLimited(const RegionInfo &region) const;
    // What data column `index` of the region would hold more, counted as ServerUsage counts
    // it, with `nbytes` more given to items there.
    static uint64_t ExtraHeld(const Txn &txn, const RegionInfo &region, const store::Layout &layout,
                              uint64_t index, uint64_t nbytes);
    // Which server of the region would go past its capacity, holding `more[index]` bytes more
    // on each extent of data column `index` on top of `usage` (ServerUsage), described; empty
    // when none would.
    std::string OverCapacity(const std::vector<uint64_t> &usage, const RegionInfo &region,
                             const std::vector<uint64_t> &more) const;
    // Throws FAM_ERR_NO_SPACE, naming the server, unless the region fits its servers'
    // capacity at layout `after` (`before`: its layout now; extent_size 0 for a new region).
    void RequireCapacity(const Txn &txn, const RegionInfo &region, const store::Layout &before,
                         const store::Layout &after, uint64_t size, const char *action);

    // The memory server with this id; FAM_ERR_RESOURCE when the configuration has none (a
    // region placed on an embedded memory tier since removed from memory_tiers).
    MemoryServer &Server(uint64_t id) const;
    // The servers `ids` as intent-based placement sees them: profile, domain, and free bytes
    // from `usage` (bytes placed per server; empty: free space not counted).
    std::vector<PlacementCandidate> AsCandidates(const std::vector<uint64_t> &ids,
                                                 const std::vector<uint64_t> &usage);
    // A rebuild of `member` on `target` ends: the member gets `state`, if it is still being
    // rebuilt there (false otherwise).
    bool EndRebuild(uint64_t region_id, size_t member, uint64_t target, uint8_t state);
    // Refuses a redundancy level this service cannot keep: FAM_ERR_RESOURCE with fewer memory
    // servers than the level needs (RAID1 2, RAID5 3; the embedded model has one);
    // FAM_ERR_INVALID for unknown levels and for RAID5 without interleaving (its stripe unit).
    void CheckRedundancy(const std::string &name, const Fam_Region_Attributes &attributes) const;
    // RAID1: the server of each extent's copy, never the extent's own server, in another
    // failure domain when there is one, spread by rotation.
    // `candidates`: the servers copies may go to.
    std::vector<uint64_t> PlaceCopies(const std::vector<uint64_t> &servers,
                                      const std::vector<uint64_t> &candidates) const;
    // The servers that hold this kind of memory.
    std::vector<uint64_t> Candidates(Fam_Memory_Type memory) const;
    // The item as the caller may see it (store::Govern), with the fabric keys it may use.
    ItemInfo Finish(ItemInfo item, const Caller &caller);
    // The memory servers of a new region (ids, ascending). With an intent, `reason` gets why.
    std::vector<uint64_t> PlaceRegion(const std::string &name, uint64_t size, bool interleaved,
                                      const Fam_Region_Attributes &attributes,
                                      const RegionIntent &intent, std::string *reason);
    ItemInfo AllocateOnce(uint64_t region_id, const std::string &name, uint64_t size, uint32_t perm,
                          const Caller &caller);
    using ItemSpan = std::pair<uint64_t, uint64_t>;  // an item's offset and size
    // Adds what zeroing `items` of `region` asks of each of its memory servers to `per_server`
    // (memory server id -> extents and their ranges).
    static void AddZeroing(const RegionInfo &region, const std::vector<ItemSpan> &items,
                           std::map<uint64_t, std::vector<ExtentRanges>> *per_server);
    void ZeroItems(const RegionInfo &region, const std::vector<ItemSpan> &items);
    void FreeItemSpace(Txn &txn, const RegionInfo &region, uint64_t offset, uint64_t size);
    void RunScrubber();

    std::shared_ptr<LmdbEnv> env_;
    std::vector<MemoryServer *> servers_;
    PlacementOptions options_;
    KeyGrants grants_{[this](uint64_t id) -> MemoryServer & { return Server(id); }};
    ServerProfiles profiles_{options_.profiles, servers_.size(),
                             [this](uint64_t id) -> MemoryServer & { return Server(id); }};
    std::atomic<uint64_t> round_robin_{0};
    // One scrub pass at a time: a range freed by one pass must never be zeroed again by
    // another after it was handed out.
    std::mutex scrub_mutex_;
    std::mutex scrubber_mutex_;
    std::condition_variable scrubber_wake_;
    bool scrub_pending_ = true;  // leftovers of an earlier run are scrubbed at start
    std::atomic<bool> stopping_{false};
    std::thread scrubber_;
};

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_STORE_H_
