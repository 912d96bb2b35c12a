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
// keeps parity and data in step under its stripe locks. Whole stripes of a write, when every
// member is healthy, the client writes itself under leases of the stripes from their parity
// servers (raid5_stripes.h). When the parity member itself is lost,
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
// before the operation reached them. A write is redone whole (RAID5 parity servers compute
// parity from the data units, not from the old parity, so a write made twice leaves parity
// right); an atomic, which must not apply twice, is sent again with its id to the server that
// applied it, which mirrors the word to the copy (RAID1), or has its stripe recomputed
// (RAID5). A view with a member not healthy is also fetched again when older than kViewLease,
// so that writes reach a member being rebuilt soon after its rebuild begins.
//
// Atomics carry an id (NextOpId) that every server applying or mirroring them remembers with
// the result: an atomic made again after any failure (no answer, a server declared dead, a
// key refused) is answered from memory where it was applied already, so it applies once.
#ifndef FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_TRANSPORT_H_
#define FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_TRANSPORT_H_

#include <algorithm>
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

// When an operation on a redundant item stops making itself again after failures: once
// `patience` (the data path's own bound, fabric_timeout_ms) has passed with no progress, that
// is since the first failure or since the last round of recovery that found the members
// changed (a server declared dead, a member rebuilding or healthy again). While one member is
// unavailable the members change within seconds (the metadata service's heartbeats declare a
// stopped server dead after 8 missed ones, 2-3 s) and the operation goes on; only silence
// makes it fail. (A count of rounds gave up while a killed server came back and was rebuilt:
// each of those steps is a change.)
class RecoveryBudget {
  public:
    // `changed`: when any operation of this client last found members changed (a fetch of an
    // item's view), as steady_clock nanoseconds: progress another operation saw counts too.
    explicit RecoveryBudget(std::chrono::milliseconds patience,
                            const std::atomic<int64_t> *changed = nullptr)
        : patience_(patience), changed_(changed) {}
    // After a failure: true when it should stand (no more rounds).
    bool Spent() {
        auto now = std::chrono::steady_clock::now();
        if (!failed_) {
            failed_ = true;
            since_ = now;
        }
        auto last = since_;
        if (changed_) {
            last = std::max(last, std::chrono::steady_clock::time_point(
                                      std::chrono::nanoseconds(changed_->load())));
        }
        return now - last > patience_;
    }
    // After a round's recovery: whether it changed the members.
    void Recovered(bool changed) {
        if (changed) since_ = std::chrono::steady_clock::now();
    }

  private:
    std::chrono::milliseconds patience_;
    const std::atomic<int64_t> *changed_;
    bool failed_ = false;
    std::chrono::steady_clock::time_point since_;
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
// Throws FAM_ERR_RESOURCE: item byte `at` has no live member left among `members` (those that
// hold it). A member among them that is not lost but has no key in the view is waited for, as
// RequireMemberKeys says (FAM_ERR_RPC): its server may be alive, only slow to answer the
// metadata service (a read or atomic failed with one member down when its partner's key was
// being granted again as the member's rebuild began).
[[noreturn]] void NoMemberLeft(const ItemInfo &item, uint64_t at,
                               const std::vector<size_t> &members);
// Before a write or an atomic: throws FAM_ERR_RPC (recovered from as any failure: the servers
// checked, the item fetched again) when one of the members it reaches that is not lost has no
// key in the view (its server did not answer the metadata service in time: stopped, or dying).
// Left out, the member would miss the write while it counts as holding the item's bytes. (A
// member the item has no bytes on has no key either, and is not asked for.)
void RequireMemberKeys(const ItemInfo &item, const std::vector<size_t> &members);

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
    RecoveryBudget Budget() const { return RecoveryBudget(services_.patience, &changed_); }
    const RedundancyServices &services() const { return services_; }
    // A fresh id for a mirrored atomic: this client's and a sequence number.
    std::string NextOpId();

  private:
    std::shared_ptr<const RedundantBinding::View> MakeView(const ItemInfo &item);
    // A fetch found an item's members changed: progress, for every RecoveryBudget.
    void NoteChange();

    std::unique_ptr<Transport> inner_, members_;
    RedundancyServices services_;
    // Servers some item's members were found lost on, and how often that set grew: a view
    // older than the last growth that has a member on one of them is fetched again before use
    // (one failure found by one item spares the others the wait).
    std::mutex dead_mutex_;
    std::set<uint64_t> dead_;
    std::atomic<uint64_t> dead_generation_{0};
    // When a fetch of this client last found an item's members changed (steady_clock ns).
    std::atomic<int64_t> changed_{0};
    uint64_t client_id_;
    std::atomic<uint64_t> sequence_{0};
};

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_TRANSPORT_H_
