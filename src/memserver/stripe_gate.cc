#include "memserver/stripe_gate.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"

namespace fampool {
namespace {

// Clients' lease owners have the top bit set; this server's own requests count up without it.
constexpr uint64_t kClientOwner = uint64_t{1} << 63;

}  // namespace

StripeGate::Hold::Hold(StripeGate &gate, uint64_t region, std::vector<uint64_t> stripes)
    : gate_(gate), region_(region), stripes_(std::move(stripes)) {
    std::unique_lock<std::mutex> lock(gate_.mutex_);
    owner_ = gate_.next_owner_++ & ~kClientOwner;
    Holder holder{owner_, Clock::time_point::max()};
    for (;;) {
        Clock::time_point retry = Clock::time_point::max();
        if (gate_.TryTake(region_, stripes_, holder, Clock::now(), &retry)) return;
        if (retry == Clock::time_point::max()) {
            gate_.freed_.wait(lock);
        } else {
            gate_.freed_.wait_until(lock, retry);
        }
    }
}

StripeGate::Hold::~Hold() { gate_.Give(region_, stripes_, owner_); }

std::vector<uint64_t> StripeGate::Hold::suspects() const {
    std::lock_guard<std::mutex> lock(gate_.mutex_);
    std::vector<uint64_t> found;
    if (gate_.suspect_.empty() && gate_.pending_.empty()) return found;
    for (uint64_t stripe : stripes_) {
        if (gate_.suspect_.count({region_, stripe}) || gate_.pending_.count({region_, stripe}))
            found.push_back(stripe);
    }
    return found;
}

void StripeGate::Hold::Torn(uint64_t stripe, std::shared_ptr<const Intent> intent) {
    std::lock_guard<std::mutex> lock(gate_.mutex_);
    gate_.suspect_.insert({region_, stripe});
    gate_.intents_[{region_, stripe}] = std::move(intent);
}

std::shared_ptr<const StripeGate::Intent> StripeGate::Hold::intent(uint64_t stripe) const {
    std::lock_guard<std::mutex> lock(gate_.mutex_);
    auto found = gate_.intents_.find({region_, stripe});
    return found == gate_.intents_.end() ? nullptr : found->second;
}

void StripeGate::Hold::Repaired() {
    for (uint64_t stripe : stripes_) Repaired(stripe);
}

void StripeGate::Hold::Repaired(uint64_t stripe) {
    std::lock_guard<std::mutex> lock(gate_.mutex_);
    gate_.suspect_.erase({region_, stripe});
    gate_.intents_.erase({region_, stripe});
}

void StripeGate::Hold::Pending(uint64_t stripe, const std::string &op_id, PendingAtomic atomic) {
    std::lock_guard<std::mutex> lock(gate_.mutex_);
    gate_.pending_[{region_, stripe}][op_id] = std::move(atomic);
}

std::map<std::string, StripeGate::PendingAtomic> StripeGate::Hold::pending(uint64_t stripe) const {
    std::lock_guard<std::mutex> lock(gate_.mutex_);
    auto found = gate_.pending_.find({region_, stripe});
    return found == gate_.pending_.end() ? std::map<std::string, PendingAtomic>{} : found->second;
}

void StripeGate::Hold::Finished(uint64_t stripe, const std::string &op_id) {
    std::lock_guard<std::mutex> lock(gate_.mutex_);
    auto found = gate_.pending_.find({region_, stripe});
    if (found == gate_.pending_.end()) return;
    found->second.erase(op_id);
    if (found->second.empty()) gate_.pending_.erase(found);
}

bool StripeGate::Lease(uint64_t region, const std::vector<uint64_t> &stripes, uint64_t owner,
                       std::chrono::milliseconds lease, std::chrono::milliseconds wait) {
    if ((owner & kClientOwner) == 0) {
        Fail(openfam::FAM_ERR_INVALID, "stripe lease owner {:#x} lacks the client bit", owner);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    Clock::time_point give_up = Clock::now() + wait;
    for (;;) {
        // A suspect stripe goes to a request here, which repairs it: the client's write of a
        // part of it would keep its parity wrong.
        for (uint64_t stripe : stripes) {
            if (suspect_.count({region, stripe}) || pending_.count({region, stripe})) return false;
        }
        Clock::time_point now = Clock::now(), retry = Clock::time_point::max();
        if (TryTake(region, stripes, Holder{owner, now + lease}, now, &retry)) {
            ++counts_.granted;
            return true;
        }
        if (now >= give_up) return false;
        freed_.wait_until(lock, std::min(retry, give_up));
    }
}

bool StripeGate::Release(uint64_t region, const std::vector<uint64_t> &stripes, uint64_t owner,
                         bool complete) {
    bool held = true;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (uint64_t stripe : stripes) {
            auto it = held_.find({region, stripe});
            bool mine = it != held_.end() && it->second.owner == owner;
            held &= mine;
            // Writes that ended after the lease did may have come after the next holder's
            // (its repair included): suspect again, as after writes that did not all end.
            if (!mine || !complete) suspect_.insert({region, stripe});
            if (mine) held_.erase(it);
        }
    }
    freed_.notify_all();
    return held;
}

StripeGate::Counts StripeGate::counts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
}

bool StripeGate::TryTake(uint64_t region, const std::vector<uint64_t> &stripes,
                         const Holder &holder, Clock::time_point now, Clock::time_point *retry) {
    for (uint64_t stripe : stripes) {
        auto it = held_.find({region, stripe});
        if (it == held_.end() || it->second.owner == holder.owner) continue;
        if (it->second.end > now) {
            *retry = std::min(*retry, it->second.end);
            return false;
        }
        // A lease that ended: its client neither finished nor gave it back in time.
        ++counts_.lapsed;
        std::fprintf(stderr,
                     "fampool-server: the lease of client %#llx on stripe %llu of region %llu "
                     "ended before the client gave it back; taken back\n",
                     static_cast<unsigned long long>(it->second.owner),
                     static_cast<unsigned long long>(stripe),
                     static_cast<unsigned long long>(region));
        suspect_.insert(it->first);
        held_.erase(it);
    }
    for (uint64_t stripe : stripes) held_[{region, stripe}] = holder;
    return true;
}

void StripeGate::Give(uint64_t region, const std::vector<uint64_t> &stripes, uint64_t owner) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (uint64_t stripe : stripes) {
            auto it = held_.find({region, stripe});
            if (it != held_.end() && it->second.owner == owner) held_.erase(it);
        }
    }
    freed_.notify_all();
}

}  // namespace fampool
