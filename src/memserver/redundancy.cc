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
#include "memserver/memory_server_metrics.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

// The most bytes one stripe request may move (a gRPC message's limit).
constexpr uint64_t kMostStripeBytes = 64 << 20;
// Mirrored atomics remembered by op_id.
constexpr size_t kRecalled = 1 << 16;
// A resync writes up to kResyncBatch bytes at once (many transfers in flight), then checks
// them kResyncChunk at a time; a chunk that changed is copied again alone, at most
// kResyncAttempts times (a client rewriting the same bytes without pause).
constexpr uint64_t kResyncBatch = 16 << 20;
constexpr uint64_t kResyncChunk = 1 << 20;
constexpr int kResyncAttempts = 1000;

// Stripes a rebuild request recomputes under one set of locks.
constexpr uint64_t kRebuildBatch = 256;
// Ranges a populate request may name (a rebuild names its first ones only).
constexpr int kMostPopulateRanges = 65536;
// Populate requests whose pages are being made at once, at most.
constexpr int kPopulating = 2;
// Bounds of a client's stripe lease and of its wait for one. A lease covers transfers that
// each end within kMemberTimeoutMs of no progress (transport/redundant/redundant_transport.h);
// a request on a stripe whose client died waits for the lease to end, so it is short.
constexpr std::chrono::milliseconds kLongestLease{5000};
constexpr std::chrono::milliseconds kLongestLeaseWait{1000};

bool AllZero(const char *bytes, uint64_t n) {
    uint64_t any = 0;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        std::memcpy(&word, bytes + i, 8);
        any |= word;
    }
    for (; i < n; ++i) any |= static_cast<unsigned char>(bytes[i]);
    return any == 0;
}

uint64_t Mix(uint64_t a, uint64_t b) {
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ull;
}

}  // namespace

// Reads and writes of the members' physical bytes for one request: this server's own member
// through its heap (after checking the client's key), the others over the fabric with the
// client's keys, in the background until Finish.
class RedundancyService::MemberIo {
  public:
    MemberIo(RedundancyService &service, const rpc::StripeRequest &request)
        : service_(service), members_(request.members()), self_(request.self()) {}

    void Read(size_t m, uint64_t p, char *to, uint64_t n) {
        if (m == self_) {
            CopyFamBytes(to, Local(p, n, false), n);
        } else {
            Peer(m).Read(p, to, n);
        }
    }
    void Write(size_t m, uint64_t p, const char *from, uint64_t n) {
        if (m == self_) {
            CopyFamBytes(Local(p, n, true), from, n);
        } else {
            Peer(m).Write(p, from, n);
        }
    }
    char *Local(uint64_t p, uint64_t n, bool write) {
        const rpc::Member &me = members_[static_cast<int>(self_)];
        return service_.local_->Reach(FromProto(me.extent()), me.key(), p, n, write,
                                      "a RAID5 stripe", &hold_);
    }
    void Finish() {
        for (auto &[m, transfers] : peers_) transfers->Finish();
    }

  private:
    PeerTransfers &Peer(size_t m) {
        auto found = peers_.find(m);
        if (found != peers_.end()) return *found->second;
        const rpc::Member &member = members_[static_cast<int>(m)];
        if (member.fabric_address().empty()) {
            Fail(openfam::FAM_ERR_RESOURCE, "member {} of the region is lost (memory server {})", m,
                 member.server_id());
        }
        ItemLayout layout;
        layout.extent = FromProto(member.extent());
        layout.size = uint64_t{1} << 47;  // physical addressing: the member's whole extent
        layout.name = fmt::format("member {} of region {}", m, layout.extent.region_id);
        layout.servers.push_back({member.server_id(), member.fabric_address(), member.key(),
                                  member.base(), false, member.incarnation()});
        return *peers_.emplace(m, service_.peers_->Open(layout)).first->second;
    }

    RedundancyService &service_;
    const google::protobuf::RepeatedPtrField<rpc::Member> &members_;
    size_t self_;
    std::map<size_t, std::unique_ptr<PeerTransfers>> peers_;
    std::shared_ptr<HeapMapping> hold_;
};

bool RedundancyService::Recall(const std::string &op_id, std::string *result) {
    std::lock_guard<std::mutex> lock(recall_mutex_);
    auto found = recall_.find(op_id);
    if (found == recall_.end()) return false;
    *result = found->second;
    return true;
}

void RedundancyService::Remember(const std::string &op_id, const std::string &result) {
    std::lock_guard<std::mutex> lock(recall_mutex_);
    if (!recall_.emplace(op_id, result).second) return;
    recall_order_.push_back(op_id);
    if (recall_order_.size() > kRecalled) {
        recall_.erase(recall_order_.front());
        recall_order_.pop_front();
    }
}

std::mutex &RedundancyService::WordLock(const rpc::Extent &extent, uint64_t offset, bool mirrored) {
    auto &locks = mirrored ? mirror_locks_ : word_locks_;
    return locks[Mix(extent.region_id() * 2 + extent.copy(), offset / 16) % locks.size()];
}

void RedundancyService::Atomic(const rpc::AtomicRequest &request, rpc::AtomicReply *reply) {
    std::string result;
    if (Recall(request.op_id(), &result)) {  // applied already: a retry
        reply->set_result(result);
        return;
    }
    auto type = static_cast<DataType>(request.type());
    size_t size = SizeOf(type);
    ExtentRef extent = FromProto(request.extent());
    std::lock_guard<std::mutex> word(WordLock(request.extent(), request.offset()));
    if (Recall(request.op_id(), &result)) {
        reply->set_result(result);
        return;
    }
    char old[16] = {};
    local_->Atomic(extent, request.key(), request.offset(), request.op(), request.type(),
                   request.operand().data(),
                   request.compare().empty() ? nullptr : request.compare().data(), old);
    result.assign(old, size);
    if (request.has_mirror() && !request.mirror().fabric_address().empty()) {
        std::shared_ptr<HeapMapping> hold;
        const char *now = local_->Reach(extent, request.key(), request.offset(), size, false,
                                        "a mirrored atomic", &hold);
        MirrorWrite mirror;
        mirror.extent = FromProto(request.mirror().extent());
        mirror.key = request.mirror().key();
        mirror.offset = request.offset();
        char value[16];
        CopyFamBytes(value, now, size);
        mirror.value.assign(value, size);
        mirror.op_id = request.op_id();
        mirror.result = result;
        HoldAt("mirror.applied");
        try {
            peer_(request.mirror().server_id()).Mirror(mirror);
        } catch (const Failure &) {
            reply->set_mirror_failed(true);  // the copy's server is down: the client reports it
        }
    }
    Remember(request.op_id(), result);
    reply->set_result(result);
}

void RedundancyService::Mirror(const rpc::MirrorRequest &request) {
    uint64_t size = request.value().size();
    if (size == 0 || size > 16) Fail(openfam::FAM_ERR_INVALID, "mirror request of {} bytes", size);
    std::lock_guard<std::mutex> word(WordLock(request.extent(), request.offset(), true));
    std::shared_ptr<HeapMapping> hold;
    char *to = local_->Reach(FromProto(request.extent()), request.key(), request.offset(), size,
                             true, "a mirrored atomic", &hold);
    CopyFamBytes(to, request.value().data(), size);
    Remember(request.op_id(), request.result());
}

void RedundancyService::Resync(const rpc::ResyncRequest &request) {
    ExtentRef extent = FromProto(request.extent());
    if (request.end() < request.begin()) Fail(openfam::FAM_ERR_INVALID, "resync of a bad range");
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
            writes[i % 2] = std::make_unique<MemberIo>(*this, members);
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
            MemberIo io(*this, members);
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
    struct Range {
        char *at;
        uint64_t length;
    };
    auto holds = std::make_shared<std::vector<std::shared_ptr<HeapMapping>>>();
    std::vector<Range> ranges;
    for (int i = 0; i < request.begin_size(); ++i) {
        uint64_t begin = request.begin(i), end = request.end(i);
        if (end <= begin) continue;
        std::shared_ptr<HeapMapping> hold;
        char *at = local_->Reach(FromProto(request.extent()), request.key(), begin, end - begin,
                                 true, "a rebuild's pages", &hold);
        holds->push_back(std::move(hold));
        ranges.push_back({at, end - begin});
    }
    // At most kPopulating at a time (it only saves time; callers are not told): a caller
    // repeating the call makes no more threads.
    static std::atomic<int> running{0};
    if (ranges.empty() || running.fetch_add(1) >= kPopulating) {
        running.fetch_sub(1);
        return;
    }
    std::thread([holds, ranges] {
        for (const Range &range : ranges) heap::PopulateForWrite(range.at, range.length);
        running.fetch_sub(1);
    }).detach();
}

void RedundancyService::Stripe(const rpc::StripeRequest &request, rpc::StripeReply *reply) {
    uint64_t n = static_cast<uint64_t>(request.members_size());
    if (n < 3 || request.interleave() == 0 || request.self() >= n) {
        Fail(openfam::FAM_ERR_INVALID, "stripe request with {} members, interleave {}, self {}", n,
             request.interleave(), request.self());
    }
    uint64_t total = 0;
    for (const rpc::StripePiece &piece : request.pieces()) {
        if (piece.column() >= n - 1 || piece.length() == 0 ||
            piece.within() >= request.interleave() ||
            piece.length() > request.interleave() - piece.within() ||
            Raid5ParityMember(piece.stripe(), n) != request.self()) {
            Fail(openfam::FAM_ERR_INVALID,
                 "stripe request piece (stripe {}, column {}, bytes {}+{}) is not in a unit of a "
                 "stripe whose parity memory server {} holds",
                 piece.stripe(), piece.column(), piece.within(), piece.length(), local_->id());
        }
        total += piece.length();
        if (total > kMostStripeBytes) Fail(openfam::FAM_ERR_INVALID, "stripe request too large");
    }
    switch (request.op()) {
        case rpc::StripeRequest::READ:
        case rpc::StripeRequest::WRITE:
            if (request.op() == rpc::StripeRequest::WRITE && request.data().size() != total) {
                Fail(openfam::FAM_ERR_INVALID, "stripe write of {} bytes for pieces of {}",
                     request.data().size(), total);
            }
            return StripeReadOrWrite(request, reply);
        case rpc::StripeRequest::ATOMIC:
            return StripeAtomic(request, reply);
        case rpc::StripeRequest::REBUILD:
            return StripeRebuild(request);
        case rpc::StripeRequest::LEASE:
        case rpc::StripeRequest::RELEASE:
            return StripeLease(request, reply);
        default:
            Fail(openfam::FAM_ERR_INVALID, "unknown stripe operation {}", request.op());
    }
}

void RedundancyService::StripeReadOrWrite(const rpc::StripeRequest &request,
                                          rpc::StripeReply *reply) {
    uint64_t n = request.members_size(), unit = request.interleave(), self = request.self();
    bool write = request.op() == rpc::StripeRequest::WRITE;
    auto lost = [&](uint64_t m) {
        return request.members(static_cast<int>(m)).state() != kHealthy;
    };
    std::vector<uint64_t> stripes;
    for (const rpc::StripePiece &piece : request.pieces()) stripes.push_back(piece.stripe());
    StripeGate::Hold held(stripes_, request.members(0).extent().region_id(), stripes);
    RepairParity(request, held);
    // Full stripes (every data unit written whole, none lost): parity straight from the data.
    std::map<uint64_t, uint64_t> whole;  // stripe -> data units written whole
    if (write) {
        for (const rpc::StripePiece &piece : request.pieces()) {
            if (piece.within() == 0 && piece.length() == unit) ++whole[piece.stripe()];
        }
        for (auto it = whole.begin(); it != whole.end();) {
            bool any_lost = false;
            for (uint64_t c = 0; c < n - 1; ++c) any_lost |= lost(Raid5DataMember(it->first, c, n));
            it = it->second == n - 1 && !any_lost ? std::next(it) : whole.erase(it);
        }
    }
    // The old bytes of each piece (a lost or rebuilding member's rebuilt from the others:
    // parity here, and the other data units read into `others`).
    std::string old(write ? request.data().size() : 0, '\0');
    std::string &out = write ? old : *reply->mutable_data();
    uint64_t total = 0;
    for (const rpc::StripePiece &piece : request.pieces()) total += piece.length();
    if (!write) out.assign(total, '\0');
    std::vector<std::pair<uint64_t, std::vector<char>>> others;  // (position in out, bytes)
    // Declared after every buffer its transfers use, so that when a transfer fails it ends the
    // others (its destructor waits, or closes the endpoint) before those buffers go: declared
    // first, a failed peer read left reads in flight into freed memory (found by
    // tests/fuzz/memory_server_rpc_fuzz, AddressSanitizer in the provider's readv).
    MemberIo io(*this, request);
    uint64_t at = 0;
    for (const rpc::StripePiece &piece : request.pieces()) {
        uint64_t s = piece.stripe(), len = piece.length(), p = s * unit + piece.within();
        uint64_t d = Raid5DataMember(s, piece.column(), n);
        bool from_data = !lost(d) && !whole.count(s);
        if (whole.count(s)) {
            // nothing to read
        } else if (from_data) {
            io.Read(d, p, out.data() + at, len);
        } else {
            io.Read(self, p, out.data() + at, len);
            for (uint64_t m = 0; m < n; ++m) {
                if (m == d || m == self) continue;
                others.emplace_back(at, std::vector<char>(len));
                io.Read(m, p, others.back().second.data(), len);
            }
        }
        at += len;
    }
    io.Finish();
    HoldAt("stripe.write-read");
    for (auto &[position, bytes] : others)
        XorInto(out.data() + position, bytes.data(), bytes.size());
    if (!write) return;
    // Parity first, then the data units: a rebuild that reads them in between finds the
    // parity changed and recomputes.
    at = 0;
    std::map<uint64_t, std::vector<char>> parity;  // full stripes' parity
    for (const rpc::StripePiece &piece : request.pieces()) {
        uint64_t s = piece.stripe(), len = piece.length(), p = s * unit + piece.within();
        const char *fresh = request.data().data() + at;
        if (whole.count(s)) {
            std::vector<char> &sum = parity[s];
            if (sum.empty()) sum.assign(unit, 0);
            XorInto(sum.data(), fresh, len);
        } else {
            std::vector<char> delta(old.begin() + at, old.begin() + at + len);
            XorInto(delta.data(), fresh, len);
            char *mine = io.Local(p, len, true);
            std::vector<char> now(len);
            CopyFamBytes(now.data(), mine, len);
            XorInto(now.data(), delta.data(), len);
            CopyFamBytes(mine, now.data(), len);
        }
        at += len;
    }
    for (auto &[s, sum] : parity) io.Write(self, s * unit, sum.data(), unit);
    at = 0;
    for (const rpc::StripePiece &piece : request.pieces()) {
        uint64_t s = piece.stripe(), len = piece.length(), p = s * unit + piece.within();
        uint64_t d = Raid5DataMember(s, piece.column(), n);
        if (request.members(static_cast<int>(d)).state() != kLost) {
            io.Write(d, p, request.data().data() + at, len);
        }
        at += len;
    }
    io.Finish();
}

void RedundancyService::StripeAtomic(const rpc::StripeRequest &request, rpc::StripeReply *reply) {
    auto type = static_cast<DataType>(request.type());
    size_t size = SizeOf(type);
    if (request.pieces_size() != 1 || size == 0 || request.pieces(0).length() != size ||
        request.pieces(0).within() % size != 0 || request.operand().size() != size ||
        (!request.compare().empty() && request.compare().size() != size)) {
        Fail(openfam::FAM_ERR_INVALID, "malformed RAID5 atomic request");
    }
    const rpc::StripePiece &piece = request.pieces(0);
    uint64_t n = request.members_size(), unit = request.interleave(), self = request.self();
    uint64_t s = piece.stripe(), p = s * unit + piece.within();
    uint64_t d = Raid5DataMember(s, piece.column(), n);
    bool reconstruct = request.members(static_cast<int>(d)).state() != kHealthy;
    StripeGate::Hold held(stripes_, request.members(0).extent().region_id(), {s});
    RepairParity(request, held);
    char old[16] = {}, value[16] = {}, result[16] = {};
    std::vector<std::vector<char>> others;
    MemberIo io(*this, request);  // after the buffers it uses (see StripeReadOrWrite)
    if (reconstruct) {
        io.Read(self, p, old, size);
        for (uint64_t m = 0; m < n; ++m) {
            if (m == d || m == self) continue;
            others.emplace_back(size);
            io.Read(m, p, others.back().data(), size);
        }
    } else {
        io.Read(d, p, old, size);
    }
    io.Finish();
    HoldAt("stripe.atomic-read");
    for (const std::vector<char> &bytes : others) XorInto(old, bytes.data(), size);
    std::memcpy(value, old, size);
    ApplyAtomic(value, static_cast<AtomicOp>(request.atomic_op()), type, request.operand().data(),
                request.compare().empty() ? nullptr : request.compare().data(), result);
    char delta[16];
    std::memcpy(delta, old, size);
    XorInto(delta, value, size);
    char *mine = io.Local(p, size, true);
    char parity[16];
    CopyFamBytes(parity, mine, size);
    XorInto(parity, delta, size);
    CopyFamBytes(mine, parity, size);
    if (request.members(static_cast<int>(d)).state() != kLost) io.Write(d, p, value, size);
    io.Finish();
    HoldAt("stripe.atomic-applied");
    reply->set_data(result, size);
}

void RedundancyService::StripeLease(const rpc::StripeRequest &request, rpc::StripeReply *reply) {
    std::vector<uint64_t> stripes;
    for (const rpc::StripePiece &piece : request.pieces()) {
        if (piece.within() != 0 || piece.length() != request.interleave()) {
            Fail(openfam::FAM_ERR_INVALID, "stripe lease of a part of a unit");
        }
        stripes.push_back(piece.stripe());
    }
    uint64_t region = request.members(0).extent().region_id();
    if (request.op() == rpc::StripeRequest::RELEASE) {
        bool held = stripes_.Release(region, stripes, request.lease_owner(), !request.incomplete());
        return reply->set_data(held ? "\1" : std::string(1, '\0'));
    }
    if (request.lease_ms() == 0 || request.lease_ms() > kLongestLease.count() ||
        request.wait_ms() > kLongestLeaseWait.count()) {
        Fail(openfam::FAM_ERR_INVALID,
             "stripe lease of {} ms, waiting {} ms (at most {} ms and {} ms)", request.lease_ms(),
             request.wait_ms(), kLongestLease.count(), kLongestLeaseWait.count());
    }
    bool taken = stripes_.Lease(region, stripes, request.lease_owner(),
                                std::chrono::milliseconds(request.lease_ms()),
                                std::chrono::milliseconds(request.wait_ms()));
    reply->set_data(taken ? "\1" : std::string(1, '\0'));
}

void RedundancyService::StripeRebuild(const rpc::StripeRequest &request) {
    uint64_t n = request.members_size(), self = request.self();
    uint64_t lost = request.lost();
    if (lost >= n || request.end() < request.first()) {
        Fail(openfam::FAM_ERR_INVALID, "rebuild request of member {} of {}", lost, n);
    }
    RebuildWorkCounts &progress = RebuildWork();
    int64_t left = 0;  // this server's stripes of the range: those whose parity it keeps
    for (uint64_t s = request.first(); s < request.end(); ++s)
        left += Raid5ParityMember(s, n) == self;
    progress.stripes_left += left;
    RebuildWorkLeft uncount{progress.stripes_left, left};
    std::vector<char> scratch;  // the units read, kept for the next batch (no new pages)
    for (uint64_t first = request.first(); first < request.end(); first += kRebuildBatch) {
        std::vector<uint64_t> stripes;
        for (uint64_t s = first; s < std::min(request.end(), first + kRebuildBatch); ++s) {
            if (Raid5ParityMember(s, n) == self) stripes.push_back(s);
        }
        if (stripes.empty()) continue;
        StripeGate::Hold held(stripes_, request.members(0).extent().region_id(), stripes);
        RecomputeUnits(request, stripes, lost, &scratch);
        if (lost == self) held.Repaired();  // the parity, from the data
        progress.stripes.Add(stripes.size());
        progress.stripes_left -= static_cast<int64_t>(stripes.size());
        left -= static_cast<int64_t>(stripes.size());
    }
}

void RedundancyService::RecomputeUnits(const rpc::StripeRequest &request,
                                       const std::vector<uint64_t> &stripes, uint64_t lost,
                                       std::vector<char> *scratch) {
    uint64_t n = request.members_size(), unit = request.interleave();
    // Every member's unit but `lost`'s, n - 1 per stripe in a row: their XOR (made in the
    // first of them) is lost's unit.
    std::vector<char> own;
    std::vector<char> &units = scratch ? *scratch : own;
    if (units.size() < stripes.size() * (n - 1) * unit)
        units.resize(stripes.size() * (n - 1) * unit);
    auto unit_of = [&](size_t i, size_t k) { return units.data() + (i * (n - 1) + k) * unit; };
    MemberIo io(*this, request);  // after the buffers it uses (see StripeReadOrWrite)
    for (size_t i = 0; i < stripes.size(); ++i) {
        size_t k = 0;
        for (uint64_t m = 0; m < n; ++m) {
            if (m != lost) io.Read(m, stripes[i] * unit, unit_of(i, k++), unit);
        }
    }
    io.Finish();
    for (size_t i = 0; i < stripes.size(); ++i) {
        for (size_t k = 1; k < n - 1; ++k) XorInto(unit_of(i, 0), unit_of(i, k), unit);
        // A rebuild's target is created empty when the member is marked, and writes since
        // reached it under the stripes' locks (or are made again by their clients): units of
        // zeros are there already (the holes of the extent, often half of it), not sent.
        if (!(request.target_empty() && AllZero(unit_of(i, 0), unit))) {
            io.Write(lost, stripes[i] * unit, unit_of(i, 0), unit);
        }
    }
    io.Finish();
}

void RedundancyService::RepairParity(const rpc::StripeRequest &request, StripeGate::Hold &held) {
    std::vector<uint64_t> suspects = held.suspects();
    if (suspects.empty()) return;
    for (const rpc::Member &member : request.members()) {
        if (member.state() != kHealthy) return;  // stays suspect (see stripe_gate.h)
    }
    RecomputeUnits(request, suspects, request.self());
    held.Repaired();
}

}  // namespace fampool
