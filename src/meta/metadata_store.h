// The metadata service's logic over LMDB: regions, items, names, permissions and (through
// ExtentAllocator) the free space of every extent. The embedded model calls it in-process, with
// several processes of the node sharing one store; the metadata server will call it behind gRPC.
//
// Tables (keys are big-endian so that byte order is numeric order):
//   meta           "instance" | "next_region" | "boot_id"  -> value
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
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/memory_server.h"
#include "meta/lmdb.h"
#include "meta/metadata_service.h"

namespace fampool {

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
    std::string policy = "hash";   // "hash" (by region name) or "least-used" (fewest bytes)
    // By server id: the regions each holds, "volatile", "persistent" or "" (both); empty: every
    // server holds both.
    std::vector<std::string> memory_types;
    bool grant_keys = false;       // fill ItemInfo::access with fabric keys (memory-server model)
    // Zero deallocated items on a thread of the store (the metadata server, whose memory
    // servers are a round trip away) rather than inside fam_deallocate (embedded: a memset).
    bool scrub_in_background = false;
};

class MetadataStore : public MetadataService {
  public:
    // Opens the store's tables and, the first time, writes its identity. Drops the volatile
    // regions of an earlier boot (their heaps are gone). Returns the store's instance id, which
    // names its heap files. Safe when many processes open a fresh store at once.
    static std::string Prepare(LmdbEnv &env);

    // `servers[i]` is the memory server with id i.
    MetadataStore(std::shared_ptr<LmdbEnv> env, std::vector<MemoryServer *> servers,
                  PlacementOptions options);
    ~MetadataStore() override;
    MetadataStore(const MetadataStore &) = delete;
    MetadataStore &operator=(const MetadataStore &) = delete;

    RegionInfo CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                            const Fam_Region_Attributes &attributes, const Caller &caller) override;
    void DestroyRegion(uint64_t region_id, const Caller &caller) override;
    RegionInfo ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) override;
    RegionInfo LookupRegion(const std::string &name, const Caller &caller) override;
    RegionInfo GetRegion(uint64_t region_id, const Caller &caller) override;
    void ChangeRegionPermissions(uint64_t region_id, uint32_t perm, const Caller &caller) override;

    ItemInfo AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
                          uint32_t perm, const Caller &caller) override;
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
        uint64_t items = 0, free_bytes = 0;
    };
    std::vector<RegionUsage> ListRegions();
    std::vector<ItemInfo> ListItems(uint64_t region_id, const Caller &caller);
    // Bytes of all extents placed on each server.
    std::vector<uint64_t> ServerUsage();
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

  private:
    // Refuses a redundancy level this service cannot keep (this version keeps no copies or
    // parity): FAM_ERR_RESOURCE with fewer memory servers than the level needs (the embedded
    // model has one), FAM_ERR_UNIMPL with enough of them; FAM_ERR_INVALID for unknown levels.
    void CheckRedundancy(const std::string &name, Fam_Redundancy_Level level) const;
    ItemInfo Finish(ItemInfo item, const Caller &caller);
    void ForgetGrants(uint64_t region_id);
    void RevokeItemGrants(const RegionInfo &region, uint64_t offset, uint64_t size);
    // The memory servers of a new region (ids, ascending).
    std::vector<uint64_t> PlaceRegion(const std::string &name, uint64_t size, bool interleaved,
                                      Fam_Memory_Type memory);
    ItemInfo AllocateOnce(uint64_t region_id, const std::string &name, uint64_t size,
                          uint32_t perm, const Caller &caller);
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
    std::mutex grants_mutex_;
    // (region, server index, offset, size, writable) -> key; offset/size 0: the whole extent.
    std::map<std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, bool>, KeyGrant> grants_;
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
