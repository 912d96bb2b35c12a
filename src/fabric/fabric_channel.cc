#include "fabric/fabric_channel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "common/error.h"

namespace fampool {
namespace {

// How long a waiter polls the counter before it sleeps. Sleeping saves the core the memory
// server (or the application's other thread) needs; polling saves the wake-up latency of an
// operation that completes within microseconds.
constexpr auto kSpin = std::chrono::microseconds(50);
// Longest single sleep on the counter's wait object, so that one that misses an event costs
// latency, not a hang.
constexpr int kSliceMs = 20;
// Where the counter has no wait object (tcp, shm): after the spin, polls that yield the core
// for this long (a 1 MiB transfer takes 0.1-0.2 ms; napping instead cost shm 10-15% of its
// bandwidth at 1 MiB), then naps between polls, growing while nothing completes, up to what
// a long operation may lose.
constexpr auto kYieldFor = std::chrono::milliseconds(2);
constexpr auto kFirstNap = std::chrono::microseconds(2);
constexpr auto kLongestNap = std::chrono::microseconds(200);
// A waiter reads the counter's failure count once in this many polls (see WaitAll).
constexpr uint64_t kRoundsPerFailureCount = 16;
// Operations that made no progress for this long get their keys and ranges probed.
constexpr auto kProbeAfter = std::chrono::milliseconds(200);
// Key and range records kept for probing; operations beyond them are not probed.
constexpr size_t kTouchedKept = 32;
// Local registrations kept when the provider wants local buffers registered.
constexpr size_t kRegistrationCache = 16;
// Failures of non-blocking operations kept word for word until Quiet; more are counted.
constexpr size_t kDeferredKept = 16;

// An operation's context value: the call it belongs to (its tag; for a probe, whether it
// checked write or read access), the memory server, and the kind of operation, so that a
// failure in the queue can be reported and attributed.
constexpr int kServerBits = 24;
constexpr int kTagShift = kServerBits + 2;
constexpr uint64_t kServerMask = (uint64_t{1} << kServerBits) - 1;

void *ContextOf(uint64_t tag, uint8_t kind, uint64_t server_id) {
    uint64_t value = (tag << kTagShift) | (std::min(server_id, kServerMask) << 2) | kind;
    return reinterpret_cast<void *>(value);
}

uint64_t ValueOf(void *context) { return reinterpret_cast<uint64_t>(context); }
uint8_t KindOf(void *context) { return ValueOf(context) & 3; }
uint64_t TagOf(void *context) { return ValueOf(context) >> kTagShift; }
bool SameTag(uint64_t tag, void *context) {
    return (tag & (~uint64_t{0} >> kTagShift)) == TagOf(context);
}

std::string ServerOf(void *context) {
    uint64_t id = (ValueOf(context) >> 2) & kServerMask;
    return id == kServerMask ? std::string("?") : std::to_string(id);
}

const char *CallOf(void *context) {
    switch (KindOf(context)) {
        case 1: return "fi_read";
        case 2: return "fi_write";
        case 3: return "fi_atomic";
        default: return TagOf(context) == 1 ? "fi_write" : "fi_read";  // what a probe stood for
    }
}

}  // namespace

FabricChannel::FabricChannel(std::shared_ptr<FabricContext> context)
    : context_(std::move(context)), domain_(context_->domain()) {
    scratch_ = std::make_unique<Scratch>();
    std::memset(scratch_.get(), 0, sizeof(Scratch));
    Open();
}

FabricChannel::~FabricChannel() {
    // The provider may still write into buffers the caller owns: let it finish, boundedly.
    std::lock_guard<std::mutex> lock(mutex_);
    if (endpoint_.endpoint) WaitAll(Deadline());
    CloseEndpoint();
}

void FabricChannel::CloseEndpoint() {
    registrations_.clear();
    scratch_mr_.reset();
    endpoint_.endpoint.reset();
    endpoint_.queue.reset();
    endpoint_.counter.reset();
}

void FabricChannel::EndNonBlocking(bool blocking) {
    if (!blocking && (call_ends_.empty() || call_ends_.back() != posted_)) {
        call_ends_.push_back(posted_);
    }
}

void FabricChannel::Open() {
    EndpointOptions options;
    options.failures_only = true;
    options.queue_wait = FI_WAIT_NONE;
    options.counter_events = FI_READ | FI_WRITE;
    // How a waiter sleeps: on the counter where it has a condition variable (sockets), else
    // by yielding, then napping, between polls (tcp, shm). Not on a file descriptor: on tcp
    // every completion then costs a write to it, and fabric_bench measured 0.5-1 us more per
    // 256 B operation and 10-20% less bandwidth at 1 MiB than without; on sockets it fills a
    // pipe with wake-ups nobody reads and then blocks. Never FI_WAIT_UNSPEC: for shm that is a
    // sched_yield loop that ignores the timeout.
    for (fi_wait_obj wait : {FI_WAIT_MUTEX_COND, FI_WAIT_NONE}) {
        options.counter_wait = wait;
        try {
            endpoint_ = OpenEndpoint(domain_, context_->av(), options);
            break;
        } catch (const Failure &) {
            if (wait == FI_WAIT_NONE) throw;
        }
    }
    counter_waits_ = options.counter_wait != FI_WAIT_NONE;
    posted_ = reported_ = failures_seen_ = 0;
    call_ends_.clear();
    busy_servers_.clear();
    touched_.clear();
    refusals_.clear();
    if (domain_.local_registration()) {
        try {
            scratch_mr_ = domain_.Register(scratch_.get(), sizeof(Scratch), FI_READ | FI_WRITE,
                                           endpoint_.endpoint.get());
        } catch (const Failure &) {
            CloseEndpoint();  // not half open: the next call opens it again
            throw;
        }
        scratch_desc_ = fi_mr_desc(scratch_mr_.get());
    }
}

void FabricChannel::Begin(bool blocking) {
    // An endpoint that could not be reopened after a failure is opened again by the next call.
    if (!endpoint_.endpoint) Open();
    current_tag_ = blocking ? ++next_tag_ : 0;
    mine_.clear();
}

FabricChannel::Clock::time_point FabricChannel::Deadline() const {
    return Clock::now() + std::chrono::milliseconds(context_->timeout_ms());
}

const FabricBinding::Server &FabricChannel::Reachable(const FabricBinding &item,
                                                      size_t index) const {
    if (index >= item.servers.size() || !item.servers[index].reachable) {
        uint64_t id = index < item.servers.size() ? item.servers[index].id : index;
        Fail(openfam::FAM_ERR_NOPERM, "{} carries no fabric key for memory server {}",
             item.Describe(), id);
    }
    return item.servers[index];
}

// --- posting -------------------------------------------------------------------------------

template <typename PostCall>
void FabricChannel::Post(PostCall &&post, const char *call, uint64_t server_id,
                         Clock::time_point deadline) {
    for (;;) {
        ssize_t ret = post();
        if (ret == 0) {
            ++posted_;
            busy_servers_.insert(server_id);
            return;
        }
        if (ret != -FI_EAGAIN) {
            // Earlier pieces of this call may be in flight on the caller's buffer.
            Settle(deadline, false);
            Fail(openfam::FAM_ERR_LIBFABRIC, "{} to memory server {}: {} (provider {})", call,
                 server_id, fi_strerror(static_cast<int>(-ret)), context_->provider());
        }
        // The transmit queue is full: completions free it, and manual-progress providers
        // complete only while driven.
        fi_cntr_read(endpoint_.counter.get());
        Reap();
        if (Clock::now() >= deadline) {
            busy_servers_.insert(server_id);
            GiveUp(Outcome::kTimedOut);
        }
    }
}

void FabricChannel::Touch(const FabricBinding::Server &server, bool write, uint64_t remote,
                          uint64_t length) {
    for (Touched &touched : touched_) {
        if (touched.address == server.address && touched.key == server.key &&
            touched.write == write) {
            touched.low = std::min(touched.low, remote);
            touched.high = std::max(touched.high, remote + length);
            return;
        }
    }
    if (touched_.size() < kTouchedKept) {
        touched_.push_back({server.id, server.address, server.key, write, remote, remote + length});
    }
}

void FabricChannel::PostPieces(const FabricBinding &item, size_t index, uint64_t physical,
                               uint64_t length, iovec *pieces, void **descs, size_t count,
                               bool write, Clock::time_point deadline) {
    if (!item.servers[index].reachable) {
        Settle(deadline, false);  // earlier pieces may be in flight on the caller's buffer
        Reachable(item, index);   // throws
    }
    fid_ep *endpoint = endpoint_.endpoint.get();
    const FabricBinding::Server &server = item.servers[index];
    uint64_t remote = server.base + physical;
    void *context = ContextOf(current_tag_, write ? kWrite : kRead, server.id);
    Post(
        [&]() -> ssize_t {
            if (!write && count == 1) {
                return fi_read(endpoint, pieces[0].iov_base, length, descs[0], server.address,
                               remote, server.key, context);
            }
            fi_rma_iov rma{remote, length, server.key};
            fi_msg_rma message{pieces, descs, count, server.address, &rma, 1, context, 0};
            return write ? fi_writemsg(endpoint, &message, domain_.write_flags())
                         : fi_readmsg(endpoint, &message, 0);
        },
        write ? "fi_write" : "fi_read", server.id, deadline);
    Touch(server, write, remote, length);
}

void FabricChannel::Transfer(const FabricBinding &item, uint64_t offset, char *local,
                             uint64_t nbytes, void *desc, bool write,
                             Clock::time_point deadline) {
    if (item.interleave != 0 && item.servers.size() > 1) {
        return TransferStriped(item, offset, local, nbytes, desc, write, deadline);
    }
    // The item lies on one server, contiguously: one operation per largest message.
    const uint64_t largest = std::max<uint64_t>(domain_.max_message(), 1);
    FabricBinding::Place place = item.Locate(offset);
    while (nbytes > 0) {
        uint64_t length = std::min(nbytes, largest);
        iovec piece{local, length};
        PostPieces(item, place.server, place.physical, length, &piece, &desc, 1, write,
                   deadline);
        place.physical += length;
        local += length;
        nbytes -= length;
    }
}

void FabricChannel::TransferStriped(const FabricBinding &item, uint64_t offset, char *local,
                                    uint64_t nbytes, void *desc, bool write,
                                    Clock::time_point deadline) {
    // Consecutive blocks of one server are contiguous in its extent but K blocks apart in the
    // caller's buffer: up to the provider's iov limit of them go as one operation, which
    // gathers (or scatters) them (4 KiB blocks over 3 servers: one operation per block was
    // 0.45 GB/s over tcp). Everything is posted before anyone waits, so the servers work in
    // parallel.
    const uint64_t largest = std::max<uint64_t>(domain_.max_message(), 1);
    const size_t most = domain_.iov_limit();
    struct Gathered {
        uint64_t physical = 0, length = 0;
        size_t count = 0;
        iovec pieces[FabricDomain::kMostPieces];
        void *descs[FabricDomain::kMostPieces];
    };
    std::vector<Gathered> open(item.servers.size());
    auto flush = [&](size_t index) {
        Gathered &gathered = open[index];
        if (gathered.count == 0) return;
        PostPieces(item, index, gathered.physical, gathered.length, gathered.pieces,
                   gathered.descs, gathered.count, write, deadline);
        gathered.count = 0;
        gathered.length = 0;
    };
    while (nbytes > 0) {
        FabricBinding::Place place = item.Locate(offset);
        uint64_t length = std::min({nbytes, place.contiguous, largest});
        Gathered &gathered = open[place.server];
        bool continues = gathered.count > 0 && gathered.count < most &&
                         gathered.physical + gathered.length == place.physical &&
                         gathered.length + length <= largest;
        if (!continues) {
            flush(place.server);
            gathered.physical = place.physical;
        }
        gathered.pieces[gathered.count] = {local, length};
        gathered.descs[gathered.count] = desc;
        ++gathered.count;
        gathered.length += length;
        offset += length;
        local += length;
        nbytes -= length;
    }
    for (size_t index = 0; index < open.size(); ++index) flush(index);
}

void *FabricChannel::LocalDescriptor(const void *local, uint64_t length,
                                     Clock::time_point deadline) {
    if (!domain_.local_registration()) return nullptr;
    const char *start = static_cast<const char *>(local);
    for (auto it = registrations_.begin(); it != registrations_.end(); ++it) {
        if (start >= it->start && start + length <= it->start + it->length) {
            registrations_.splice(registrations_.begin(), registrations_, it);
            return fi_mr_desc(registrations_.front().mr.get());
        }
    }
    if (registrations_.size() >= kRegistrationCache) {
        Settle(deadline, true);  // the oldest registration may back an operation in flight
        // After a failure Settle replaced the endpoint, registrations and all (and when it
        // could not open a new one, this call opens it or fails saying why).
        if (!endpoint_.endpoint) Open();
        if (!registrations_.empty()) registrations_.pop_back();
    }
    FidPtr<fid_mr> mr =
        domain_.Register(local, length, FI_READ | FI_WRITE, endpoint_.endpoint.get());
    void *desc = fi_mr_desc(mr.get());
    registrations_.push_front(LocalRegistration{start, length, std::move(mr)});
    return desc;
}

// --- operations ----------------------------------------------------------------------------

void FabricChannel::Read(const std::shared_ptr<Binding> &binding, uint64_t offset, void *local,
                         uint64_t nbytes, bool blocking) {
    const auto &item = static_cast<const FabricBinding &>(*binding);
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(blocking);
    auto deadline = Deadline();
    if (blocking && domain_.local_registration() && nbytes <= kBounce) {
        Transfer(item, offset, scratch_->bounce, nbytes, scratch_desc_, false, deadline);
        Finish(deadline);
        std::memcpy(local, scratch_->bounce, nbytes);
        return;
    }
    void *desc = LocalDescriptor(local, nbytes, deadline);
    Transfer(item, offset, static_cast<char *>(local), nbytes, desc, false, deadline);
    if (blocking) Finish(deadline);
    EndNonBlocking(blocking);
}

void FabricChannel::Write(const std::shared_ptr<Binding> &binding, uint64_t offset,
                          const void *local, uint64_t nbytes, bool blocking) {
    const auto &item = static_cast<const FabricBinding &>(*binding);
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(blocking);
    auto deadline = Deadline();
    if (blocking && domain_.local_registration() && nbytes <= kBounce) {
        std::memcpy(scratch_->bounce, local, nbytes);
        Transfer(item, offset, scratch_->bounce, nbytes, scratch_desc_, true, deadline);
        Finish(deadline);
        return;
    }
    void *desc = LocalDescriptor(local, nbytes, deadline);
    // libfabric takes a writable pointer for both directions; a write only reads it.
    char *source = const_cast<char *>(static_cast<const char *>(local));
    Transfer(item, offset, source, nbytes, desc, true, deadline);
    if (blocking) Finish(deadline);
    EndNonBlocking(blocking);
}

void FabricChannel::Elements(const std::shared_ptr<Binding> &binding, ElementPlan plan,
                             char *local, uint64_t count, uint64_t element_size, bool to_fam,
                             bool blocking) {
    const auto &item = static_cast<const FabricBinding &>(*binding);
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(blocking);
    auto deadline = Deadline();
    if (count == 0 || element_size == 0) return;
    void *desc = LocalDescriptor(local, count * element_size, deadline);
    // Elements adjacent in the item (stride 1, consecutive indices) move as one run.
    uint64_t run_start = 0, run_length = 0;
    char *run_local = local;
    for (uint64_t i = 0; i < count; ++i) {
        uint64_t at = plan.IndexOf(i) * element_size;
        if (run_length > 0 && at == run_start + run_length) {
            run_length += element_size;
            continue;
        }
        if (run_length > 0) Transfer(item, run_start, run_local, run_length, desc, to_fam, deadline);
        run_start = at;
        run_length = element_size;
        run_local = local + i * element_size;
    }
    Transfer(item, run_start, run_local, run_length, desc, to_fam, deadline);
    if (blocking) Finish(deadline);
    EndNonBlocking(blocking);
}

void FabricChannel::Atomic(Binding &binding, uint64_t offset, AtomicOp op, DataType type,
                           const void *operand, const void *compare, void *result) {
    const auto &item = static_cast<const FabricBinding &>(binding);
    // An aligned value never crosses an interleave block: one server, one operation.
    FabricBinding::Place place = item.Locate(offset);
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(true);
    auto deadline = Deadline();
    fid_ep *endpoint = endpoint_.endpoint.get();
    FabricAtomic atomic;
    if (!ToFabric(op, type, result != nullptr, &atomic) ||
        !context_->Supports(endpoint, atomic)) {
        return Fallback(item, place, op, type, operand, compare, result, deadline);
    }
    const FabricBinding::Server &server = Reachable(item, place.server);
    size_t size = SizeOf(type);
    Scratch &scratch = *scratch_;
    FabricOperand(op, type, operand, scratch.operand);
    if (compare) std::memcpy(scratch.compare, compare, size);
    uint64_t remote = server.base + place.physical;
    void *context = ContextOf(current_tag_, kAtomic, server.id);
    void *desc = scratch_desc_;
    Post(
        [&]() -> ssize_t {
            switch (atomic.kind) {
                case FabricAtomic::kPlain: {
                    fi_ioc ioc{scratch.operand, 1};
                    fi_rma_ioc rma{remote, 1, server.key};
                    fi_msg_atomic message{&ioc,        &desc,     1,       server.address, &rma,
                                          1,           atomic.type, atomic.op, context,      0};
                    return fi_atomicmsg(endpoint, &message, domain_.write_flags());
                }
                case FabricAtomic::kFetch:
                    return fi_fetch_atomic(endpoint, scratch.operand, 1, desc, scratch.result,
                                           desc, server.address, remote, server.key,
                                           atomic.type, atomic.op, context);
                default:
                    return fi_compare_atomic(endpoint, scratch.operand, 1, desc,
                                             scratch.compare, desc, scratch.result, desc,
                                             server.address, remote, server.key, atomic.type,
                                             atomic.op, context);
            }
        },
        "fi_atomic", server.id, deadline);
    Finish(deadline);
    if (result) std::memcpy(result, scratch.result, size);
}

void FabricChannel::Fallback(const FabricBinding &item, const FabricBinding::Place &place,
                             AtomicOp op, DataType type, const void *operand,
                             const void *compare, void *result, Clock::time_point deadline) {
    if (place.server >= item.servers.size()) {
        Fail(openfam::FAM_ERR_INVALID, "{} has no memory server index {}", item.Describe(),
             place.server);
    }
    // The memory server's CPU applies it: after this channel's earlier operations landed.
    Settle(deadline, true);
    alignas(16) unsigned char ignored[16];
    ExtentRef extent{item.region_id, item.persistent};
    const FabricBinding::Server &server = item.servers[place.server];
    try {
        context_->server(server.id)
            .Atomic(extent, server.key, place.physical, static_cast<int>(op),
                    static_cast<int>(type), operand, compare, result ? result : ignored);
    } catch (const Failure &failure) {
        // The server refused the key: fail as the fabric fails an operation whose key it
        // refuses, so that the caller binds the item again when its keys were replaced.
        if (failure.fam_error() != openfam::FAM_ERR_NOPERM) throw;
        Fail(openfam::FAM_ERR_LIBFABRIC, "fi_atomic on memory server {} failed: {}", server.id,
             failure.fam_error_msg());
    }
}

void FabricChannel::Fence() {
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(false);
    // FI_FENCE is rare among providers (sockets only here): complete what came first.
    Settle(Deadline(), true);
}

void FabricChannel::Quiet() {
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(false);
    Settle(Deadline(), true);
    if (deferred_.empty()) return;
    std::vector<Failed> failures = std::move(deferred_);
    deferred_.clear();
    uint64_t dropped = deferred_dropped_;
    deferred_dropped_ = 0;
    ThrowFirst(std::move(failures), dropped);
}

void FabricChannel::Drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(false);
    Settle(Deadline(), false);
}

uint64_t FabricChannel::Pending() {
    std::lock_guard<std::mutex> lock(mutex_);
    fid_cntr *counter = endpoint_.counter.get();
    if (!counter) return 0;  // closed: nothing can be in flight
    uint64_t done = fi_cntr_read(counter) + fi_cntr_readerr(counter);
    while (!call_ends_.empty() && call_ends_.front() <= done) call_ends_.pop_front();
    return call_ends_.size();
}

// --- completion ----------------------------------------------------------------------------

FabricChannel::Outcome FabricChannel::WaitAll(Clock::time_point deadline) {
    fid_cntr *counter = endpoint_.counter.get();
    auto now = Clock::now();
    auto spin_until = now + kSpin;
    auto nap = kFirstNap;
    auto last_change = now;
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
            busy_servers_.clear();
            return Outcome::kDone;
        }
        if (!refusals_.empty()) return Outcome::kRefused;
        now = Clock::now();
        if (done + failed != last_done) {
            last_done = done + failed;
            last_change = now;
        } else if (now - last_change >= kProbeAfter) {
            Probe();
            last_change = now;
        }
        if (now >= deadline) return Outcome::kTimedOut;
        if (now < spin_until) continue;
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
        const char *cause = fi_cq_strerror(queue, error.prov_errno, error.err_data, detail,
                                           sizeof(detail));
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
    for (uint64_t id : busy_servers_) {
        servers += (servers.empty() ? "" : ", ") + std::to_string(id);
    }
    return fmt::format(
        "memory server{} {} did not complete within {} ms (provider {}): the server is down or "
        "overloaded, or the provider dropped an operation the server refused (invalid or "
        "revoked key, address outside the registration)",
        busy_servers_.size() == 1 ? "" : "s", servers.empty() ? "?" : servers,
        context_->timeout_ms(), context_->provider());
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
            failures->push_back({openfam::FAM_ERR_LIBFABRIC,
                                 "reopening the channel's endpoint after a failure: " +
                                     reopen_failure});
        }
        return;
    }
    if (raise) GiveUp(outcome);
    try {
        GiveUp(outcome);
    } catch (const Failure &failure) {
        deferred_.push_back({static_cast<openfam::Fam_Error>(failure.fam_error()),
                             failure.fam_error_msg()});
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
