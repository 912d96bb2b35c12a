// The memory server's side of redundant regions (Members in common/fam_objects.h): what one
// server does for a client on bytes that other servers hold copies or parity of.
//   RAID1 atomics: the server of the first healthy member applies the atomic and writes the
//   word's new value to the copy (Mirror) while it holds the word, and the copy's server
//   takes its own lock of the word for it, so both copies see the same order of updates even
//   when clients with different views apply at different copies; each operation's result is
//   remembered by its id on both servers, so a client that retries (on the copy after the
//   first server died) gets the same answer.
//   RAID5: every change of a stripe, and every read of a lost member's bytes, is done by the
//   server holding the stripe's parity, under its lock of the stripe; or, for whole stripes
//   of healthy members, by the client itself under a lease of the stripes from that server.
//   Atomics are applied by the data unit's server (asked by the parity server, which updates
//   parity by the change, or by the client when parity is lost), once per op_id.
//   Rebuild: RAID1 copies a healthy member's data (not its holes) to the rebuilding one
//   (Resync); RAID5 recomputes the lost member's units stripe by stripe (Stripe REBUILD).
#ifndef FAMPOOL_MEMSERVER_REDUNDANCY_H_
#define FAMPOOL_MEMSERVER_REDUNDANCY_H_

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "memserver/local_memory_server.h"
#include "memserver/peers.h"
#include "memserver/stripe_gate.h"
#include "rpc/fampool.pb.h"
#include "rpc/memory_server_client.h"

namespace fampool {

class RedundancyService {
  public:
    // `peer(id)`: the client of memory server `id` (mirrors and forwarded RAID5 atomics go
    // through it).
    using PeerServer = std::function<MemoryServerClient &(uint64_t id)>;
    RedundancyService(LocalMemoryServer *local, Peers *peers, PeerServer peer)
        : local_(local), peers_(peers), peer_(std::move(peer)) {}

    // An atomic with an op_id: applied once whatever the retries, mirrored to the copy when
    // the request names one (RAID1), remembered with its result.
    void Atomic(const rpc::AtomicRequest &request, rpc::AtomicReply *reply);
    void Mirror(const rpc::MirrorRequest &request);
    // Makes the member's pages for the request's ranges present, in the background (heap.h,
    // PopulateForWrite), once the key let them be reached.
    void Populate(const rpc::PopulateRequest &request);
    void Resync(const rpc::ResyncRequest &request);
    void Stripe(const rpc::StripeRequest &request, rpc::StripeReply *reply);
    StripeGate::Counts stripe_leases() const { return stripes_.counts(); }

  private:
    // What an atomic did: its result (the word's old value) and the word's value after.
    struct Applied {
        std::string result, value;
    };
    // Atomics applied to, or mirrored to, an extent here, by op_id (bounded: a retry comes
    // within seconds). An atomic is recalled only while the extent it changed lives: one made
    // anew since (a member rebuilt onto this server) holds what its rebuild copied, not it.
    // `life`: the extent's life (LocalMemoryServer::ExtentLife) the caller's key reached.
    bool Recall(const std::string &op_id, ExtentRef extent, uint64_t life, Applied *applied);
    void Remember(const std::string &op_id, ExtentRef extent, uint64_t life,
                  const Applied &applied);
    // The lock of a word (stripe_work.cc's RAID5 atomics hold stripe locks instead).
    std::timed_mutex &WordLock(const rpc::Extent &extent, uint64_t offset);
    // Words this server applied an atomic to whose mirror did not land (the copy's server did
    // not answer, or answered only after a rebuild of the copy had copied the word and ended):
    // this copy is ahead of the other until a later mirror of the word lands. Meanwhile the
    // other may take atomics itself (a client's view that says so), on its older word: its
    // mirror here is refused (FAM_ERR_ALREADYEXIST), and it takes this copy's word instead
    // (TakeCopysWord: a fetch here, written over its own, its change undone) and answers busy.
    // Two acknowledged fetch_adds returned the same value when both copies applied from their
    // own word and the later mirror overwrote the earlier change.
    // `life`: of the extent (LocalMemoryServer::ExtentLife); one made anew has no marks.
    void MarkAhead(ExtentRef extent, uint64_t life, uint64_t offset, bool ahead);
    bool TakeAhead(ExtentRef extent, uint64_t life, uint64_t offset);  // true once per mark
    // `at`: this server's word, which the atomic of `request` changed; `before`: its value
    // before (null: the atomic was a retry, nothing to undo). The word becomes the copy's.
    void TakeCopysWord(const rpc::AtomicRequest &request, char *at, const char *before);
    // A Mirror request of atomics to remember for its extent (MirrorWrite::remembered).
    void TakeRemembered(const rpc::MirrorRequest &request);
    // Sends the atomics remembered for `source` (those applied or mirrored to it in its
    // present life) to the member `target`, which a rebuild copies `source` to (RAID1) or
    // makes from units that hold them (RAID5).
    void SendRemembered(ExtentRef source, const rpc::Member &target);
    // Resync's check of the batch of the extent at `batch` that `snapshot` was written from:
    // the chunks that changed since are copied again.
    void RecopyChanged(ExtentRef extent, const HeapMapping &mapping,
                       const rpc::StripeRequest &members, uint64_t batch,
                       std::vector<char> &snapshot);
    // stripe_work.cc
    void StripeRead(const rpc::StripeRequest &request, rpc::StripeReply *reply);
    void StripeWrite(const rpc::StripeRequest &request);
    void StripeAtomic(const rpc::StripeRequest &request, rpc::StripeReply *reply);
    // The atomics pending in the held stripes (StripeGate::PendingAtomic), finished: each
    // asked of its data unit's server again (applied once by its id) and counted in parity,
    // or its new word written to its data member (Rejoin); or, that member no longer healthy,
    // dropped (that unit is what parity makes of it).
    void FinishPending(const rpc::StripeRequest &request, StripeGate::Hold &held,
                       const std::vector<uint64_t> &stripes);
    // The call that has data member `data`'s server apply `atomic` (its id `op_id`), with
    // `key` for the member.
    static MirroredAtomicCall AtomicAt(const rpc::Member &data,
                                       const StripeGate::PendingAtomic &atomic,
                                       const std::string &op_id, uint64_t key);
    // Throws unless a data unit's server answered an atomic of `size` bytes.
    static void RequireWord(const MirroredAtomicResult &there, size_t size, uint64_t server);
    // A RAID5 atomic that a data member's server applied at physical offset `p` (its word
    // `old` before, `value` right after), counted in this server's parity `word` there: by
    // the difference, or, while this member is being rebuilt, as the data units make it now.
    void CountInParity(const rpc::StripeRequest &request, uint64_t p, size_t size, const char *old,
                       const char *value, char *word);
    // The words at physical offset `p` of the stripe's members but `d`'s and this server's,
    // `size` bytes each, XORed into `into` (read over the fabric).
    void XorOthers(const rpc::StripeRequest &request, uint64_t d, uint64_t p, size_t size,
                   char *into);
    // A pending atomic's new word (`atomic.rejoin`) written to its data member: the extent it
    // was meant for, or, with a current view, the one `request` names when that is reached
    // otherwise now (a newer key or life). With a current view, dropped instead when parity
    // (this server's member) is not healthy or is being rebuilt (made from the data, which
    // then stands), and made from parity when the member is being rebuilt by this request.
    // True: finished. False: left pending (the view has that member lost; parity stands for
    // its unit). Throws when it is still pending and the request cannot go on.
    bool Rejoin(const rpc::StripeRequest &request, const StripeGate::PendingAtomic &atomic);
    // The word at physical offset `p` of data member `d`, `size` bytes, written there as the
    // stripe's parity and other data units make it; the caller holds the stripe.
    void RejoinWord(const rpc::StripeRequest &request, uint64_t d, uint64_t p, size_t size);
    void StripeRebuild(const rpc::StripeRequest &request);
    void StripeLease(const rpc::StripeRequest &request, rpc::StripeReply *reply);
    // Of `stripes`, whose locks the caller holds: member `lost`'s units recomputed from the
    // others' and written there.
    // `scratch`: a buffer to read into, kept by the caller between calls.
    void RecomputeUnits(const rpc::StripeRequest &request, const std::vector<uint64_t> &stripes,
                        uint64_t lost, std::vector<char> *scratch = nullptr);
    // The held stripes that are suspect (stripe_gate.h) get parity from their data, when every
    // member is healthy; with one data member missing (not healthy, or the one a rebuild
    // makes), those a write here left torn get parity from what the write meant that member's
    // unit to be and the other units as they are. The others stay suspect.
    void RepairParity(const rpc::StripeRequest &request, StripeGate::Hold &held);

    LocalMemoryServer *local_;
    Peers *peers_;
    PeerServer peer_;
    struct Recalled {
        Applied applied;
        uint64_t extent;  // LocalMemoryServer::GrantsOf-like: region * 2 + copy
        uint64_t life;    // LocalMemoryServer::ExtentLife when it was applied
    };
    std::mutex recall_mutex_;
    std::map<std::string, Recalled> recall_;
    std::deque<std::string> recall_order_;
    // Striped locks of words (RAID1 atomics and mirrors, atomics applied for a RAID5 parity
    // server), by hash; the stripes' locks and leases (RAID5).
    std::array<std::timed_mutex, 256> word_locks_;
    std::mutex ahead_mutex_;
    // (region * 2 + copy, life, offset)
    using AheadWord = std::tuple<uint64_t, uint64_t, uint64_t>;
    std::set<AheadWord> ahead_;
    std::deque<AheadWord> ahead_order_;
    StripeGate stripes_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_REDUNDANCY_H_
