// RedundancyService's RAID5 atomics (redundancy.h): what the memory server holding a stripe's
// parity does for a client's atomic on a word of the stripe, under its lock of the stripe
// (stripe_gate.h), and the atomics pending there (StripeGate::PendingAtomic).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/atomic_apply.h"
#include "common/error.h"
#include "common/parity.h"
#include "common/test_hold.h"
#include "memserver/member_io.h"
#include "memserver/redundancy.h"
#include "rpc/convert.h"

namespace fampool {

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
    const rpc::Member &data = request.members(static_cast<int>(d));
    StripeGate::Hold held(stripes_, request.members(0).extent().region_id(), {s});
    RepairParity(request, held);  // an earlier call's atomic still pending here: finished
    const rpc::Member &me = request.members(static_cast<int>(self));
    ExtentRef mine = FromProto(me.extent());
    uint64_t life = 0;  // of this member's extent, which the parity change goes to
    std::shared_ptr<HeapMapping> hold;
    // This server's word of parity, reached once: a key revoked from now on (a member
    // declared lost meanwhile) must not stop the change it counts.
    char *word = local_->Reach(mine, me.key(), p, size, true, "a RAID5 atomic", &hold, &life);
    Applied applied;
    // A retry: applied, parity too (and its word written to a data member being rebuilt, or
    // pending until it is: finished above).
    if (Recall(request.op_id(), mine, life, &applied)) {
        reply->set_data(applied.result);
        return;
    }
    HoldAt("stripe.atomic");
    char old[16] = {}, value[16] = {};
    if (data.state() == kHealthy) {
        // Applied by the data unit's server, once per op_id whoever asks (this server now, or
        // the client itself when this one is lost). Pending until parity counts it: when no
        // answer comes, the next holder of the stripe asks again (a late answer, or the
        // request landing late there, applies nothing twice) before anything reads parity.
        StripeGate::PendingAtomic pending;
        pending.member = d;
        pending.offset = p;
        pending.op = static_cast<uint32_t>(request.atomic_op());
        pending.type = static_cast<uint32_t>(request.type());
        pending.operand = request.operand();
        pending.compare = request.compare();
        pending.data_server = data.server_id();
        pending.data_key = data.key();
        pending.parity_key = me.key();
        pending.parity_life = life;
        held.Pending(s, request.op_id(), pending);
        MirroredAtomicResult there =
            peer_(data.server_id())
                .MirroredAtomic(AtomicAt(data, pending, request.op_id(), data.key()));
        RequireWord(there, size, data.server_id());
        std::memcpy(old, there.result.data(), size);
        std::memcpy(value, there.value.data(), size);
        // Counted in parity (CountInParity) unless it is a repeat with this member healthy:
        // this atomic was not pending here, so the data unit's server applied it for an
        // earlier life of this member, or for the client while parity was lost; parity, made
        // from the data since (rebuilt), holds it already.
        if (!there.repeat || me.state() != kHealthy) {
            CountInParity(request, p, size, old, value, word);
        }
    } else {
        // The data unit's value is what parity and the other units make of it.
        char parity[16] = {};
        CopyFamBytes(parity, word, size);
        std::memcpy(old, parity, size);
        XorOthers(request, d, p, size, old);
        std::memcpy(value, old, size);
        char result[16];
        ApplyAtomic(value, static_cast<AtomicOp>(request.atomic_op()), type,
                    request.operand().data(),
                    request.compare().empty() ? nullptr : request.compare().data(), result);
        XorInto(parity, old, size);
        XorInto(parity, value, size);
        CopyFamBytes(word, parity, size);
    }
    Remember(request.op_id(), mine, life,
             Applied{std::string(old, size), std::string(value, size)});
    held.Finished(s, request.op_id());
    if (data.state() == kRebuilding && std::memcmp(old, value, size) != 0) {
        // It takes writes, and its rebuild may have passed this stripe: until this one has
        // landed the atomic is pending, and the next holder of the stripe writes the word
        // there before anything else (FinishPending), whether the client makes its call again
        // or not, and whether the rebuild has ended by then or not.
        StripeGate::PendingAtomic rejoin;  // the member, its word and where: nothing to ask
        rejoin.member = d;
        rejoin.offset = p;
        rejoin.rejoin.assign(value, size);
        rejoin.data_member = data.SerializeAsString();
        held.Pending(s, request.op_id(), std::move(rejoin));
        HoldAt("stripe.atomic-rejoin");
        MemberIo io(local_, peers_, request);
        io.Write(d, p, value, size);
        io.Finish();
        held.Finished(s, request.op_id());
    }
    HoldAt("stripe.atomic-applied");
    reply->set_data(old, size);
}

MirroredAtomicCall RedundancyService::AtomicAt(const rpc::Member &data,
                                               const StripeGate::PendingAtomic &atomic,
                                               const std::string &op_id, uint64_t key) {
    MirroredAtomicCall call;
    call.extent = FromProto(data.extent());
    call.key = key;
    call.offset = atomic.offset;
    call.op = static_cast<AtomicOp>(atomic.op);
    call.type = static_cast<DataType>(atomic.type);
    call.operand = atomic.operand;
    call.compare = atomic.compare;
    call.op_id = op_id;
    return call;
}

void RedundancyService::RequireWord(const MirroredAtomicResult &there, size_t size,
                                    uint64_t server) {
    if (there.result.size() != size || there.value.size() != size) {
        Fail(openfam::FAM_ERR_RPC, "memory server {} answered a RAID5 atomic with {} bytes", server,
             there.result.size());
    }
}

void RedundancyService::CountInParity(const rpc::StripeRequest &request, uint64_t p, size_t size,
                                      const char *old, const char *value, char *word) {
    uint64_t self = request.self();
    char parity[16] = {};
    if (request.members(static_cast<int>(self)).state() == kHealthy) {
        CopyFamBytes(parity, word, size);
        XorInto(parity, old, size);
        XorInto(parity, value, size);
    } else {
        // This member is being rebuilt, its word perhaps not yet made from the data (and a
        // rebuild does not write a unit that comes out all zeros): made from every data
        // unit's word as it is now, the atomic's own included. Not from `value`: a repeat's is
        // the word right after that atomic applied, and parity would then lack every atomic
        // applied to the word since (a call made again after its first copy was answered:
        // parity 56 behind, and the word rebuilt from it 56 ahead of its acknowledged adds
        // when its data member was lost next).
        XorOthers(request, /*d=*/self, p, size, parity);
    }
    CopyFamBytes(word, parity, size);
}

void RedundancyService::FinishPending(const rpc::StripeRequest &request, StripeGate::Hold &held,
                                      const std::vector<uint64_t> &stripes) {
    const rpc::Member &me = request.members(static_cast<int>(request.self()));
    ExtentRef mine = FromProto(me.extent());
    bool rebuild = request.op() == rpc::StripeRequest::REBUILD;
    for (uint64_t s : stripes) {
        for (const auto &[op_id, atomic] : held.pending(s)) {
            if (atomic.member >= static_cast<uint64_t>(request.members_size())) continue;
            if (!atomic.rejoin.empty()) {  // applied and counted here: its word written
                if (Rejoin(request, atomic)) held.Finished(s, op_id);
                continue;
            }
            const rpc::Member &data = request.members(static_cast<int>(atomic.member));
            // Its member made anew: the extent the atomic reached is gone, and the new one's
            // unit is what parity and the others make of it, without the change.
            if (rebuild && request.lost() == atomic.member) {
                held.Finished(s, op_id);
                continue;
            }
            size_t size = SizeOf(static_cast<DataType>(atomic.type));
            uint64_t life = 0;
            std::shared_ptr<HeapMapping> hold;
            char *word = nullptr;
            try {
                word = local_->Reach(mine, me.key(), atomic.offset, size, true,
                                     "a RAID5 atomic pending", &hold, &life);
            } catch (const Failure &) {  // this request's key reads only, or is older
                word = local_->Reach(mine, atomic.parity_key, atomic.offset, size, true,
                                     "a RAID5 atomic pending", &hold, &life);
            }
            // This member made anew since it was recorded: its parity was made from the data
            // by the rebuild, which holds the atomic if its data unit's server applied it by
            // then (after, only through a request to this life, which records its own).
            if (life != atomic.parity_life) {
                held.Finished(s, op_id);
                continue;
            }
            // Asked again of the server and extent it was sent to (the key it went with
            // reaches that extent only; a newer one of this request may be needed after a
            // revocation, when this view has the member healthy).
            MirroredAtomicResult there;
            try {
                there = peer_(atomic.data_server)
                            .MirroredAtomic(AtomicAt(data, atomic, op_id, atomic.data_key));
            } catch (const Failure &failure) {
                bool healthy = data.state() == kHealthy;
                if (failure.fam_error() == openfam::FAM_ERR_NOPERM && healthy &&
                    data.server_id() == atomic.data_server && data.key() != atomic.data_key) {
                    there = peer_(data.server_id())
                                .MirroredAtomic(AtomicAt(data, atomic, op_id, data.key()));
                } else if (failure.fam_error() != openfam::FAM_ERR_NOPERM && !healthy) {
                    // No answer from a member this view has not healthy: its unit is what
                    // parity and the others make of it, without the change, until it is
                    // rebuilt (a new extent, which the request no longer reaches).
                    held.Finished(s, op_id);
                    continue;
                } else {
                    throw;  // still pending: the caller makes its call again
                }
            }
            RequireWord(there, size, atomic.data_server);
            CountInParity(request, atomic.offset, size, there.result.data(), there.value.data(),
                          word);
            Remember(op_id, mine, life, Applied{there.result, there.value});
            held.Finished(s, op_id);
        }
    }
}

bool RedundancyService::Rejoin(const rpc::StripeRequest &request,
                               const StripeGate::PendingAtomic &atomic) {
    const rpc::Member &me = request.members(static_cast<int>(request.self()));
    uint64_t d = atomic.member, size = atomic.rejoin.size();
    // This request's view is current when its key of this server's member still reaches it:
    // keys are revoked at every loss and every rebuild's start. Only a current view may
    // drop the atomic or send its word elsewhere.
    bool current = true;
    try {
        std::shared_ptr<HeapMapping> hold;
        local_->Reach(FromProto(me.extent()), me.key(), atomic.offset, size, false,
                      "a RAID5 atomic pending", &hold);
    } catch (const Failure &) {
        current = false;
    }
    bool rebuild = request.op() == rpc::StripeRequest::REBUILD;
    if (current) {
        // Parity made anew, from the data: the word stands as its member holds it (writing
        // it there now could undo atomics applied there while parity was lost).
        if (me.state() != kHealthy || (rebuild && request.lost() == request.self())) return true;
        // The member made anew by this rebuild: the word as parity and the others make it,
        // written now (the rebuild leaves a unit of zeros unwritten).
        if (rebuild && request.lost() == d) {
            RejoinWord(request, d, atomic.offset, size);
            return true;
        }
    }
    int m = static_cast<int>(d);
    rpc::StripeRequest then;  // this request's members, with d's the one the word was meant for
    *then.mutable_members() = request.members();
    then.set_self(request.self());
    if (!then.mutable_members(m)->ParseFromString(atomic.data_member)) {
        Fail(openfam::FAM_ERR_RPC, "a RAID5 atomic pending names no member");
    }
    try {
        MemberIo io(local_, peers_, then);
        io.Write(d, atomic.offset, atomic.rejoin.data(), size);
        io.Finish();
        return true;
    } catch (const Failure &) {
        if (!current) throw;  // still pending
        const rpc::Member &now = request.members(m), &meant = then.members(m);
        // Lost: parity stands for its unit; pending until it is rebuilt or taken back.
        if (now.state() == kLost) return false;
        bool other = now.server_id() != meant.server_id() || now.key() != meant.key() ||
                     now.incarnation() != meant.incarnation();
        if (!other || now.fabric_address().empty()) throw;  // still pending
    }
    MemberIo io(local_, peers_, request);
    io.Write(d, atomic.offset, atomic.rejoin.data(), size);
    io.Finish();
    return true;
}

void RedundancyService::RejoinWord(const rpc::StripeRequest &request, uint64_t d, uint64_t p,
                                   size_t size) {
    char word[16] = {};
    {
        MemberIo io(local_, peers_, request);
        io.Read(request.self(), p, word, size);
    }
    XorOthers(request, d, p, size, word);
    MemberIo io(local_, peers_, request);
    io.Write(d, p, word, size);
    io.Finish();
}

void RedundancyService::XorOthers(const rpc::StripeRequest &request, uint64_t d, uint64_t p,
                                  size_t size, char *into) {
    uint64_t n = request.members_size(), self = request.self();
    std::vector<std::vector<char>> others;
    {
        MemberIo io(local_, peers_, request);  // after the buffers it uses
        for (uint64_t m = 0; m < n; ++m) {
            if (m == d || m == self) continue;
            others.emplace_back(size);
            io.Read(m, p, others.back().data(), size);
        }
        io.Finish();
    }
    for (const std::vector<char> &bytes : others) XorInto(into, bytes.data(), size);
}

}  // namespace fampool
