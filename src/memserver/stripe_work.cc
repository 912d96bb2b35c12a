// RedundancyService's RAID5 work (redundancy.h): what the memory server holding a stripe's
// parity does for clients, under its locks of the stripes (stripe_gate.h).
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/parity.h"
#include "common/test_hold.h"
#include "memserver/member_io.h"
#include "memserver/memory_server_metrics.h"
#include "memserver/redundancy.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

// The most bytes one stripe request may move (a gRPC message's limit).
constexpr uint64_t kMostStripeBytes = 64 << 20;
// Stripes a rebuild request recomputes under one set of locks.
constexpr uint64_t kRebuildBatch = 256;
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

}  // namespace

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
            if (request.op() == rpc::StripeRequest::READ) return StripeRead(request, reply);
            return StripeWrite(request);
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

void RedundancyService::StripeRead(const rpc::StripeRequest &request, rpc::StripeReply *reply) {
    uint64_t n = request.members_size(), unit = request.interleave(), self = request.self();
    std::vector<uint64_t> stripes;
    for (const rpc::StripePiece &piece : request.pieces()) stripes.push_back(piece.stripe());
    StripeGate::Hold held(stripes_, request.members(0).extent().region_id(), stripes);
    RepairParity(request, held);
    // Each piece's bytes: a healthy member's read there, a lost or rebuilding member's rebuilt
    // from the others (parity here, and the other data units read into `others`).
    std::string &out = *reply->mutable_data();
    uint64_t total = 0;
    for (const rpc::StripePiece &piece : request.pieces()) total += piece.length();
    out.assign(total, '\0');
    std::vector<std::pair<uint64_t, std::vector<char>>> others;  // (position in out, bytes)
    MemberIo io(local_, peers_, request);                        // after the buffers it uses
    uint64_t at = 0;
    for (const rpc::StripePiece &piece : request.pieces()) {
        uint64_t s = piece.stripe(), len = piece.length(), p = s * unit + piece.within();
        uint64_t d = Raid5DataMember(s, piece.column(), n);
        if (request.members(static_cast<int>(d)).state() == kHealthy) {
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
    for (auto &[position, bytes] : others)
        XorInto(out.data() + position, bytes.data(), bytes.size());
}

void RedundancyService::StripeWrite(const rpc::StripeRequest &request) {
    uint64_t n = request.members_size(), unit = request.interleave(), self = request.self();
    auto healthy = [&](uint64_t m) {
        return request.members(static_cast<int>(m)).state() == kHealthy;
    };
    // The pieces by stripe, each with its bytes' place in `data`.
    struct Part {
        const rpc::StripePiece *piece;
        const char *bytes;
    };
    std::map<uint64_t, std::vector<Part>> by_stripe;
    uint64_t at = 0;
    for (const rpc::StripePiece &piece : request.pieces()) {
        by_stripe[piece.stripe()].push_back({&piece, request.data().data() + at});
        at += piece.length();
    }
    std::vector<uint64_t> stripes;
    for (const auto &[s, parts] : by_stripe) stripes.push_back(s);
    StripeGate::Hold held(stripes_, request.members(0).extent().region_id(), stripes);
    RepairParity(request, held);
    // Per stripe, the bytes [low, high) of every data unit that the pieces touch, and the
    // parity of the same bytes. Parity is the XOR of the data units as they will be: units
    // not written whole are read first. With every data member healthy the old parity is not
    // used, so a write made again after a failure part-way (parity or a unit written, not
    // both) still ends with parity matching the data. With one data member not healthy, its
    // unit is what parity and the other units make of it, and stays so.
    struct Work {
        uint64_t stripe, low, high;
        std::vector<std::vector<char>> units;  // per column, bytes [low, high)
        std::vector<char> parity;
        int missing = -1;  // the column whose member is not healthy
    };
    std::vector<Work> work;
    for (const auto &[s, parts] : by_stripe) {
        Work w{s, unit, 0, {}, {}, -1};
        for (const Part &part : parts) {
            w.low = std::min(w.low, part.piece->within());
            w.high = std::max(w.high, part.piece->within() + part.piece->length());
        }
        for (uint64_t c = 0; c < n - 1; ++c) {
            if (healthy(Raid5DataMember(s, c, n))) continue;
            if (w.missing >= 0) {
                Fail(openfam::FAM_ERR_RESOURCE,
                     "stripe {} of region {} has two data members not healthy", s,
                     request.members(0).extent().region_id());
            }
            w.missing = static_cast<int>(c);
        }
        w.units.assign(n - 1, std::vector<char>(w.high - w.low));
        w.parity.assign(w.high - w.low, 0);
        work.push_back(std::move(w));
    }
    {
        MemberIo io(local_, peers_, request);  // after the buffers it uses
        for (Work &w : work) {
            uint64_t p = w.stripe * unit + w.low, len = w.high - w.low;
            std::vector<bool> whole(n - 1, false);  // columns whose bytes are all written
            for (const Part &part : by_stripe[w.stripe]) {
                whole[part.piece->column()] =
                    whole[part.piece->column()] ||
                    (part.piece->within() <= w.low &&
                     part.piece->within() + part.piece->length() >= w.high);
            }
            for (uint64_t c = 0; c < n - 1; ++c) {
                if (static_cast<int>(c) == w.missing) continue;
                // Old bytes are needed where the write leaves some, and all of them to make
                // the missing unit's.
                if (!whole[c] || w.missing >= 0) {
                    io.Read(Raid5DataMember(w.stripe, c, n), p, w.units[c].data(), len);
                }
            }
            if (w.missing >= 0) io.Read(self, p, w.parity.data(), len);
        }
        io.Finish();
    }
    HoldAt("stripe.write-read");
    for (Work &w : work) {
        if (w.missing >= 0) {  // its unit from parity and the others, as they are
            std::vector<char> &mine = w.units[static_cast<size_t>(w.missing)];
            mine = w.parity;
            for (uint64_t c = 0; c < n - 1; ++c) {
                if (static_cast<int>(c) != w.missing)
                    XorInto(mine.data(), w.units[c].data(), mine.size());
            }
        }
        for (const Part &part : by_stripe[w.stripe]) {
            std::memcpy(w.units[part.piece->column()].data() + (part.piece->within() - w.low),
                        part.bytes, part.piece->length());
        }
        std::fill(w.parity.begin(), w.parity.end(), 0);
        for (const std::vector<char> &each : w.units)
            XorInto(w.parity.data(), each.data(), each.size());
    }
    // Parity first, then the data units (a member being rebuilt too; a lost one not). When
    // they do not all land, the stripes keep what this write meant them to be: torn, with a
    // data member missing before the next write, parity and the others would make something
    // else of its unit (RepairParity).
    try {
        MemberIo io(local_, peers_, request);
        for (Work &w : work)
            io.Write(self, w.stripe * unit + w.low, w.parity.data(), w.parity.size());
        HoldAt("stripe.write-parity");
        for (const Work &w : work) {
            for (const Part &part : by_stripe[w.stripe]) {
                uint64_t d = Raid5DataMember(w.stripe, part.piece->column(), n);
                if (request.members(static_cast<int>(d)).state() == kLost) continue;
                io.Write(d, w.stripe * unit + part.piece->within(), part.bytes,
                         part.piece->length());
            }
        }
        io.Finish();
    } catch (const Failure &) {
        std::string parity = request.members(static_cast<int>(self)).extent().SerializeAsString();
        for (Work &w : work) {
            held.Torn(w.stripe, std::make_shared<const StripeGate::Intent>(
                                    StripeGate::Intent{parity, w.low, w.high, std::move(w.units)}));
        }
        throw;
    }
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
    if (request.target_empty() && self != lost) {
        // The atomics this member's server applied or counted (with their ids), to the member
        // made anew, whose parity or data is made next from bytes that hold them: a call made
        // again there, when this server is lost later, is answered from that memory instead of
        // applied a second time from parity (an add applied twice: a client's call, answered
        // by no one while the parity server was stopped past its death, made again after that
        // server's member was rebuilt and the data unit's server was lost in turn).
        SendRemembered(FromProto(request.members(static_cast<int>(self)).extent()),
                       request.members(static_cast<int>(lost)));
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
        RepairParity(request, held);  // torn stripes: `lost` gets what their write meant
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
    MemberIo io(local_, peers_, request);  // after the buffers it uses (see StripeReadOrWrite)
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
    FinishPending(request, held, suspects);
    uint64_t n = request.members_size(), unit = request.interleave(), self = request.self();
    // The member whose bytes are not read: not healthy, or the one a rebuild makes.
    std::optional<uint64_t> missing;
    for (uint64_t m = 0; m < n; ++m) {
        if (request.members(static_cast<int>(m)).state() == kHealthy &&
            !(request.op() == rpc::StripeRequest::REBUILD && m == request.lost())) {
            continue;
        }
        if (missing) return;  // two: nothing is made of this stripe's parity
        missing = m;
    }
    if (!missing) {  // parity from the data
        RecomputeUnits(request, suspects, self);
        held.Repaired();
        return;
    }
    if (*missing == self) return;  // the parity is what is missing (a rebuild makes it)
    // A data member missing. In the stripes a write here left torn: parity from what that
    // write meant the member's unit to be ([low, high) of it; parity elsewhere matches) and the
    // other units as they are. The others (a client's leased write that did not end well)
    // stay suspect: nothing here knows better than their parity.
    std::string parity_extent =
        request.members(static_cast<int>(self)).extent().SerializeAsString();
    struct Torn {
        uint64_t stripe;
        std::shared_ptr<const StripeGate::Intent> intent;
        std::vector<char> parity, others;  // others: the n - 2 other units, in a row
    };
    std::vector<Torn> torn;
    for (uint64_t s : suspects) {
        std::shared_ptr<const StripeGate::Intent> intent = held.intent(s);
        if (!intent || intent->parity != parity_extent) continue;
        uint64_t len = intent->high - intent->low;
        uint64_t column = (*missing + n - Raid5ParityMember(s, n) - 1) % n;
        torn.push_back({s, intent, intent->units[column], std::vector<char>((n - 2) * len)});
    }
    if (torn.empty()) return;
    {
        MemberIo io(local_, peers_, request);  // after the buffers it uses
        for (Torn &t : torn) {
            uint64_t len = t.intent->high - t.intent->low, k = 0;
            for (uint64_t c = 0; c < n - 1; ++c) {
                uint64_t d = Raid5DataMember(t.stripe, c, n);
                if (d == *missing) continue;
                io.Read(d, t.stripe * unit + t.intent->low, t.others.data() + k++ * len, len);
            }
        }
        io.Finish();
    }
    MemberIo io(local_, peers_, request);
    for (Torn &t : torn) {
        uint64_t len = t.parity.size();
        for (uint64_t k = 0; k < n - 2; ++k)
            XorInto(t.parity.data(), t.others.data() + k * len, len);
        io.Write(self, t.stripe * unit + t.intent->low, t.parity.data(), len);
    }
    io.Finish();
    for (const Torn &t : torn) held.Repaired(t.stripe);
}

}  // namespace fampool
