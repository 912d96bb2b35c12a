// ScrubQueue: zeroing deallocated space before it is free again, in the call (embedded model)
// or on the queue's thread in rounds (memory-server model).
#include "meta/scrub_queue.h"

#include <chrono>
#include <cstdio>
#include <set>

#include "common/error.h"
#include "meta/extent_allocator.h"
#include "meta/records.h"
#include "meta/store_internals.h"

namespace fampool {

using namespace store;

ScrubQueue::ScrubQueue(std::shared_ptr<LmdbEnv> env, ServerLookup server, KeyGrants &grants,
                       bool background, bool revoke)
    : env_(std::move(env)),
      server_(std::move(server)),
      grants_(grants),
      background_(background),
      revoke_(revoke) {
    if (background_) thread_ = std::thread([this] { Run(); });
}

ScrubQueue::~ScrubQueue() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(wake_mutex_);
        stopping_.store(true);
    }
    wake_.notify_all();
    thread_.join();
}

void ScrubQueue::Release(Txn &txn, const RegionInfo &region, uint64_t offset, uint64_t size) {
    if (background_) {
        // The space stays taken until a round has zeroed it; the record survives a crash.
        txn.Put(Table::kScrub, Key(region.id, offset), Key(size));
        return;
    }
    ZeroItems(region, {{offset, size}});
    FreeItemSpace(txn, region, offset, size);
}

void ScrubQueue::Deallocated(const RegionInfo &region, uint64_t offset, uint64_t size) {
    if (background_) {
        bool wake = false;  // only a thread that is not already on its way needs waking
        {
            std::lock_guard<std::mutex> lock(wake_mutex_);
            wake = !pending_;
            pending_ = true;
        }
        if (wake) wake_.notify_one();
        return;
    }
    // In the background, the thread revokes the item's keys before it zeroes the bytes:
    // nothing written with them can land in space that is free again.
    if (revoke_ && region.attributes.permissionLevel == DATAITEM) {
        grants_.Revoke(region, offset, size);
    }
}

void ScrubQueue::AddZeroing(const RegionInfo &region, const std::vector<ItemSpan> &items,
                            std::map<uint64_t, std::vector<ExtentRanges>> *per_server) {
    Layout layout = LayoutOf(region);
    // Every member of a redundant region: copies as well, and RAID5's parity, whose stripes
    // (items take whole stripes) then hold the XOR of zeros. A lost member is rebuilt from
    // the others.
    for (const PlacedExtent &each : ExtentsOf(region)) {
        if (StateOf(region, each.member) == kLost) continue;
        ExtentRanges extent{each.extent, {}};
        for (auto [offset, size] : items) {
            auto [begin, end] = PhysicalRange(layout, offset, size, each.index);
            if (end > begin) extent.ranges.emplace_back(begin, end - begin);
        }
        if (!extent.ranges.empty()) (*per_server)[each.server].push_back(std::move(extent));
    }
}

void ScrubQueue::ZeroItems(const RegionInfo &region, const std::vector<ItemSpan> &items) {
    std::map<uint64_t, std::vector<ExtentRanges>> per_server;
    AddZeroing(region, items, &per_server);
    for (const auto &[server, extents] : per_server) server_(server).ZeroExtents(extents);
}

void ScrubQueue::FreeItemSpace(Txn &txn, const RegionInfo &region, uint64_t offset, uint64_t size) {
    Layout layout = LayoutOf(region);
    if (layout.interleaved()) {
        ExtentAllocator::Free(txn, AllocatorOf(region.id, kVirtualExtent), offset,
                              RoundUp(size, layout.unit()));
    } else {
        ExtentAllocator::Free(txn, AllocatorOf(region.id, ServerIndexOf(offset)),
                              PhysicalOf(offset), size);
    }
}

size_t ScrubQueue::Scrub(uint64_t region_id, std::string *error) {
    // Items per pass, whatever their regions: each memory server gets one call per pass (one
    // per region cost a client of the service 10-20% of a core with 16 regions in use).
    constexpr size_t kBatch = 4096;
    size_t freed = 0;
    std::set<uint64_t> failed;  // regions whose zeroing failed: they wait for the next call
    for (;;) {
        if (stopping_.load()) return freed;  // shutting down: the rest waits for the restart
        // One pass at a time, the lock released between passes: an allocation that found its
        // region full waits for one pass, not for a whole sweep.
        std::lock_guard<std::mutex> lock(pass_mutex_);
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
            if (revoke_ && region.attributes.permissionLevel == DATAITEM) {
                for (auto [offset, size] : items) grants_.Revoke(region, offset, size);
            }
            AddZeroing(region, items, &per_server);
        }
        std::map<uint64_t, std::string> failures;  // region -> why
        for (const auto &[server, extents] : per_server) {
            try {
                server_(server).ZeroExtents(extents);
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
                        server_(server).ZeroExtents({extent});
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

void ScrubQueue::Run() {
    // Retries what failed (a memory server down) at this period.
    constexpr auto kRetry = std::chrono::seconds(1);
    constexpr auto kGather = std::chrono::milliseconds(5);
    std::unique_lock<std::mutex> lock(wake_mutex_);
    bool failed = false;
    std::string reported;  // the failure last logged: a server down for long is logged once
    for (;;) {
        wake_.wait_for(lock, kRetry, [&] { return stopping_ || pending_; });
        if (stopping_) return;
        if (!pending_ && !failed) continue;
        // Let deallocations gather first: one round per item cost a memory-server call per
        // deallocation, CPU the callers of the service need (one client's allocate+deallocate
        // rate went up 30-50% with the rounds gathered). Nobody waits for a round: an
        // allocation that finds its region full scrubs it at once (AllocateItem).
        wake_.wait_for(lock, kGather, [&] { return stopping_.load(); });
        if (stopping_) return;
        pending_ = false;
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

}  // namespace fampool
