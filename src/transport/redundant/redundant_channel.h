// The channel of RedundantTransport (redundant_transport.h): operations on items of redundant
// regions go through here, the others to the plain channel underneath. The channel uses the
// transport, not the other way round: RedundantTransport::OpenChannel is defined in
// redundant_channel.cc.
#ifndef FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_CHANNEL_H_
#define FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_CHANNEL_H_

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/redundant/raid5_stripes.h"
#include "transport/redundant/redundant_transport.h"

namespace fampool {

class RedundantChannel : public Channel {
  public:
    using Opener = std::function<std::unique_ptr<Channel>()>;
    RedundantChannel(RedundantTransport &transport, std::unique_ptr<Channel> plain, Opener open)
        : transport_(transport), plain_(std::move(plain)), open_(std::move(open)) {}

    void Read(const std::shared_ptr<Binding> &item, uint64_t offset, void *local, uint64_t nbytes,
              bool blocking) override;
    void Write(const std::shared_ptr<Binding> &item, uint64_t offset, const void *local,
               uint64_t nbytes, bool blocking) override;
    // Redundant items: one transfer per element.
    void Elements(const std::shared_ptr<Binding> &item, ElementPlan plan, char *local,
                  uint64_t count, uint64_t element_size, bool to_fam, bool blocking) override;
    // Redundant items: gathers and scatters per element, adds as atomics.
    void ApplyElements(const std::shared_ptr<Binding> &item, ElementOp op, const uint64_t *index,
                       uint64_t count, uint64_t element_size, char *data) override;
    // Redundant items: blocking, through the memory servers (see redundant_transport.h).
    void Atomic(Binding &item, uint64_t offset, AtomicOp op, DataType type, const void *operand,
                const void *compare, void *result) override;
    void Fence() override;
    void Quiet() override;
    void Drain() override;
    uint64_t Pending() override;

  private:
    // A transfer on a redundant item, kept until a quiet saw it complete: redone after a
    // failure.
    struct Logged {
        uint64_t sequence = 0;
        bool write = false;
        std::shared_ptr<Binding> binding;
        uint64_t offset = 0;
        char *local = nullptr;
        uint64_t nbytes = 0;
        bool blocking = false;
        Skipped skipped;  // of the view it was last made on, while it has not completed
    };
    Channel &Raid();
    // Logs and issues a transfer; blocking ones are waited for.
    void Transfer(const std::shared_ptr<Binding> &item, bool write, uint64_t offset, char *local,
                  uint64_t nbytes, bool blocking);
    // Issues `op` on the item's members as they are now, recovering from a failure found while
    // issuing it (a few rounds), and notes in the log the members its view left out.
    // True when `op` completed before it returned (a blocking write to healthy copies).
    bool Issue(const Logged &op);
    bool Post(const Logged &op, Skipped *skipped);
    // Waits for the redundant transfers logged before `upto`, redoing them after failures and
    // where they left out a member that takes writes now.
    void Settle(uint64_t upto);
    // Of the completed writes logged before `upto` that left members out, those to make again
    // (Rejoined): the others are done with.
    std::vector<Logged> Rejoining(uint64_t upto);
    // The logged transfer `sequence` (log_mutex_ held; the log is in sequence order).
    Logged *Find(uint64_t sequence);
    void Raid1Read(const RedundantBinding::View &view, uint64_t offset, char *local,
                   uint64_t nbytes);
    bool Raid1Write(const RedundantBinding::View &view, uint64_t offset, const char *local,
                    uint64_t nbytes, bool blocking);
    void Raid5Read(const RedundantBinding::View &view, uint64_t offset, char *local,
                   uint64_t nbytes);
    void Raid5Write(const RedundantBinding::View &view, uint64_t offset, const char *local,
                    uint64_t nbytes);
    // Of `pieces` (of a write of `local` at item byte `offset`), those of whole stripes,
    // written by this client under leases of the stripes from their parity servers, when every
    // member is healthy; returns the pieces left for the parity servers.
    std::vector<StripePiece> Raid5LeasedStripes(const RedundantBinding::View &view, uint64_t offset,
                                                const char *local, std::vector<StripePiece> pieces);
    // One batch of those. Returns the stripes not written (their lease was not had, or ended
    // before the writes did).
    std::vector<StripeRun> WriteLeasedStripes(const RedundantBinding::View &view, uint64_t offset,
                                              const char *local,
                                              const std::vector<StripePiece> &pieces,
                                              const std::vector<StripeRun> &runs);
    // The transfers of stripes this client holds, parity computed here; returns when they
    // all ended.
    void WriteUnderLeases(const RedundantBinding::View &view, uint64_t offset, const char *local,
                          const std::vector<StripePiece> &pieces,
                          const std::vector<StripeRun> &runs);
    void Raid1Atomic(RedundantBinding &binding, uint64_t offset, AtomicOp op, DataType type,
                     const void *operand, const void *compare, void *result);
    void Raid5Atomic(RedundantBinding &binding, uint64_t offset, AtomicOp op, DataType type,
                     const void *operand, const void *compare, void *result);

    // After an atomic applied in `stripe` on a view that left members out: when one of them
    // takes writes now, its unit there is recomputed.
    void RejoinStripe(RedundantBinding &binding, const Skipped &skipped, uint64_t stripe);

    RedundantTransport &transport_;
    std::unique_ptr<Channel> plain_;
    Opener open_;
    std::once_flag raid_opened_;
    std::unique_ptr<Channel> raid_;
    std::mutex log_mutex_;
    std::vector<Logged> log_;
    uint64_t next_sequence_ = 0;
};

// RAID1: the pieces of item bytes [offset, offset + nbytes), each on one server position
// (slot) of the region: (byte of the item, slot, length, physical offset).
struct Raid1Piece {
    uint64_t at, slot, length, physical;
};
std::vector<Raid1Piece> Raid1Pieces(const ItemInfo &item, uint64_t offset, uint64_t nbytes);
// The members a write of item bytes [offset, offset + nbytes) reaches: both copies of each
// RAID1 slot it touches; every RAID5 member (a stripe's parity is made from all its data).
std::vector<size_t> MembersReached(const ItemInfo &item, uint64_t offset, uint64_t nbytes);
// RAID5 with two members not healthy takes no write at all: one that reached the others would
// leave the member lost last (kLostIntact, taken back as it is) staler than they are. Throws
// FAM_ERR_RESOURCE then.
void RequireRaid5Writes(const ItemInfo &item, uint64_t at);

// Member `m` of a redundant item as a memory server acting for the client reaches it.
MemberRef MemberOf(const ItemInfo &item, size_t m);
// A stripe call of a RAID5 item to the server of member `self`, naming all the members.
StripeCall StripeCallOf(const ItemInfo &item, StripeCall::Op op, uint64_t self);

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_REDUNDANT_REDUNDANT_CHANNEL_H_
