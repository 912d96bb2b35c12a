// The locks of RAID5 stripes on the memory server holding their parity. A request that changes
// a stripe (a partial write, an atomic, a rebuild) holds its stripes while it runs (Hold). A
// client writing stripes, parity computed by itself, holds them over its own transfers to the
// members: a lease (Lease), which the client gives back (Release) or which ends by time when
// the client does not (it died or stopped), so that one client cannot hold a stripe for ever.
// A stripe whose lease ended before the client gave it back, or that the client gave back with
// its transfers not all done or after its lease ended, may hold data and parity that do not
// match: it is suspect until the next request that holds it recomputes its parity from the
// data (Hold::suspects); no lease is granted on it until then. A stripe that a request here
// wrote part-way (parity or some units written, not all) is suspect too, and keeps what that
// request meant its data units to be (Intent): with a data member missing, that member's unit
// is the intended one, not what parity and the others make of it (those do not match). A
// stripe with a RAID5 atomic pending (its data unit's server did not answer: the word may hold
// the change, parity does not; or the new word's write to a data member being rebuilt did not
// end well) is suspect until the next request that holds it finishes the atomic
// (PendingAtomic).
#ifndef FAMPOOL_MEMSERVER_STRIPE_GATE_H_
#define FAMPOOL_MEMSERVER_STRIPE_GATE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace fampool {

class StripeGate {
  public:
    using Clock = std::chrono::steady_clock;

    // A RAID5 atomic that this server asked a data unit's server to apply and got no answer
    // from: `member`'s word at physical offset `offset` may hold the change, parity does not.
    // The data unit's server and key it was sent to (its extent then), and the key of this
    // server's member that came with it. With `rejoin` set, the other way round: the atomic
    // was applied here from parity and the other units (its data member being rebuilt) and
    // parity counts it, but its write of the new word (`rejoin`) to `data_member` (an
    // rpc::Member, serialized, with its server and key) may not have landed; the fields
    // between are not used then.
    struct PendingAtomic {
        uint64_t member = 0, offset = 0;
        uint32_t op = 0, type = 0;
        std::string operand, compare;
        uint64_t data_server = 0, data_key = 0, parity_key = 0;
        uint64_t parity_life = 0;  // of the parity member's extent when it was recorded
        std::string rejoin, data_member;
    };

    // What a write meant a stripe's data units to be: bytes [low, high) of each column, for
    // the parity member's extent `parity` (rpc::Extent, serialized: one meant for an earlier
    // extent of the region's parity is not used).
    struct Intent {
        std::string parity;
        uint64_t low = 0, high = 0;
        std::vector<std::vector<char>> units;
    };

    // The stripes of one region, held until destroyed (taken all at once: no deadlock
    // between requests that want several).
    class Hold {
      public:
        Hold(StripeGate &gate, uint64_t region, std::vector<uint64_t> stripes);
        ~Hold();
        Hold(const Hold &) = delete;
        Hold &operator=(const Hold &) = delete;
        // The held stripes that are suspect (see above); the holder recomputes their parity and
        // then calls Repaired.
        std::vector<uint64_t> suspects() const;
        // A held stripe written part-way: suspect, with what the write meant it to be.
        void Torn(uint64_t stripe, std::shared_ptr<const Intent> intent);
        // The intent of a held stripe written part-way, or null.
        std::shared_ptr<const Intent> intent(uint64_t stripe) const;
        // Parity matches the data again: every held stripe, or one (its atomics pending are
        // not: see Pending).
        void Repaired();
        void Repaired(uint64_t stripe);
        // A held stripe's atomic `op_id` pending (see PendingAtomic): the stripe is suspect
        // (suspects, no lease) until the next holder finishes it (asks the data unit's server
        // again, which applies it once by its id, and counts it in parity) before anything else.
        void Pending(uint64_t stripe, const std::string &op_id, PendingAtomic atomic);
        std::map<std::string, PendingAtomic> pending(uint64_t stripe) const;
        // Counted in parity, or found not applied (its data member lost): no more pending.
        void Finished(uint64_t stripe, const std::string &op_id);

      private:
        StripeGate &gate_;
        uint64_t region_, owner_;
        std::vector<uint64_t> stripes_;
    };

    // Takes every one of `stripes` for `owner` until `lease` has passed, waiting at most
    // `wait` for holders to give them back; all or none. False when not all were free by then,
    // or one is suspect.
    bool Lease(uint64_t region, const std::vector<uint64_t> &stripes, uint64_t owner,
               std::chrono::milliseconds lease, std::chrono::milliseconds wait);
    // Gives back those of `stripes` that `owner` holds (none when its lease ended); `complete`:
    // the owner's transfers to them all ended well. True when the owner still held them all;
    // those it no longer held are suspect (its writes may have come after the next holder's).
    bool Release(uint64_t region, const std::vector<uint64_t> &stripes, uint64_t owner,
                 bool complete);
    // Leases granted (one per call of Lease that took its stripes), and stripes whose lease
    // ended before the owner gave it back.
    struct Counts {
        uint64_t granted = 0, lapsed = 0;
    };
    Counts counts() const;

  private:
    using Key = std::pair<uint64_t, uint64_t>;  // (region, stripe)
    struct Holder {
        uint64_t owner = 0;
        Clock::time_point end = Clock::time_point::max();
    };
    // Takes them all for `owner` if none is held (a lapsed lease is taken back first).
    bool TryTake(uint64_t region, const std::vector<uint64_t> &stripes, const Holder &holder,
                 Clock::time_point now, Clock::time_point *retry);
    void Give(uint64_t region, const std::vector<uint64_t> &stripes, uint64_t owner);

    mutable std::mutex mutex_;
    std::condition_variable freed_;
    std::map<Key, Holder> held_;
    std::set<Key> suspect_;
    std::map<Key, std::shared_ptr<const Intent>> intents_;  // of suspect stripes written here
    std::map<Key, std::map<std::string, PendingAtomic>> pending_;  // by op id
    uint64_t next_owner_ = 1;  // this server's own requests (clients' owners have the top bit)
    Counts counts_;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_STRIPE_GATE_H_
