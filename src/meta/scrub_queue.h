// The metadata store's `scrub` table: deallocated items whose bytes are still to be zeroed
// before their space is free again, and the thread that zeroes them (memory-server model).
// Without that thread (the embedded model) an item is zeroed and freed inside its
// deallocation. Internal to the metadata service.
#ifndef FAMPOOL_META_SCRUB_QUEUE_H_
#define FAMPOOL_META_SCRUB_QUEUE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/fam_objects.h"
#include "common/memory_server.h"
#include "meta/lmdb.h"
#include "meta/store_caches.h"

namespace fampool {

class ScrubQueue {
  public:
    // `background`: zero on a thread of the queue's own, in rounds (the metadata server, whose
    // memory servers are a round trip away); else in the deallocation (a memset). `revoke`:
    // the items' fabric keys are revoked (from `grants`) before their bytes are zeroed.
    ScrubQueue(std::shared_ptr<LmdbEnv> env, ServerLookup server, KeyGrants &grants,
               bool background, bool revoke);
    ~ScrubQueue();
    ScrubQueue(const ScrubQueue &) = delete;
    ScrubQueue &operator=(const ScrubQueue &) = delete;

    bool background() const { return background_; }

    // The item at `offset` of `region` (`size` bytes) was deallocated in `txn`: in the
    // background its space stays taken, recorded in the table (so that a crash does not lose
    // it), until a round has zeroed it; otherwise it is zeroed and freed at once. Call
    // Deallocated() once `txn` is committed.
    void Release(Txn &txn, const RegionInfo &region, uint64_t offset, uint64_t size);
    // After the commit of Release's transaction: wakes the thread, or revokes the item's keys
    // (the thread revokes them itself, before it zeroes the bytes).
    void Deallocated(const RegionInfo &region, uint64_t offset, uint64_t size);

    // Zeroes and frees the deallocated items of `region_id` (every region: kAllRegions) still
    // waiting for it; returns how many were freed. Items whose server cannot be reached wait
    // for the next call; the first such failure goes to `error` when it is not null.
    static constexpr uint64_t kAllRegions = ~uint64_t{0};
    size_t Scrub(uint64_t region_id, std::string *error);

  private:
    using ItemSpan = std::pair<uint64_t, uint64_t>;  // an item's offset and size
    // Adds what zeroing `items` of `region` asks of each of its memory servers to `per_server`
    // (memory server id -> extents and their ranges).
    static void AddZeroing(const RegionInfo &region, const std::vector<ItemSpan> &items,
                           std::map<uint64_t, std::vector<ExtentRanges>> *per_server);
    static void FreeItemSpace(Txn &txn, const RegionInfo &region, uint64_t offset, uint64_t size);
    void ZeroItems(const RegionInfo &region, const std::vector<ItemSpan> &items);
    void Run();

    std::shared_ptr<LmdbEnv> env_;
    ServerLookup server_;
    KeyGrants &grants_;
    const bool background_, revoke_;
    // One scrub pass at a time: a range freed by one pass must never be zeroed again by
    // another after it was handed out.
    std::mutex pass_mutex_;
    std::mutex wake_mutex_;
    std::condition_variable wake_;
    bool pending_ = true;  // leftovers of an earlier run are scrubbed at start
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace fampool

#endif  // FAMPOOL_META_SCRUB_QUEUE_H_
