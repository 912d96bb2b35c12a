// The data path of redundant regions (RAID1, RAID5; Members in common/fam_objects.h), laid over
// the fabric transport: items of other regions pass straight through.
//
// RAID1: an item's bytes are bound twice, once per copy (the same item on the extents of
// memory_servers, and on their copies on copy_servers). A write goes to both copies at once and
// completes when both hold it; a read goes to the first copy, piece by piece to the other where
// a member is lost. A member being rebuilt gets writes only after the healthy copy holds them
// (the rebuild's Resync relies on that order). Atomics go to the first healthy member's memory
// server, which applies them and mirrors the new value to the copy (memserver/redundancy.h).
//
// RAID5: reads of healthy data units go straight to their members; writes, atomics and reads
// of a lost member's units go to the memory server holding the stripes' parity (Stripe), which
// keeps parity and data in step under its stripe locks. Whole stripes of a write, and large
// parts of stripes, when every member is healthy, the client writes itself under leases of
// the stripes from their parity servers (raid5_stripes.h). When the parity member itself is lost,
// writes and atomics go straight to the data units.
//
// Failures: when a transfer fails, the channel asks the metadata service to check the servers
// of the item (ReportFailure), fetches the item's members again, and redoes every transfer of
// redundant items since the last quiet on the members still alive: nothing acknowledged is lost
// while one member of each piece lives.
//
// Rebuilds: the metadata service marks a lost member rebuilding and copies (or recomputes) its
// bytes at once, with no wait for clients to learn of it. So an operation made on a view with
// a member not healthy (Skipped) checks the item again once it completed, and is made again
// where such a member takes writes now (Rejoined): the copy may have read the healthy members
// before the operation reached them. A write is redone whole; an atomic, which must not apply
// twice, has its word copied again by the server that applied it (RAID1) or its stripe
// recomputed (RAID5). A view with a member not healthy is also fetched again when older than
// kViewLease, so that writes reach a member being rebuilt soon after its rebuild begins.
#ifndef FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_TRANSPORT_H_
#define FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_TRANSPORT_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "common/memory_server.h"
#include "transport/transport.h"

namespace fampool {

constexpr std::chrono::milliseconds kViewLease(100);
// How long a transfer to a member may go without any completion before the channel gives it
// up, asks the metadata service about the servers and goes on with the other members: the
// data path's own bound (fabric_timeout_ms, 10 s by default) is meant for items with no other
// copy. Measured: SIGKILL to the first complete read 10.5 s with it, 1.05 s with 500 ms.
constexpr int kMemberTimeoutMs = 300;

// A round after which the item's members are as they were (the metadata service found every
// server alive: a connection refused or reset under load, not a death) waits this long before
// the redo, so that the rounds outlast gRPC's reconnect backoff (100 ms) instead of failing
// within it.
constexpr std::chrono::milliseconds kUnchangedRecoveryPause{250};

// Rounds of recovery (check the servers, fetch the members again, redo) that found a member's
// state changed before a failure on a redundant item stands: each follows a member's loss, and
// a region survives one.
constexpr int kRecoveryRounds = 3;

// When an operation on a redundant item stops redoing itself after failures: after
// kRecoveryRounds rounds that changed the members, or, while the rounds find every member as it
// was (alive but slow or stopped: the metadata service's heartbeats declare such a server dead
// after 8 missed ones, 2-3 s, or it answers again), once `patience` (the data path's own bound,
// fabric_timeout_ms) has passed since the first failure. A count alone gave up after about
// 1.7 s on a member that was only slow.
class RecoveryBudget {
  public:
    explicit RecoveryBudget(std::chrono::milliseconds patience) : patience_(patience) {}
    // After a failure: true when it should stand (no more rounds).
    bool Spent() {
        auto now = std::chrono::steady_clock::now();
        if (!failed_) {
            failed_ = true;
            first_failure_ = now;
        }
        return changed_rounds_ >= kRecoveryRounds || now - first_failure_ > patience_;
    }
    // After a round's recovery: whether it changed the members.
    void Recovered(bool changed) { changed_rounds_ += changed ? 1 : 0; }

  private:
    std::chrono::milliseconds patience_;
    bool failed_ = false;
    std::chrono::steady_clock::time_point first_failure_;
    int changed_rounds_ = 0;
};

// Member `m` of a redundant item: the client was given access to it; it holds the bytes
// (reads may go there); it takes writes (healthy, or being rebuilt).
inline bool MemberReachable(const ItemInfo &item, size_t m) {
    return m < item.member_access.size() && !item.member_access[m].fabric_address.empty();
}
inline bool MemberHealthy(const ItemInfo &item, size_t m) {
    return StateOf(item.region, m) == kHealthy && MemberReachable(item, m);
}
inline bool MemberWritable(const ItemInfo &item, size_t m) {
    return StateOf(item.region, m) != kLost && MemberReachable(item, m);
}
// Throws FAM_ERR_RESOURCE: item byte `at` has no live member left.
[[noreturn]] void NoMemberLeft(const ItemInfo &item, uint64_t at);

// The members of a view that an operation on it left out or reached while they were being
// rebuilt: every member not healthy, with its state and server.
struct SkippedMember {
    size_t member;
    uint8_t state;  // StateOf
    uint64_t server;
};
using Skipped = std::vector<SkippedMember>;
Skipped SkippedBy(const ItemInfo &item);
// Whether an operation that completed on a view with members `skipped` must reach the item as
// it is `now` again: one of them takes writes now and was lost then, or is being rebuilt on
// another server than then (a rebuild begun since may have missed the operation's bytes).
bool Rejoined(const Skipped &skipped, const ItemInfo &now);

// What the redundant data path asks of the rest of the client.
struct RedundancyServices {
    // The item at (region id, offset) as the metadata service describes it now.
    std::function<ItemInfo(uint64_t region_id, uint64_t offset)> refresh;
    // Asks the metadata service to check these memory servers now (marking a dead one's members
    // lost) and returns once it has.
    std::function<void(const std::vector<uint64_t> &servers)> report;
    // A memory server (its stripe and mirrored-atomic calls).
    std::function<MemoryServer &(uint64_t id)> server;
    // How long failures may go on while every member is found alive (RecoveryBudget).
    std::chrono::milliseconds patience{10000};
};

// A redundant item's binding: its members as the metadata service last described them.
struct RedundantBinding : Binding {
    struct View {
        ItemInfo item;
        std::vector<std::shared_ptr<Binding>> copies;   // RAID1: per copy, the item bound
        std::vector<std::shared_ptr<Binding>> columns;  // RAID5: per member, physical bytes
        std::chrono::steady_clock::time_point fetched;
        uint64_t dead_generation = 0;  // RedundantTransport's when fetched
    };
    std::shared_ptr<const View> view() const {
        std::lock_guard<std::mutex> lock(mutex);
        return current;
    }
    bool valid() const override;

    mutable std::mutex mutex;
    std::shared_ptr<const View> current;
};

class RedundantTransport : public Transport {
  public:
    // `inner` serves the items of other regions; `members` (the same transport with the
    // kMemberTimeoutMs bound) the members of redundant ones.
    RedundantTransport(std::unique_ptr<Transport> inner, std::unique_ptr<Transport> members,
                       RedundancyServices services);

    const char *name() const override { return inner_->name(); }
    std::shared_ptr<Binding> Attach(const ItemInfo &item) override;
    std::unique_ptr<Channel> OpenChannel() override;
    // Refused for redundant items: stores through a mapping would reach one copy only.
    void *Map(Binding &item, bool writable) override;
    void Unmap(void *local) override { inner_->Unmap(local); }
    void Forget(uint64_t region_id) override {
        inner_->Forget(region_id);
        members_->Forget(region_id);
    }

    // The view of a redundant item, fetched again if `stale` (a failure) or when a member is
    // not healthy and it is older than kViewLease.
    std::shared_ptr<const RedundantBinding::View> Fresh(RedundantBinding &binding, bool stale);
    // After a failure on `binding`'s item: has its servers checked, then fetches it again.
    // `redo`: the caller does the operation again next, so when the members are as they were
    // (no server found dead) it first waits kUnchangedRecoveryPause. True when the members
    // changed.
    bool Recover(RedundantBinding &binding, bool redo = true);
    RecoveryBudget Budget() const { return RecoveryBudget(services_.patience); }
    const RedundancyServices &services() const { return services_; }
    // A fresh id for a mirrored atomic: this client's and a sequence number.
    std::string NextOpId();

  private:
    std::shared_ptr<const RedundantBinding::View> MakeView(const ItemInfo &item);

    std::unique_ptr<Transport> inner_, members_;
    RedundancyServices services_;
    // Servers some item's members were found lost on, and how often that set grew: a view
    // older than the last growth that has a member on one of them is fetched again before use
    // (one failure found by one item spares the others the wait).
    std::mutex dead_mutex_;
    std::set<uint64_t> dead_;
    std::atomic<uint64_t> dead_generation_{0};
    uint64_t client_id_;
    std::atomic<uint64_t> sequence_{0};
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_TRANSPORT_H_
