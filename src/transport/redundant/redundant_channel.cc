#include "transport/redundant/redundant_channel.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "common/test_hold.h"

namespace fampool {
namespace {

RedundantBinding &Redundant(const std::shared_ptr<Binding> &binding) {
    return static_cast<RedundantBinding &>(*binding);
}

bool IsRedundantBinding(const Binding *binding) {
    return dynamic_cast<const RedundantBinding *>(binding) != nullptr;
}

bool Reachable(const ItemInfo &item, size_t member) { return MemberReachable(item, member); }
bool Healthy(const ItemInfo &item, size_t m) { return MemberHealthy(item, m); }
bool Writable(const ItemInfo &item, size_t m) { return MemberWritable(item, m); }

}  // namespace

void RequireRaid5Writes(const ItemInfo &item, uint64_t at) {
    uint64_t unhealthy = 0;
    std::vector<size_t> all;
    for (uint64_t m = 0; m < MemberCount(item.region); ++m) {
        unhealthy += !Healthy(item, m);
        all.push_back(m);
    }
    if (unhealthy > 1) NoMemberLeft(item, at, all);
}

std::vector<Raid1Piece> Raid1Pieces(const ItemInfo &item, uint64_t offset, uint64_t nbytes) {
    std::vector<Raid1Piece> pieces;
    uint64_t k = item.region.memory_servers.size();
    uint64_t interleave = k > 1 ? item.region.interleave_size : 0;
    for (uint64_t at = offset; at < offset + nbytes;) {
        BytePlace place = PlaceOfByte(item.offset, interleave, k, at);
        uint64_t length = std::min(place.contiguous, offset + nbytes - at);
        pieces.push_back({at, place.index, length, place.physical});
        at += length;
    }
    return pieces;
}

std::vector<size_t> MembersReached(const ItemInfo &item, uint64_t offset, uint64_t nbytes) {
    uint64_t n = MemberCount(item.region), k = item.region.memory_servers.size();
    std::vector<size_t> members;
    if (item.region.attributes.redundancyLevel != RAID1) {
        // A stripe's parity is computed from all its data units: every member.
        for (size_t m = 0; m < n; ++m) members.push_back(m);
        return members;
    }
    std::vector<bool> slots(k, false);
    for (const Raid1Piece &piece :
         Raid1Pieces(item, offset, std::min(nbytes, k * (item.region.interleave_size + 1)))) {
        slots[piece.slot] = true;
    }
    for (size_t copy = 0; copy < 2; ++copy) {
        for (size_t slot = 0; slot < k; ++slot) {
            if (slots[slot]) members.push_back(copy * k + slot);
        }
    }
    return members;
}

std::unique_ptr<Channel> RedundantTransport::OpenChannel() {
    return std::make_unique<RedundantChannel>(*this, inner_->OpenChannel(),
                                              [this] { return members_->OpenChannel(); });
}

MemberRef MemberOf(const ItemInfo &item, size_t m) {
    MemberRef member;
    member.server_id = MemberServer(item.region, m);
    bool raid1 = item.region.attributes.redundancyLevel == RAID1;
    member.extent = ExtentRef{item.region_id, item.region.attributes.memoryType == PERSISTENT,
                              raid1 && m >= item.region.memory_servers.size()};
    member.state = StateOf(item.region, m);
    if (!Reachable(item, m)) return member;
    const ServerAccess &access = item.member_access[m];
    member.fabric_address = access.fabric_address;
    member.key = access.key;
    member.base = access.base;
    member.incarnation = access.incarnation;
    return member;
}

StripeCall StripeCallOf(const ItemInfo &item, StripeCall::Op op, uint64_t self) {
    StripeCall call;
    call.op = op;
    call.interleave = item.region.interleave_size;
    for (size_t m = 0; m < MemberCount(item.region); ++m) call.members.push_back(MemberOf(item, m));
    call.self = static_cast<uint32_t>(self);
    return call;
}

Channel &RedundantChannel::Raid() {
    std::call_once(raid_opened_, [this] { raid_ = open_(); });
    return *raid_;
}

void RedundantChannel::Read(const std::shared_ptr<Binding> &item, uint64_t offset, void *local,
                            uint64_t nbytes, bool blocking) {
    if (!IsRedundantBinding(item.get())) return plain_->Read(item, offset, local, nbytes, blocking);
    Transfer(item, false, offset, static_cast<char *>(local), nbytes, blocking);
}

void RedundantChannel::Write(const std::shared_ptr<Binding> &item, uint64_t offset,
                             const void *local, uint64_t nbytes, bool blocking) {
    if (!IsRedundantBinding(item.get())) {
        return plain_->Write(item, offset, local, nbytes, blocking);
    }
    Transfer(item, true, offset, const_cast<char *>(static_cast<const char *>(local)), nbytes,
             blocking);
}

void RedundantChannel::Elements(const std::shared_ptr<Binding> &item, ElementPlan plan, char *local,
                                uint64_t count, uint64_t element_size, bool to_fam, bool blocking) {
    if (!IsRedundantBinding(item.get())) {
        return plain_->Elements(item, std::move(plan), local, count, element_size, to_fam,
                                blocking);
    }
    for (uint64_t i = 0; i < count; ++i) {
        Transfer(item, to_fam, plan.IndexOf(i) * element_size, local + i * element_size,
                 element_size, false);
    }
    if (blocking) Quiet();
}

void RedundantChannel::ApplyElements(const std::shared_ptr<Binding> &item, ElementOp op,
                                     const uint64_t *index, uint64_t count, uint64_t element_size,
                                     char *data) {
    if (!IsRedundantBinding(item.get())) {
        return plain_->ApplyElements(item, op, index, count, element_size, data);
    }
    if (op != ElementOp::kAdd) {
        ElementPlan plan;
        plan.strided = false;
        plan.indices.assign(index, index + count);
        return Elements(item, std::move(plan), data, count, element_size, op == ElementOp::kScatter,
                        true);
    }
    DataType type = element_size == 4 ? DataType::kUint32 : DataType::kUint64;
    for (uint64_t i = 0; i < count; ++i) {
        Atomic(*item, index[i] * element_size, AtomicOp::kAdd, type, data + i * element_size,
               nullptr, nullptr);
    }
}

void RedundantChannel::Transfer(const std::shared_ptr<Binding> &item, bool write, uint64_t offset,
                                char *local, uint64_t nbytes, bool blocking) {
    Logged op;
    op.write = write;
    op.binding = item;
    op.offset = offset;
    op.local = local;
    op.nbytes = nbytes;
    op.blocking = blocking;
    {
        std::lock_guard<std::mutex> lock(log_mutex_);
        op.sequence = next_sequence_++;
        log_.push_back(op);
    }
    if (Issue(op)) {
        std::lock_guard<std::mutex> lock(log_mutex_);
        std::erase_if(log_, [&op](const Logged &each) { return each.sequence == op.sequence; });
        return;
    }
    if (blocking) Settle(op.sequence + 1);
}

bool RedundantChannel::Issue(const Logged &op) {
    RecoveryBudget budget = transport_.Budget();
    for (;;) {
        try {
            Skipped skipped;
            bool done = Post(op, &skipped);
            if (skipped.empty() && op.skipped.empty()) return done;  // nothing to note
            std::lock_guard<std::mutex> lock(log_mutex_);
            if (Logged *logged = Find(op.sequence)) logged->skipped = std::move(skipped);
            return done;
        } catch (const Failure &failure) {
            if (failure.fam_error() == openfam::FAM_ERR_RESOURCE) throw;
            // Spent only when the members are still as they were: a failure that took long
            // (a server's own bound on a stopped peer) may have ended with the stopped server
            // declared dead meanwhile, which is progress.
            bool changed = transport_.Recover(Redundant(op.binding));
            budget.Recovered(changed);
            if (!changed && budget.Spent()) throw;
        }
    }
}

bool RedundantChannel::Post(const Logged &op, Skipped *skipped) {
    std::shared_ptr<const RedundantBinding::View> view =
        transport_.Fresh(Redundant(op.binding), false);
    if (op.write) RequireMemberKeys(view->item, MembersReached(view->item, op.offset, op.nbytes));
    if (op.write && Degraded(view->item.region)) HoldAt("client.degraded-write");
    bool raid1 = view->item.region.attributes.redundancyLevel == RAID1;
    if (op.write && raid1 && Raid1Write(*view, op.offset, op.local, op.nbytes, op.blocking)) {
        return true;  // both copies healthy
    }
    if (op.write) {
        if (!raid1) Raid5Write(*view, op.offset, op.local, op.nbytes);
        *skipped = SkippedBy(view->item);
    } else {
        raid1 ? Raid1Read(*view, op.offset, op.local, op.nbytes)
              : Raid5Read(*view, op.offset, op.local, op.nbytes);
    }
    return false;
}

void RedundantChannel::Settle(uint64_t upto) {
    RecoveryBudget budget = transport_.Budget();
    for (;;) {
        std::optional<Failure> failed;
        try {
            Raid().Quiet();
            std::vector<Logged> rejoin = Rejoining(upto);
            if (rejoin.empty()) break;
            for (const Logged &op : rejoin) Issue(op);
            continue;
        } catch (const Failure &failure) {
            failed = failure;
        }
        std::vector<Logged> redo;
        {
            std::lock_guard<std::mutex> lock(log_mutex_);
            for (const Logged &op : log_) {
                if (op.sequence < upto) redo.push_back(op);
            }
        }
        std::set<Binding *> recovered;
        bool changed = false;
        for (const Logged &op : redo) {
            if (recovered.insert(op.binding.get()).second) {
                changed |= transport_.Recover(Redundant(op.binding));
            }
        }
        budget.Recovered(changed);
        if (!changed && budget.Spent()) throw *failed;
        for (const Logged &op : redo) Issue(op);
    }
    std::lock_guard<std::mutex> lock(log_mutex_);
    std::erase_if(log_, [upto](const Logged &op) { return op.sequence < upto; });
}

std::vector<RedundantChannel::Logged> RedundantChannel::Rejoining(uint64_t upto) {
    std::vector<Logged> skipped;
    {
        std::lock_guard<std::mutex> lock(log_mutex_);
        for (const Logged &op : log_) {
            if (op.sequence < upto && !op.skipped.empty()) skipped.push_back(op);
        }
    }
    // Each item fetched once, after every one of its writes completed.
    std::map<Binding *, std::shared_ptr<const RedundantBinding::View>> now;
    std::vector<Logged> rejoin;
    for (const Logged &op : skipped) {
        auto &view = now[op.binding.get()];
        if (!view) view = transport_.Fresh(Redundant(op.binding), /*stale=*/true);
        if (Rejoined(op.skipped, view->item)) {
            rejoin.push_back(op);
            continue;
        }
        std::lock_guard<std::mutex> lock(log_mutex_);
        if (Logged *logged = Find(op.sequence)) logged->skipped.clear();
    }
    return rejoin;
}

RedundantChannel::Logged *RedundantChannel::Find(uint64_t sequence) {
    auto at = std::lower_bound(log_.begin(), log_.end(), sequence,
                               [](const Logged &op, uint64_t s) { return op.sequence < s; });
    return at != log_.end() && at->sequence == sequence ? &*at : nullptr;
}

void RedundantChannel::Raid1Read(const RedundantBinding::View &view, uint64_t offset, char *local,
                                 uint64_t nbytes) {
    const ItemInfo &item = view.item;
    uint64_t k = item.region.memory_servers.size();
    std::vector<Raid1Piece> pieces = Raid1Pieces(item, offset, nbytes);
    bool first_copy = true;
    for (const Raid1Piece &piece : pieces) first_copy &= Healthy(item, piece.slot);
    if (first_copy) return Raid().Read(view.copies[0], offset, local, nbytes, false);
    for (const Raid1Piece &piece : pieces) {
        size_t copy = Healthy(item, piece.slot) ? 0 : Healthy(item, k + piece.slot) ? 1 : 2;
        if (copy == 2) NoMemberLeft(item, piece.at, {piece.slot, k + piece.slot});
        Raid().Read(view.copies[copy], piece.at, local + (piece.at - offset), piece.length, false);
    }
}

bool RedundantChannel::Raid1Write(const RedundantBinding::View &view, uint64_t offset,
                                  const char *local, uint64_t nbytes, bool blocking) {
    const ItemInfo &item = view.item;
    uint64_t k = item.region.memory_servers.size();
    std::vector<Raid1Piece> pieces = Raid1Pieces(item, offset, nbytes);
    bool healthy = true;
    for (const Raid1Piece &piece : pieces) {
        if (!Healthy(item, piece.slot) && !Healthy(item, k + piece.slot)) {
            NoMemberLeft(item, piece.at, {piece.slot, k + piece.slot});
        }
        healthy &= Healthy(item, piece.slot) && Healthy(item, k + piece.slot);
    }
    if (blocking && healthy) {
        Raid().WriteCopies({view.copies[0], view.copies[1]}, offset, local, nbytes);
        return true;
    }
    // Healthy members first; members being rebuilt once those hold the bytes.
    bool rebuilding = false;
    for (size_t copy = 0; copy < 2; ++copy) {
        bool whole = true;
        for (const Raid1Piece &piece : pieces) whole &= Healthy(item, copy * k + piece.slot);
        if (whole) {
            Raid().Write(view.copies[copy], offset, local, nbytes, false);
            continue;
        }
        for (const Raid1Piece &piece : pieces) {
            size_t m = copy * k + piece.slot;
            if (Healthy(item, m)) {
                Raid().Write(view.copies[copy], piece.at, local + (piece.at - offset), piece.length,
                             false);
            }
            rebuilding |= Writable(item, m) && !Healthy(item, m);
        }
    }
    if (!rebuilding) return false;
    Raid().Quiet();
    for (size_t copy = 0; copy < 2; ++copy) {
        for (const Raid1Piece &piece : pieces) {
            size_t m = copy * k + piece.slot;
            if (Writable(item, m) && !Healthy(item, m)) {
                Raid().Write(view.copies[copy], piece.at, local + (piece.at - offset), piece.length,
                             false);
            }
        }
    }
    return false;
}

void RedundantChannel::Raid5Read(const RedundantBinding::View &view, uint64_t offset, char *local,
                                 uint64_t nbytes) {
    const ItemInfo &item = view.item;
    uint64_t n = MemberCount(item.region), unit = item.region.interleave_size;
    // Units of lost or rebuilding members: read by their stripes' parity servers.
    std::map<uint64_t, StripeCall> rebuilt;  // parity member -> call
    std::map<uint64_t, std::vector<std::pair<char *, uint64_t>>> targets;
    for (const StripePiece &piece : Raid5Pieces(item, offset, nbytes)) {
        uint64_t d = Raid5DataMember(piece.stripe, piece.column, n);
        char *to = local + (piece.at - offset);
        if (Healthy(item, d)) {
            Raid().Read(view.columns[d], piece.stripe * unit + piece.within, to, piece.length,
                        false);
            continue;
        }
        uint64_t p = Raid5ParityMember(piece.stripe, n);
        if (!Healthy(item, p)) NoMemberLeft(item, piece.at, {d, p});
        auto [call, fresh] = rebuilt.try_emplace(p);
        if (fresh) call->second = StripeCallOf(item, StripeCall::Op::kRead, p);
        call->second.pieces.push_back(
            {piece.stripe, static_cast<uint32_t>(piece.column), piece.within, piece.length});
        targets[p].emplace_back(to, piece.length);
    }
    if (rebuilt.empty()) return;
    // The parity servers read every other member: one whose server did not answer the
    // metadata service in time (no key in the view) is waited for, as for a write, not taken
    // for lost (it may be alive and hold bytes parity does not match yet).
    std::vector<size_t> all(n);
    for (size_t m = 0; m < n; ++m) all[m] = m;
    RequireMemberKeys(item, all);
    std::vector<std::pair<uint64_t, StripeCall>> calls;
    for (auto &[p, call] : rebuilt)
        calls.emplace_back(MemberServer(item.region, p), std::move(call));
    std::vector<std::string> replies = SendStripes(transport_, calls);
    size_t i = 0;
    for (auto &[p, places] : targets) {
        const std::string &bytes = replies[i++];
        uint64_t at = 0;
        for (auto [to, length] : places) {
            if (at + length > bytes.size()) Fail(openfam::FAM_ERR_RPC, "short stripe read reply");
            std::memcpy(to, bytes.data() + at, length);
            at += length;
        }
    }
}

void RedundantChannel::Raid5Write(const RedundantBinding::View &view, uint64_t offset,
                                  const char *local, uint64_t nbytes) {
    const ItemInfo &item = view.item;
    uint64_t n = MemberCount(item.region), unit = item.region.interleave_size;
    RequireRaid5Writes(item, offset);
    std::map<uint64_t, std::vector<StripeCall>> by_parity;
    for (const StripePiece &piece :
         Raid5LeasedStripes(view, offset, local, Raid5Pieces(item, offset, nbytes))) {
        uint64_t p = Raid5ParityMember(piece.stripe, n);
        uint64_t d = Raid5DataMember(piece.stripe, piece.column, n);
        const char *from = local + (piece.at - offset);
        if (!Writable(item, p)) {  // no parity to keep: the data unit alone
            if (!Writable(item, d)) NoMemberLeft(item, piece.at, {d, p});
            Raid().Write(view.columns[d], piece.stripe * unit + piece.within, from, piece.length,
                         false);
            continue;
        }
        std::vector<StripeCall> &list = by_parity[p];
        if (list.empty() || list.back().data.size() + piece.length > kStripeRequestBytes) {
            list.push_back(StripeCallOf(item, StripeCall::Op::kWrite, p));
        }
        list.back().pieces.push_back(
            {piece.stripe, static_cast<uint32_t>(piece.column), piece.within, piece.length});
        list.back().data.append(from, piece.length);
    }
    // One request per parity server at a time, the servers in parallel.
    for (size_t round = 0;; ++round) {
        std::vector<std::pair<uint64_t, StripeCall>> calls;
        for (auto &[p, list] : by_parity) {
            if (round < list.size()) {
                calls.emplace_back(MemberServer(item.region, p), std::move(list[round]));
            }
        }
        if (calls.empty()) break;
        SendStripes(transport_, calls);
    }
}

void RedundantChannel::Atomic(Binding &item, uint64_t offset, AtomicOp op, DataType type,
                              const void *operand, const void *compare, void *result) {
    auto *redundant = dynamic_cast<RedundantBinding *>(&item);
    if (!redundant) return plain_->Atomic(item, offset, op, type, operand, compare, result);
    if (redundant->view()->item.region.attributes.redundancyLevel == RAID1) {
        Raid1Atomic(*redundant, offset, op, type, operand, compare, result);
    } else {
        Raid5Atomic(*redundant, offset, op, type, operand, compare, result);
    }
}

void RedundantChannel::Fence() {
    plain_->Fence();
    if (raid_) raid_->Fence();
}

void RedundantChannel::Quiet() {
    std::optional<Failure> plain_failure;
    try {
        plain_->Quiet();
    } catch (const Failure &failure) {
        plain_failure = failure;
    }
    if (raid_) {
        uint64_t upto;
        {
            std::lock_guard<std::mutex> lock(log_mutex_);
            upto = next_sequence_;
        }
        Settle(upto);
    }
    if (plain_failure) throw *plain_failure;
}

void RedundantChannel::Drain() {
    plain_->Drain();
    if (!raid_) return;
    uint64_t upto;
    {
        std::lock_guard<std::mutex> lock(log_mutex_);
        upto = next_sequence_;
    }
    try {
        Settle(upto);
    } catch (const Failure &) {
        raid_->Drain();  // what could not be recovered stays for the caller's next quiet
    }
}

uint64_t RedundantChannel::Pending() { return plain_->Pending() + (raid_ ? raid_->Pending() : 0); }

}  // namespace fampool
