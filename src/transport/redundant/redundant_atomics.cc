// RedundantChannel's atomics (redundant_channel.h): RAID1's through the first healthy copy's
// server, which mirrors them; RAID5's through the stripe's parity server, which has the data
// unit's server apply them; each with an id, applied once whatever the retries.
#include <cstring>

#include "common/error.h"
#include "common/test_hold.h"
#include "transport/redundant/redundant_channel.h"

namespace fampool {
void RedundantChannel::Raid1Atomic(RedundantBinding &binding, uint64_t offset, AtomicOp op,
                                   DataType type, const void *operand, const void *compare,
                                   void *result) {
    size_t size = SizeOf(type);
    MirroredAtomicCall call;
    call.op = op;
    call.type = type;
    call.operand.assign(static_cast<const char *>(operand), size);
    if (compare) call.compare.assign(static_cast<const char *>(compare), size);
    call.op_id = transport_.NextOpId();
    RecoveryBudget budget = transport_.Budget();
    // The member whose server applied it, once one did: the call goes back there (which
    // answers from memory and mirrors the word again) until the copy holds the word or is
    // lost. When that member is lost instead, the call goes to the other copy, which applies
    // it unless it holds it already as a mirror (the same id).
    constexpr size_t kNowhere = ~size_t{0};
    size_t applied_at = kNowhere;
    // After a call that got no answer: the copy it named as mirror, asked first next (it
    // answers from memory if the other applied and mirrored it, even when that other has
    // been rebuilt since from this copy, and so holds the atomic without remembering it).
    size_t mirrored_to = kNowhere;
    bool stale = false;
    for (;;) {
        size_t second = kNowhere;
        bool sent = false;  // this round's call left, with no answer yet
        try {
            std::shared_ptr<const RedundantBinding::View> view = transport_.Fresh(binding, stale);
            stale = false;
            const ItemInfo &item = view->item;
            RequireMemberKeys(item, MembersReached(item, offset, size));
            if (Degraded(item.region)) HoldAt("client.degraded-atomic");
            uint64_t k = item.region.memory_servers.size();
            Raid1Piece piece = Raid1Pieces(item, offset, size).front();
            size_t first = piece.slot;
            second = k + piece.slot;
            if (applied_at != kNowhere && MemberHealthy(item, applied_at)) {
                if (applied_at != first) std::swap(first, second);
            } else if (mirrored_to != kNowhere && MemberHealthy(item, mirrored_to)) {
                applied_at = kNowhere;
                if (mirrored_to != first) std::swap(first, second);
            } else {
                applied_at = kNowhere;
                if (!MemberHealthy(item, first)) std::swap(first, second);
                if (!MemberHealthy(item, first)) NoMemberLeft(item, offset, {first, second});
            }
            call.extent = MemberOf(item, first).extent;
            call.key = item.member_access[first].key;
            call.offset = piece.physical;
            call.mirror.reset();
            if (MemberWritable(item, second)) call.mirror = MemberOf(item, second);
            sent = true;
            MirroredAtomicResult reply =
                transport_.services().server(MemberServer(item.region, first)).MirroredAtomic(call);
            sent = false;
            if (reply.busy) {  // nothing applied: the copies' servers disagree on who applies
                if (budget.Spent()) {
                    Fail(openfam::FAM_ERR_TIMEOUT,
                         "the copies of byte {} of item {} stayed busy with other atomics", offset,
                         item.name);
                }
                stale = true;
                continue;
            }
            applied_at = first;
            if (result && reply.result.size() == size) {
                std::memcpy(result, reply.result.data(), size);
            }
            if (reply.mirror_failed) {
                // Applied, the copy not reached: again at the same server (which answers from
                // memory and mirrors the word), until the copy answers or is declared lost.
                HoldAt("client.mirror-failed");
                Fail(openfam::FAM_ERR_RPC,
                     "the copy of byte {} of item {} on memory server {} did not answer", offset,
                     item.name, MemberServer(item.region, second));
            }
            if (call.mirror) return;
            // Applied with the copy left out: a rebuild begun meanwhile may have copied the word
            // before the atomic changed it, so once the copy takes writes the word goes there.
            if (!MemberWritable(transport_.Fresh(binding, /*stale=*/true)->item, second)) return;
        } catch (const Failure &failure) {
            if (failure.fam_error() == openfam::FAM_ERR_RESOURCE) throw;
            if (sent && call.mirror) mirrored_to = second;
            bool changed = transport_.Recover(binding);
            budget.Recovered(changed);
            if (!changed && budget.Spent()) throw;
        }
    }
}

void RedundantChannel::Raid5Atomic(RedundantBinding &binding, uint64_t offset, AtomicOp op,
                                   DataType type, const void *operand, const void *compare,
                                   void *result) {
    size_t size = SizeOf(type);
    std::string op_id = transport_.NextOpId();
    RecoveryBudget budget = transport_.Budget();
    for (;;) {
        try {
            std::shared_ptr<const RedundantBinding::View> view = transport_.Fresh(binding, false);
            const ItemInfo &item = view->item;
            RequireMemberKeys(item, MembersReached(item, offset, size));
            if (Degraded(item.region)) HoldAt("client.degraded-atomic");
            uint64_t n = MemberCount(item.region), unit = item.region.interleave_size;
            if (op != AtomicOp::kFetch) RequireRaid5Writes(item, offset);
            StripePiece piece = Raid5Pieces(item, offset, size).front();
            uint64_t p = Raid5ParityMember(piece.stripe, n);
            uint64_t d = Raid5DataMember(piece.stripe, piece.column, n);
            std::string old;
            if (MemberWritable(item, p)) {
                // The parity server has the data unit's server apply it, and follows the change.
                StripeCall call = StripeCallOf(item, StripeCall::Op::kAtomic, p);
                call.pieces.push_back(
                    {piece.stripe, static_cast<uint32_t>(piece.column), piece.within, size});
                call.atomic_op = op;
                call.type = type;
                call.operand.assign(static_cast<const char *>(operand), size);
                if (compare) call.compare.assign(static_cast<const char *>(compare), size);
                call.op_id = op_id;
                old = transport_.services().server(MemberServer(item.region, p)).Stripe(call);
            } else {
                // No parity to keep: the data unit's server alone, with the same id.
                if (!MemberHealthy(item, d)) NoMemberLeft(item, offset, {d, p});
                MirroredAtomicCall call;
                call.extent = MemberOf(item, d).extent;
                call.key = item.member_access[d].key;
                call.offset = piece.stripe * unit + piece.within;
                call.op = op;
                call.type = type;
                call.operand.assign(static_cast<const char *>(operand), size);
                if (compare) call.compare.assign(static_cast<const char *>(compare), size);
                call.op_id = op_id;
                old = transport_.services()
                          .server(MemberServer(item.region, d))
                          .MirroredAtomic(call)
                          .result;
            }
            if (old.size() != size) {
                Fail(openfam::FAM_ERR_RPC, "a RAID5 atomic on item {} answered with {} bytes",
                     item.name, old.size());
            }
            if (op != AtomicOp::kFetch && Degraded(item.region)) {
                RejoinStripe(binding, SkippedBy(item), piece.stripe);
            }
            if (result) std::memcpy(result, old.data(), size);
            return;
        } catch (const Failure &failure) {
            // Made again with the same id: a server that applied it answers from memory.
            if (failure.fam_error() == openfam::FAM_ERR_RESOURCE) throw;
            bool changed = transport_.Recover(binding);
            budget.Recovered(changed);
            if (!changed && budget.Spent()) throw;
        }
    }
}

void RedundantChannel::RejoinStripe(RedundantBinding &binding, const Skipped &skipped,
                                    uint64_t stripe) {
    std::shared_ptr<const RedundantBinding::View> view = transport_.Fresh(binding, true);
    const ItemInfo &item = view->item;
    if (!Rejoined(skipped, item)) return;
    // The member left out, recomputed in this stripe by the stripe's parity server under its
    // stripe lock, from the others as they are now.
    uint64_t p = Raid5ParityMember(stripe, MemberCount(item.region));
    StripeCall call = StripeCallOf(item, StripeCall::Op::kRebuild, p);
    call.lost = static_cast<uint32_t>(skipped.front().member);
    call.first = stripe;
    call.end = stripe + 1;
    transport_.services().server(MemberServer(item.region, p)).Stripe(call);
}

}  // namespace fampool
