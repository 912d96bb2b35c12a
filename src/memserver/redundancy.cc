#include "memserver/redundancy.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "common/atomic_apply.h"
#include "common/error.h"
#include "common/parity.h"
#include "common/test_hold.h"
#include "memserver/member_io.h"
#include "memserver/memory_server_metrics.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

// Atomics remembered by op_id; sent to a rebuilt copy at most this many to a request.
constexpr size_t kRecalled = 1 << 16;
constexpr int kMostRemembered = 1024;
// A resync writes up to kResyncBatch bytes at once (many transfers in flight), then checks
// them kResyncChunk at a time; a chunk that changed is copied again alone, at most
// kResyncAttempts times (a client rewriting the same bytes without pause).
constexpr uint64_t kResyncBatch = 16 << 20;
constexpr uint64_t kResyncChunk = 1 << 20;
constexpr int kResyncAttempts = 1000;
// Ranges a populate request may name (a rebuild names its first ones only).
constexpr int kMostPopulateRanges = 65536;
// Populate requests whose pages are being made at once, at most.
constexpr int kPopulating = 2;
// Threads that make one request's pages (heap::PopulateForWrite): one per core, up to 4. With
// one, a 4 GiB first put over tcp on this project's 2-core machine ran at 1.49 GB/s (median of
// 10 trials), with two at 1.62: the pages were made in 1.7-2.4 s of the put's 2.2-2.7 s.
const unsigned kPopulatingThreads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
// How long a mirror waits for the copy's word. The copy's server holds it while it applies an
// atomic of its own and mirrors that here (two copies applying at once, for clients with two
// views of the region: one from before a rebuild ended, one from after), and this server
// holds its own word meanwhile: one of the two gives up after this long, undoes its change
// and answers busy, and its client makes the atomic again on a fresh view.
constexpr std::chrono::milliseconds kMirrorWait{50};

uint64_t Mix(uint64_t a, uint64_t b) {
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ull;
}

}  // namespace

bool RedundancyService::Recall(const std::string &op_id, ExtentRef extent, uint64_t life,
                               Applied *applied) {
    if (op_id.empty()) return false;
    std::lock_guard<std::mutex> lock(recall_mutex_);
    auto found = recall_.find(op_id);
    if (found == recall_.end() || found->second.extent != extent.region_id * 2 + extent.copy ||
        found->second.life != life) {
        return false;
    }
    *applied = found->second.applied;
    return true;
}

void RedundancyService::Remember(const std::string &op_id, ExtentRef extent, uint64_t life,
                                 const Applied &applied) {
    if (op_id.empty()) return;
    Recalled recalled{applied, extent.region_id * 2 + extent.copy, life};
    std::lock_guard<std::mutex> lock(recall_mutex_);
    auto [at, fresh] = recall_.emplace(op_id, recalled);
    if (!fresh) {
        at->second = recalled;
        return;
    }
    recall_order_.push_back(op_id);
    if (recall_order_.size() > kRecalled) {
        recall_.erase(recall_order_.front());
        recall_order_.pop_front();
    }
}

std::timed_mutex &RedundancyService::WordLock(const rpc::Extent &extent, uint64_t offset) {
    return word_locks_[Mix(extent.region_id() * 2 + extent.copy(), offset / 16) %
                       word_locks_.size()];
}

void RedundancyService::Atomic(const rpc::AtomicRequest &request, rpc::AtomicReply *reply) {
    auto type = static_cast<DataType>(request.type());
    size_t size = SizeOf(type);
    ExtentRef extent = FromProto(request.extent());
    // The word, held until the copy holds its new value too (or the change is undone): the
    // atomics of the two copies' servers on one word take both words' locks, so that they
    // apply in one order on both copies, whichever copy each client applies at.
    std::unique_lock<std::timed_mutex> word(WordLock(request.extent(), request.offset()));
    std::shared_ptr<HeapMapping> hold;
    bool fetch = static_cast<AtomicOp>(request.op()) == AtomicOp::kFetch;
    uint64_t life = 0;  // of the extent the key reached: what it applies to is that life's
    char *at = local_->Reach(extent, request.key(), request.offset(), size, !fetch,
                             "a redundant atomic", &hold, &life);
    Applied applied;
    bool again = Recall(request.op_id(), extent, life, &applied);  // a retry: applied already
    std::string after = applied.value;  // a retry's: the word's value right after it applied
    char before[16] = {};
    if (!again) {
        CopyFamBytes(before, at, size);
        char old[16] = {};
        ApplyAtomic(at, static_cast<AtomicOp>(request.op()), type, request.operand().data(),
                    request.compare().empty() ? nullptr : request.compare().data(), old);
        applied.result.assign(old, size);
    }
    char value[16];
    CopyFamBytes(value, at, size);
    applied.value.assign(value, size);
    if (request.has_mirror() && !request.mirror().fabric_address().empty()) {
        MirrorWrite mirror;
        mirror.extent = FromProto(request.mirror().extent());
        mirror.key = request.mirror().key();
        mirror.offset = request.offset();
        mirror.value = applied.value;  // the word as it is now (a retry: with later atomics)
        mirror.op_id = request.op_id();
        mirror.result = applied.result;
        HoldAt("mirror.applied");
        try {
            peer_(request.mirror().server_id()).Mirror(mirror);
            MarkAhead(extent, life, request.offset(), false);
        } catch (const Failure &failure) {
            if (failure.fam_error() == openfam::FAM_ERR_TIMEOUT) {
                // Busy: the copy's server applies an atomic of its own to the word.
                if (!again) CopyFamBytes(at, before, size);
                reply->set_busy(true);
                return;
            }
            if (failure.fam_error() == openfam::FAM_ERR_ALREADYEXIST) {
                // The copy is ahead of this one (see MarkAhead): this word becomes the copy's,
                // and the client makes the atomic again.
                TakeCopysWord(request, at, again ? nullptr : before);
                reply->set_busy(true);
                return;
            }
            // Not answered: applied here, and the client makes it again (this server then
            // mirrors the word once more) until the copy answers or is declared lost.
            MarkAhead(extent, life, request.offset(), true);
            reply->set_mirror_failed(true);
        }
    }
    if (!again) Remember(request.op_id(), extent, life, applied);
    HoldAt("atomic.applied");
    reply->set_result(applied.result);
    // The change this atomic made (a retry's too, whatever came after it): what a RAID5
    // parity server counts in parity.
    reply->set_value(again ? after : applied.value);
    reply->set_repeat(again);
}

void RedundancyService::Mirror(const rpc::MirrorRequest &request) {
    uint64_t size = request.value().size();
    if (size == 0 && request.remembered_size() > 0) return TakeRemembered(request);
    if (size == 0 || size > 16) Fail(openfam::FAM_ERR_INVALID, "mirror request of {} bytes", size);
    std::unique_lock<std::timed_mutex> word(WordLock(request.extent(), request.offset()),
                                            std::defer_lock);
    if (!word.try_lock_for(kMirrorWait)) {
        Fail(openfam::FAM_ERR_TIMEOUT,
             "mirror of byte {} of region {}: the word is held by another atomic here (busy)",
             request.offset(), request.extent().region_id());
    }
    std::shared_ptr<HeapMapping> hold;
    uint64_t life = 0;
    char *to = local_->Reach(FromProto(request.extent()), request.key(), request.offset(), size,
                             true, "a mirrored atomic", &hold, &life);
    if (TakeAhead(FromProto(request.extent()), life, request.offset())) {
        Fail(openfam::FAM_ERR_ALREADYEXIST,
             "mirror of byte {} of region {}: this copy holds a change the other lacks (its "
             "mirror did not land); the other takes this copy's word",
             request.offset(), request.extent().region_id());
    }
    CopyFamBytes(to, request.value().data(), size);
    Remember(request.op_id(), FromProto(request.extent()), life,
             Applied{request.result(), request.value()});
}

void RedundancyService::MarkAhead(ExtentRef extent, uint64_t life, uint64_t offset, bool ahead) {
    AheadWord word{extent.region_id * 2 + extent.copy, life, offset};
    std::lock_guard<std::mutex> lock(ahead_mutex_);
    if (!ahead) {
        ahead_.erase(word);
        return;
    }
    if (!ahead_.insert(word).second) return;
    ahead_order_.push_back(word);
    if (ahead_order_.size() > kRecalled) {  // by then long taken or made again
        ahead_.erase(ahead_order_.front());
        ahead_order_.pop_front();
    }
}

bool RedundancyService::TakeAhead(ExtentRef extent, uint64_t life, uint64_t offset) {
    std::lock_guard<std::mutex> lock(ahead_mutex_);
    return ahead_.erase({extent.region_id * 2 + extent.copy, life, offset}) > 0;
}

void RedundancyService::TakeCopysWord(const rpc::AtomicRequest &request, char *at,
                                      const char *before) {
    size_t size = SizeOf(static_cast<DataType>(request.type()));
    MirroredAtomicCall fetch;
    fetch.extent = FromProto(request.mirror().extent());
    fetch.key = request.mirror().key();
    fetch.offset = request.offset();
    fetch.op = AtomicOp::kFetch;
    fetch.type = static_cast<DataType>(request.type());
    fetch.operand.assign(size, '\0');
    try {
        MirroredAtomicResult there = peer_(request.mirror().server_id()).MirroredAtomic(fetch);
        if (there.result.size() == size) return CopyFamBytes(at, there.result.data(), size);
    } catch (const Failure &) {
        // Not answered: as busy, this server's change undone (the next attempt tries again).
    }
    if (before) CopyFamBytes(at, before, size);
}

void RedundancyService::TakeRemembered(const rpc::MirrorRequest &request) {
    if (request.remembered_size() > kMostRemembered) {
        Fail(openfam::FAM_ERR_INVALID, "{} atomics to remember in one request (at most {})",
             request.remembered_size(), kMostRemembered);
    }
    // The key must reach the extent for writing, as a mirror's (its first byte).
    ExtentRef extent = FromProto(request.extent());
    std::shared_ptr<HeapMapping> hold;
    uint64_t life = 0;
    local_->Reach(extent, request.key(), 0, 1, true, "a rebuild's atomics", &hold, &life);
    for (const rpc::RememberedAtomic &each : request.remembered()) {
        if (each.op_id().empty() || each.result().size() > 16 || each.value().size() > 16) {
            Fail(openfam::FAM_ERR_INVALID,
                 "a remembered atomic with an id of {} bytes, a result of {} and a value of {}",
                 each.op_id().size(), each.result().size(), each.value().size());
        }
        Remember(each.op_id(), extent, life, Applied{each.result(), each.value()});
    }
}

void RedundancyService::SendRemembered(ExtentRef source, const rpc::Member &target) {
    std::vector<MirrorWrite::Remembered> all;
    {
        uint64_t life = local_->ExtentLife(source);
        std::lock_guard<std::mutex> lock(recall_mutex_);
        for (const auto &[op_id, recalled] : recall_) {
            if (recalled.extent == source.region_id * 2 + source.copy && recalled.life == life) {
                all.push_back({op_id, recalled.applied.result, recalled.applied.value});
            }
        }
    }
    for (size_t at = 0; at < all.size(); at += kMostRemembered) {
        MirrorWrite batch;
        batch.extent = FromProto(target.extent());
        batch.key = target.key();
        batch.remembered.assign(
            all.begin() + static_cast<ptrdiff_t>(at),
            all.begin() + static_cast<ptrdiff_t>(std::min(all.size(), at + kMostRemembered)));
        peer_(target.server_id()).Mirror(batch);
    }
}

void RedundancyService::Resync(const rpc::ResyncRequest &request) {
    ExtentRef extent = FromProto(request.extent());
    if (request.end() < request.begin()) Fail(openfam::FAM_ERR_INVALID, "resync of a bad range");
    // Atomics that reached this copy with keys revoked since, as the rebuild began (a client's
    // view that left the target out: no mirror), end before anything is copied: each holds
    // its word's lock from before its key is checked until it is done.
    for (std::timed_mutex &word : word_locks_) {
        word.lock();
        word.unlock();
    }
    // The atomics this copy answers retries of, first: their changes are in the bytes copied
    // next, and the target, once healthy, may be asked to make them again (the first copy's
    // server, being rebuilt itself, or not answering).
    SendRemembered(extent, request.target());
    auto mapping = local_->Map(extent, request.end());
    rpc::StripeRequest members;  // MemberIo's view: member 0 the target, this server member 1
    *members.add_members() = request.target();
    members.set_self(1);
    members.add_members();
    // Only what holds data: the target's extent is new, and its holes read as zeros already.
    // Copying the holes too cost a page fault per 4 KiB read and filled the target with pages
    // of zeros (a rebuilt member held more memory than the one it replaced).
    std::vector<std::pair<uint64_t, uint64_t>> ranges =
        heap::DataRanges(local_->HeapPath(extent), request.begin(), request.end());
    // The target's pages for them made at once, ahead of the writes, by its server: a write
    // into pages not yet there took 1.5-3x as long (a page fault per 4 KiB on its receive).
    try {
        std::vector<std::pair<uint64_t, uint64_t>> first(
            ranges.begin(), ranges.begin() + std::min<size_t>(ranges.size(), kMostPopulateRanges));
        peer_(request.target().server_id())
            .Populate(FromProto(request.target().extent()), request.target().key(), first);
    } catch (const Failure &) {
        // Only speed is lost (an older server); the writes below say if the target is gone.
    }
    std::vector<std::pair<uint64_t, uint64_t>> batches;  // (first byte, size)
    for (auto [begin, end] : ranges) {
        for (uint64_t at = begin; at < end; at += kResyncBatch) {
            batches.emplace_back(at, std::min(kResyncBatch, end - at));
        }
    }
    int64_t total = 0;
    for (const auto &batch : batches) total += static_cast<int64_t>(batch.second);
    RebuildWorkCounts &progress = RebuildWork();
    progress.bytes_left += total;
    int64_t left = total;  // what this resync still counts in bytes_left
    RebuildWorkLeft uncount{progress.bytes_left, left};
    // Two batches at a time: a batch's snapshot is taken and its write posted while the one
    // before is on its way; then the one before is checked while this one is.
    std::array<std::vector<char>, 2> snapshots;
    std::array<std::unique_ptr<MemberIo>, 2> writes;  // after the buffers they send
    for (size_t i = 0; i <= batches.size(); ++i) {
        if (i < batches.size()) {
            auto [at, size] = batches[i];
            std::vector<char> &snapshot = snapshots[i % 2];
            snapshot.resize(size);
            CopyFamBytes(snapshot.data(), mapping->base() + at, size);
            writes[i % 2] = std::make_unique<MemberIo>(local_, peers_, members);
            writes[i % 2]->Write(0, at, snapshot.data(), size);
        }
        if (i > 0) {
            auto [at, size] = batches[i - 1];
            writes[(i - 1) % 2]->Finish();
            writes[(i - 1) % 2].reset();
            RecopyChanged(extent, *mapping, members, at, snapshots[(i - 1) % 2]);
            progress.copied.Add(size);
            progress.bytes_left -= static_cast<int64_t>(size);
            left -= static_cast<int64_t>(size);
        }
    }
}

void RedundancyService::RecopyChanged(ExtentRef extent, const HeapMapping &mapping,
                                      const rpc::StripeRequest &members, uint64_t batch,
                                      std::vector<char> &snapshot) {
    // A client writes this copy first, then the rebuilding one: if a chunk here did not
    // change since the snapshot, no client write the snapshot missed has reached the target
    // before the snapshot's bytes did. A chunk that changed is copied again.
    uint64_t size = snapshot.size();
    for (uint64_t at = batch; at < batch + size; at += kResyncChunk) {
        uint64_t n = std::min(kResyncChunk, batch + size - at);
        char *copied = snapshot.data() + (at - batch);
        const char *here = mapping.base() + at;
        for (int attempt = 0; std::memcmp(copied, here, n) != 0; ++attempt) {
            if (attempt == kResyncAttempts) {
                Fail(openfam::FAM_ERR_RESOURCE,
                     "resync of region {}: bytes [{}, {}) changed under {} copies in a row",
                     extent.region_id, at, at + n, kResyncAttempts);
            }
            CopyFamBytes(copied, here, n);
            MemberIo io(local_, peers_, members);
            io.Write(0, at, copied, n);
            io.Finish();
        }
    }
}

void RedundancyService::Populate(const rpc::PopulateRequest &request) {
    if (request.begin_size() != request.end_size() || request.begin_size() > kMostPopulateRanges) {
        Fail(openfam::FAM_ERR_INVALID, "populate request of {} starts and {} ends (at most {})",
             request.begin_size(), request.end_size(), kMostPopulateRanges);
    }
    // Reached now, with the caller's key (refused here if it is wrong); made in the background.
    auto holds = std::make_shared<std::vector<std::shared_ptr<HeapMapping>>>();
    std::vector<std::pair<char *, uint64_t>> ranges;
    for (int i = 0; i < request.begin_size(); ++i) {
        uint64_t begin = request.begin(i), end = request.end(i);
        if (end <= begin) continue;
        std::shared_ptr<HeapMapping> hold;
        char *at = local_->Reach(FromProto(request.extent()), request.key(), begin, end - begin,
                                 true, "pages made ahead of writes", &hold);
        holds->push_back(std::move(hold));
        ranges.emplace_back(at, end - begin);
    }
    // At most kPopulating at a time (it only saves time; callers are not told): a caller
    // repeating the call makes no more threads.
    static std::atomic<int> running{0};
    if (ranges.empty() || running.fetch_add(1) >= kPopulating) {
        running.fetch_sub(1);
        return;
    }
    std::thread([holds, ranges] {
        heap::PopulateForWrite(ranges, kPopulatingThreads);
        running.fetch_sub(1);
    }).detach();
}

}  // namespace fampool
