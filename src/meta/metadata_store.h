// The metadata service's logic over LMDB: regions, items, names and permissions. What else it
// keeps is a class of its own, each of one kind of record: MemberRecords (the members of
// redundant regions), ScrubQueue (deallocated items still to be zeroed), ExtentAllocator (the
// free space of every extent), KeyGrants and ServerProfiles (kept in memory). The embedded model
// calls it in-process, with several processes of the node sharing one store; the metadata server
// will call it behind gRPC.
//
// Tables (keys are big-endian so that byte order is numeric order):
//   meta           "instance" | "next_region" | "boot_id" | "shard"  -> value
//   regions        region id                                -> region record
//   region_names   region name                              -> region id
//   items          region id, offset                        -> item record
//   item_names     region id, item name                     -> offset
//   free_by_*      see ExtentAllocator
//   scrub          see ScrubQueue: region id, offset        -> size of a deallocated item
//                  whose bytes are still to be zeroed before its space is free again
//
// Free space always reads as zeros: a new extent is zero, and a deallocated item's bytes are
// zeroed before its space returns to the allocator, so allocation never waits for zeroing.
#ifndef FAMPOOL_META_METADATA_STORE_H_
#define FAMPOOL_META_METADATA_STORE_H_

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/memory_server.h"
#include "common/quotas.h"
#include "meta/client/metadata_service.h"
#include "meta/intent_placement.h"
#include "meta/lmdb.h"
#include "meta/member_records.h"
#include "meta/placement_options.h"
#include "meta/scrub_queue.h"
#include "meta/store_caches.h"

namespace fampool {

namespace store {
struct Layout;
struct PlacedExtent;
}  // namespace store

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

    // The members of redundant regions, lost and rebuilt (member_records.h).
    MemberRecords &Members() { return members_; }
    // Held while a server's loss or restart is recorded: region creations in flight, which
    // record every member as healthy, finish first, and new ones wait.
    std::unique_lock<std::shared_mutex> HoldMembers();
    bool IsSpare(uint64_t server_id) const { return options_.spare(server_id); }
    // What a user's and a group's regions take (bytes as quotas count them, and regions).
    struct QuotaTaken {
        uint64_t user_bytes = 0, user_regions = 0, group_bytes = 0, group_regions = 0;
    };
    using QuotaElsewhere = std::function<QuotaTaken(uint32_t uid, uint32_t gid)>;
    // The bytes and regions each user and group may own (metadata_quotas.cc); `cluster_user`,
    // who runs the service, has no bound. `elsewhere` (several shards): what the other shards'
    // regions take, asked before a region is made or grown. Set before the first call.
    void SetQuotas(Quotas quotas, uint32_t cluster_user, QuotaElsewhere elsewhere = nullptr);
    // What the regions of `uid` and of group `gid` take of this store.
    QuotaTaken TakenBy(uint32_t uid, uint32_t gid);

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

    // Throws FAM_ERR_NO_SPACE, naming the quota, unless the region's owner and group may own
    // it at layout `after` (`before`: its layout now; extent_size 0 for a new region).
    // `elsewhere`: what the owner's and group's regions take of other shards.
    void RequireQuota(const Txn &txn, const RegionInfo &region, const store::Layout &before,
                      const store::Layout &after, uint64_t size, const char *action,
                      const QuotaTaken &elsewhere);
    // What QuotaElsewhere says for the region's owner and group; nothing when no quota binds
    // them or there is one shard.
    QuotaTaken TakenElsewhere(const RegionInfo &region);

    // The memory server with this id; FAM_ERR_RESOURCE when the configuration has none (a
    // region placed on an embedded memory tier since removed from memory_tiers).
    MemoryServer &Server(uint64_t id) const;
    // Runs call(e) for each of `extents` and returns what each threw (null: it returned), by
    // index: at the same time when the servers are remote, so that a step on a region's S
    // servers waits one round trip rather than S (common/at_once.h).
    std::vector<std::exception_ptr> OnExtents(
        const std::vector<store::PlacedExtent> &extents,
        const std::function<void(const store::PlacedExtent &)> &call) const;
    // Destroys these extents (at once), each whose server fails left as it is.
    void DestroyExtents(const std::vector<store::PlacedExtent> &extents) const;
    // The servers `ids` as intent-based placement sees them: profile, domain, and free bytes
    // from `usage` (bytes placed per server; empty: free space not counted).
    std::vector<PlacementCandidate> AsCandidates(const std::vector<uint64_t> &ids,
                                                 const std::vector<uint64_t> &usage);
    // Refuses a redundancy level this service cannot keep: FAM_ERR_RESOURCE with fewer memory
    // servers than the level needs (RAID1 2, RAID5 3; the embedded model has one);
    // FAM_ERR_INVALID for unknown levels and for RAID5 without interleaving (its stripe unit).
    void CheckRedundancy(const std::string &name, const Fam_Region_Attributes &attributes) const;
    // RAID1: the server of each extent's copy, never the extent's own server, in another
    // failure domain when there is one, spread by rotation.
    // `candidates`: the servers copies may go to.
    std::vector<uint64_t> PlaceCopies(const std::vector<uint64_t> &servers,
                                      const std::vector<uint64_t> &candidates) const;
    // The item as the caller may see it (store::Govern), with the fabric keys it may use.
    ItemInfo Finish(ItemInfo item, const Caller &caller);
    // The memory servers of a new region (ids, ascending). With an intent, `reason` gets why.
    std::vector<uint64_t> PlaceRegion(const std::string &name, uint64_t size, bool interleaved,
                                      const Fam_Region_Attributes &attributes,
                                      const RegionIntent &intent, std::string *reason);
    ItemInfo AllocateOnce(uint64_t region_id, const std::string &name, uint64_t size, uint32_t perm,
                          const Caller &caller);

    std::shared_ptr<LmdbEnv> env_;
    std::vector<MemoryServer *> servers_;
    PlacementOptions options_;
    ServerLookup server_{[this](uint64_t id) -> MemoryServer & { return Server(id); }};
    KeyGrants grants_{server_};
    ServerProfiles profiles_{options_.profiles, servers_.size(), server_};
    MemberRecords members_{env_, servers_.size(), server_, grants_, options_};
    std::shared_mutex membership_;  // see HoldMembers
    std::atomic<uint64_t> round_robin_{0};
    Quotas quotas_;
    uint32_t cluster_user_ = 0;
    QuotaElsewhere elsewhere_;
    // Declared last: its thread, stopped first, uses the members above.
    ScrubQueue scrub_{env_, server_, grants_, options_.scrub_in_background, options_.grant_keys};
};

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_STORE_H_
