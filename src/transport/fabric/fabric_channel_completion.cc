// FabricChannel: waiting for completions (spin, yield, nap or sleep on the counter), probing
// stalled operations, reaping failures, and recovery (a fresh endpoint after a timeout).
#include <fmt/format.h>

#include <cstdint>
#include <thread>

#include "common/error.h"
#include "transport/fabric/fabric_channel.h"
#include "transport/fabric/fabric_channel_internals.h"

namespace fampool {

using namespace channel;

// --- completion ----------------------------------------------------------------------------

FabricChannel::Outcome FabricChannel::WaitAll(Clock::time_point deadline) {
    // Nothing posted since everything last completed: no need to ask the provider (a counter
    // read drives progress, which costs shm about a microsecond).
    if (posted_ == settled_) return Outcome::kDone;
    fid_cntr *counter = endpoint_.counter.get();
    auto now = Clock::now();
    auto spin_until = now + kSpin;
    const auto yield_from = now + kPureSpin;
    auto nap = kFirstNap;
    auto last_change = now;
    // A wait gives up only when nothing completed for the whole timeout: a server that answers
    // a large batch slowly but steadily is not a dead one. Probes do not count: those to the
    // live servers of a striped item complete while a stopped one answers nothing. `real` is
    // a lower bound of the operations other than probes completed in this wait.
    const auto patience = std::chrono::milliseconds(context_->timeout_ms());
    const uint64_t probes_before = probes_;
    int64_t best_real = INT64_MIN;
    uint64_t last_done = ~uint64_t{0};
    bool sleeping = false;
    for (uint64_t round = 0;; ++round) {
        uint64_t done = fi_cntr_read(counter);  // drives a manual-progress provider
        // Reading the failure count drives the provider a second time: on tcp that doubled the
        // cost of each round and added ~2 us to a 256 B operation. Failures are rare; while
        // spinning, counting them every few rounds delays their report by microseconds. A
        // waiter that sleeps between rounds counts them every round.
        uint64_t failed = failures_seen_;
        if (done + failed < posted_ && (sleeping || round % kRoundsPerFailureCount == 0)) {
            failed = fi_cntr_readerr(counter);
        }
        if (failed != failures_seen_) {
            failures_seen_ = failed;
            Reap();
        }
        if (done + failed >= posted_) {
            call_ends_.clear();
            touched_.clear();
            refusals_.clear();
            // Kept after a failure: the endpoint is closed next (Settle), resetting them.
            if (failed == 0) busy_servers_.clear();
            writes_in_flight_ = reads_in_flight_ = false;
            atomics_in_flight_ = 0;
            settled_ = posted_;
            return Outcome::kDone;
        }
        if (!refusals_.empty()) return Outcome::kRefused;
        now = Clock::now();
        if (done + failed != last_done) {
            last_done = done + failed;
            last_change = now;
            // Operations complete: the next ones will soon too. A manual-progress provider
            // (tcp) reads its sockets only when polled, and a waiter napping 1 ms between
            // polls through a stream of completions held non-blocking gets over tcp to a third
            // of their rate (0.34 against 0.99 GB/s at 64 KiB).
            nap = kFirstNap;
            int64_t real =
                static_cast<int64_t>(done + failed) - static_cast<int64_t>(probes_ - probes_before);
            if (real > best_real) {
                best_real = real;
                if (deadline - now < patience) deadline = now + patience;
            }
        } else if (now - last_change >= kProbeAfter) {
            Probe();
            last_change = now;
        }
        if (now >= deadline) return Outcome::kTimedOut;
        if (now < spin_until) {
            if (now > yield_from) std::this_thread::yield();
            continue;
        }
        sleeping = true;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        int slice = static_cast<int>(std::clamp<int64_t>(left.count() + 1, 1, kSliceMs));
        if (counter_waits_) {
            // Returns at the threshold, at the timeout, or when a failure is counted.
            fi_cntr_wait(counter, posted_ - failed, slice);
        } else if (now < spin_until + kYieldFor) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(nap);
            nap = std::min<std::chrono::microseconds>(nap * 2, kLongestNap);
        }
    }
}

void FabricChannel::Probe() {
    // One-byte atomics at both ends of each range: a compare-and-swap of 0 for 0 (it needs
    // write access and changes nothing) where the channel wrote, an atomic read where it read.
    FabricAtomic check_write{FabricAtomic::kCompare, FI_CSWAP, FI_UINT8};
    FabricAtomic check_read{FabricAtomic::kFetch, FI_ATOMIC_READ, FI_UINT8};
    fid_ep *endpoint = endpoint_.endpoint.get();
    if (!context_->Supports(endpoint, check_write) || !context_->Supports(endpoint, check_read)) {
        return;
    }
    Scratch &scratch = *scratch_;
    size_t slot = 0;
    for (const Touched &touched : touched_) {
        for (uint64_t at : {touched.low, touched.high - 1}) {
            if (slot == kProbeSlots) return;
            void *context = ContextOf(touched.write ? 1 : 2, kProbe, touched.server_id);
            ssize_t ret =
                touched.write
                    ? fi_compare_atomic(endpoint, scratch.zero, 1, scratch_desc_, scratch.zero,
                                        scratch_desc_, &scratch.probe[slot], scratch_desc_,
                                        touched.address, at, touched.key, FI_UINT8, FI_CSWAP,
                                        context)
                    : fi_fetch_atomic(endpoint, scratch.zero, 1, scratch_desc_,
                                      &scratch.probe[slot], scratch_desc_, touched.address, at,
                                      touched.key, FI_UINT8, FI_ATOMIC_READ, context);
            if (ret == 0) {
                ++posted_;
                ++probes_;
                ++slot;
            }
        }
    }
}

void FabricChannel::Reap() {
    fid_cq *queue = endpoint_.queue.get();
    for (;;) {
        fi_cq_entry entries[16];
        ssize_t n = fi_cq_read(queue, entries, 16);
        if (n > 0) continue;  // successes, if the provider reports them anyway
        if (n != -FI_EAVAIL) break;
        fi_cq_err_entry error{};
        if (fi_cq_readerr(queue, &error, 0) < 1) break;
        ++reported_;
        char detail[256] = "";
        const char *cause =
            fi_cq_strerror(queue, error.prov_errno, error.err_data, detail, sizeof(detail));
        void *context = error.op_context;
        std::string message = fmt::format(
            "{} on memory server {} failed: {} ({}; provider {})", CallOf(context),
            ServerOf(context), fi_strerror(error.err), cause ? cause : "", context_->provider());
        if (KindOf(context) == kProbe) {
            refusals_.push_back({openfam::FAM_ERR_LIBFABRIC,
                                 message + "; the operation was dropped and found by a probe"});
        } else if (current_tag_ != 0 && SameTag(current_tag_, context)) {
            mine_.push_back({openfam::FAM_ERR_LIBFABRIC, std::move(message)});
        } else if (deferred_.size() < kDeferredKept) {
            deferred_.push_back({openfam::FAM_ERR_LIBFABRIC, std::move(message)});
        } else {
            ++deferred_dropped_;
        }
    }
}

void FabricChannel::CollectUnreported(std::vector<Failed> *into) {
    uint64_t counted = fi_cntr_readerr(endpoint_.counter.get());
    // A counted failure may reach the queue a moment later (auto-progress providers).
    for (int i = 0; counted > reported_ && i < 100; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(10));
        Reap();
    }
    if (counted > reported_) {
        into->push_back({openfam::FAM_ERR_LIBFABRIC,
                         fmt::format("{} operation(s) failed without a report (provider {})",
                                     counted - reported_, context_->provider())});
        reported_ = counted;
    }
}

std::string FabricChannel::GiveUpMessage(Outcome outcome) const {
    if (outcome == Outcome::kRefused) {
        std::string message = refusals_.front().message;
        if (refusals_.size() > 1) {
            message += fmt::format(" (and {} more refused ranges)", refusals_.size() - 1);
        }
        return message;
    }
    std::string servers;
    for (const auto &[id, address] : busy_servers_) {
        servers += (servers.empty() ? "" : ", ") + std::to_string(id);
    }
    return fmt::format(
        "memory server{} {} did not complete within {} ms (provider {}): the server is down or "
        "overloaded, or the provider dropped an operation the server refused (invalid or "
        "revoked key, address outside the registration){}",
        busy_servers_.size() == 1 ? "" : "s", servers.empty() ? "?" : servers,
        context_->timeout_ms(), context_->provider(), BufferSizeHint(context_->provider()));
}

void FabricChannel::EndInFlight() {
    // A read's response half received when the endpoint closes would crash the process
    // (FabricDomain::half_received_reads_crash), and on sockets every operation in flight
    // would leak (closing_leaks_operations). Aborted first, each connection to a busy server
    // fails under the provider as a reset from the server would: it fails the read it was
    // receiving once (sockets: every operation on the connection, each freeing what carried
    // it), and closes the connection; nothing more lands in the reads' buffers, and no
    // response is half received when the endpoint closes. Only this endpoint's own
    // connections (PostNotingSockets): one the provider replaced since (a connection lost
    // while idle, made again by a later operation) is not known, and is closed as before.
    std::vector<SocketName> dropped;
    const uint32_t format = domain_.info()->addr_format;
    for (const auto &[id, address] : busy_servers_) {
        auto known = sockets_.find(id);
        if (known == sockets_.end()) continue;
        std::vector<SocketName> some =
            DropConnections(context_->av(), format, address, known->second);
        dropped.insert(dropped.end(), some.begin(), some.end());
    }
    // The provider sees the failure at its next progress, and closes the socket a few rounds
    // later (sockets: and fails each operation that was on it, as its progress thread comes to
    // it); bounded.
    fid_cntr *counter = endpoint_.counter.get();
    auto until = Clock::now() + kDroppingConnections;
    for (;;) {
        bool open = false;
        for (const SocketName &socket : dropped) open = open || StillOpen(socket);
        uint64_t done = fi_cntr_read(counter);  // drives a manual-progress provider
        bool ended =
            !domain_.closing_leaks_operations() || done + fi_cntr_readerr(counter) >= posted_;
        if ((!open && ended) || Clock::now() >= until) return;
        std::this_thread::yield();
    }
}

std::string FabricChannel::Reopen() {
    // Closing the endpoint ends what is in flight: nothing completes into this channel (or
    // into the caller's buffers) later. Registrations bound to it go with it.
    CloseEndpoint();
    try {
        Open();
    } catch (const Failure &failure) {
        // Left closed: the next call opens it again (Begin), or fails saying why.
        CloseEndpoint();
        return failure.fam_error_msg();
    }
    return {};
}

void FabricChannel::GiveUp(Outcome outcome) {
    // A refusal and an operation that never completed are both data-path failures; the
    // message tells them apart.
    std::string message = GiveUpMessage(outcome);
    // The close resets the connections to the servers with operations still queued
    // (CloseEndpoint), so that none of them lands after the caller writes those bytes again.
    std::string reopen_failure = Reopen();
    if (!reopen_failure.empty()) {
        message += "; reopening the channel's endpoint then failed: " + reopen_failure;
    }
    throw Failure(openfam::FAM_ERR_LIBFABRIC, message);
}

void FabricChannel::Settle(Clock::time_point deadline, bool raise) {
    Outcome outcome = WaitAll(deadline);
    if (outcome == Outcome::kDone) {
        if (failures_seen_ == 0) return;
        // After a failure a provider's counts can run ahead of what was posted (tcp counts an
        // operation lost with its connection twice), which would end later waits early: keep
        // the failures and start again on a fresh endpoint.
        std::vector<Failed> *failures = current_tag_ != 0 ? &mine_ : &deferred_;
        CollectUnreported(failures);
        std::string reopen_failure = Reopen();
        if (!reopen_failure.empty()) {
            failures->push_back(
                {openfam::FAM_ERR_LIBFABRIC,
                 "reopening the channel's endpoint after a failure: " + reopen_failure});
        }
        return;
    }
    if (raise) GiveUp(outcome);
    try {
        GiveUp(outcome);
    } catch (const Failure &failure) {
        deferred_.push_back(
            {static_cast<openfam::Fam_Error>(failure.fam_error()), failure.fam_error_msg()});
    }
}

void FabricChannel::Finish(Clock::time_point deadline) {
    Settle(deadline, true);
    if (!mine_.empty()) ThrowFirst(std::move(mine_));
}

void FabricChannel::ThrowFirst(std::vector<Failed> failures, uint64_t dropped) {
    Failed first = failures.front();
    uint64_t more = failures.size() - 1 + dropped;
    if (more > 0) first.message += fmt::format(" (and {} more failed operations)", more);
    throw Failure(first.error, first.message);
}

}  // namespace fampool
