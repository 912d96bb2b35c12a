// FabricChannel: opening its endpoint, posting transfers and atomics (split at interleave
// blocks and at the provider's limits), and the calls of the Channel interface. Waiting and
// recovery: fabric_channel_completion.cc.
#include "transport/fabric/fabric_channel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <thread>

#include "common/atomic_apply.h"
#include "common/error.h"
#include "fabric/connection_reset.h"
#include "transport/fabric/fabric_channel_internals.h"

namespace fampool {

using namespace channel;

FabricChannel::FabricChannel(std::shared_ptr<FabricContext> context, bool lazily)
    : context_(std::move(context)), domain_(context_->domain()) {
    scratch_ = std::make_unique<Scratch>();
    std::memset(scratch_.get(), 0, sizeof(Scratch));
    if (!lazily) Open();
}

FabricChannel::~FabricChannel() {
    // Work on the background queue uses this channel (memory-side gathers, their pieces that
    // go by RMA): it ends first.
    direct_queue_.Drain();
    // The provider may still write into buffers the caller owns: let it finish, boundedly.
    std::lock_guard<std::mutex> lock(mutex_);
    if (endpoint_.endpoint) WaitAll(Deadline());
    CloseEndpoint();
}

void FabricChannel::CloseEndpoint() {
    // Operations not all completed, or some failed (tcp can count one lost with its connection
    // twice): tcp would close the connections gracefully, and its kernel deliver what they still
    // hold once the servers can be reached, seconds later maybe, over what the caller wrote
    // since (a redundant item's write made again on a fresh endpoint, then newer writes).
    // Those connections are reset instead (ResetOnClose): what this node holds of them is
    // dropped. Only where a write completes once it is in the server's memory
    // (FI_DELIVERY_COMPLETE): elsewhere a completed write may still be queued, and the other
    // endpoints' connections to the server, reset when they close, would drop it.
    if (endpoint_.endpoint && posted_ != settled_ &&
        ((reads_in_flight_ && domain_.half_received_reads_crash()) ||
         domain_.closing_leaks_operations())) {
        EndInFlight();
    }
    if (endpoint_.endpoint && (posted_ != settled_ || failures_seen_ != 0) &&
        !busy_servers_.empty() && domain_.write_flags() != 0) {
        std::vector<fi_addr_t> peers;
        for (const auto &[id, address] : busy_servers_) peers.push_back(address);
        ResetOnClose(context_->av(), domain_.info()->addr_format, peers);
    }
    busy_servers_.clear();
    sockets_.clear();
    registrations_.clear();
    registered_bytes_ = 0;
    scratch_mr_.reset();
    endpoint_.endpoint.reset();
    endpoint_.queue.reset();
    endpoint_.counter.reset();
    // What was counted on it went with it: a closed channel has nothing in flight, and a
    // wait on it (BeginWait) needs no endpoint.
    posted_ = settled_ = reported_ = failures_seen_ = probes_ = 0;
    writes_in_flight_ = reads_in_flight_ = false;
    atomics_in_flight_ = 0;
    call_ends_.clear();
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
    posted_ = settled_ = reported_ = failures_seen_ = 0;
    writes_in_flight_ = reads_in_flight_ = false;
    atomics_in_flight_ = 0;
    call_ends_.clear();
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
    // An endpoint that could not be reopened after a failure is opened again by the next call;
    // a lazily opened one by the first.
    if (!endpoint_.endpoint) Open();
    current_tag_ = blocking ? ++next_tag_ : 0;
    mine_.clear();
}

void FabricChannel::AfterAtomics(Clock::time_point deadline) {
    // Providers order atomics among themselves, not reads and writes after them: a transfer
    // waits for the channel's non-fetching atomics (their failures wait for Quiet), so that a
    // get after fam_add sees the sum, as it does on the embedded model.
    if (atomics_in_flight_ == 0) return;
    uint64_t tag = current_tag_;
    current_tag_ = 0;  // their failures are not this call's
    Settle(deadline, false);
    current_tag_ = tag;
    if (!endpoint_.endpoint) Open();
}

void FabricChannel::BeginWait() {
    // Nothing posted since all completed: a channel without an endpoint (opened lazily, never
    // used on the fabric) needs none to wait for nothing.
    if (endpoint_.endpoint || posted_ != settled_) return Begin(false);
    current_tag_ = 0;
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
void FabricChannel::Post(PostCall &&post, const char *call, const FabricBinding::Server &server,
                         Clock::time_point deadline) {
    const uint64_t server_id = server.id;
    uint64_t last_done = ~uint64_t{0};
    for (;;) {
        ssize_t ret = PostNotingSockets(post, server_id);
        if (ret == 0) {
            ++posted_;
            busy_servers_.emplace(server_id, server.address);
            return;
        }
        if (ret != -FI_EAGAIN) {
            // Earlier pieces of this call may be in flight on the caller's buffer.
            Settle(deadline, false);
            Fail(openfam::FAM_ERR_LIBFABRIC, "{} to memory server {}: {} (provider {})", call,
                 server_id, fi_strerror(static_cast<int>(-ret)), context_->provider());
        }
        // The transmit queue is full: completions free it, and manual-progress providers
        // complete only while driven. Completions keep it waiting: only a server that
        // completes nothing for the whole timeout is given up on.
        uint64_t done = fi_cntr_read(endpoint_.counter.get());
        Reap();
        auto now = Clock::now();
        if (done != last_done) {
            last_done = done;
            deadline = std::max(deadline, now + std::chrono::milliseconds(context_->timeout_ms()));
        }
        if (now >= deadline) {
            busy_servers_.emplace(server_id, server.address);
            GiveUp(Outcome::kTimedOut);
        }
    }
}

template <typename PostCall>
ssize_t FabricChannel::PostNotingSockets(PostCall &post, uint64_t server_id) {
    if (!domain_.drops_connections_at_close() || sockets_.count(server_id) != 0) return post();
    // The provider opens the connection (and its socket) inside the call. Other sockets the
    // process opens meanwhile are told apart later by their peers (DropConnections); another
    // channel's first operations wait.
    std::lock_guard<std::mutex> lock(SocketsOpening());
    std::vector<SocketName> before = OpenSockets();
    ssize_t ret = post();
    std::vector<SocketName> after = OpenSockets();
    std::vector<SocketName> &opened = sockets_[server_id];
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                        std::back_inserter(opened));
    return ret;
}

uint64_t FabricChannel::LargestOperation() const {
    return std::clamp<uint64_t>(domain_.max_message(), 1, kLargestOperation);
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
    // The callers' descriptors stand for every piece they post: kByWindow is resolved here.
    void *resolved[FabricDomain::kMostPieces];
    for (size_t i = 0; i < count; ++i) {
        resolved[i] = descs[i] == kByWindow
                          ? WindowDescriptor(static_cast<const char *>(pieces[i].iov_base),
                                             pieces[i].iov_len, deadline)
                          : descs[i];
    }
    fid_ep *endpoint = endpoint_.endpoint.get();
    const FabricBinding::Server &server = item.servers[index];
    uint64_t remote = server.base + physical;
    void *context = ContextOf(current_tag_, write ? kWrite : kRead, server.id);
    Post(
        [&]() -> ssize_t {
            fi_rma_iov rma{remote, length, server.key};
            fi_msg_rma message{pieces, resolved, count, server.address, &rma, 1, context, 0};
            return write ? fi_writemsg(endpoint, &message, domain_.write_flags())
                         : fi_readmsg(endpoint, &message,
                                      domain_.ReadFlags(length, writes_in_flight_));
        },
        write ? "fi_write" : "fi_read", server, deadline);
    writes_in_flight_ |= write;
    reads_in_flight_ |= !write;
    Touch(server, write, remote, length);
}

void FabricChannel::Transfer(const FabricBinding &item, uint64_t offset, char *local,
                             uint64_t nbytes, void *desc, bool write, Clock::time_point deadline) {
    if (item.interleave != 0 && item.servers.size() > 1) {
        return TransferStriped(item, offset, local, nbytes, desc, write, deadline);
    }
    // The item lies on one server, contiguously: one operation per LargestOperation bytes.
    const uint64_t largest = LargestOperation();
    FabricBinding::Place place = item.Locate(offset);
    while (nbytes > 0) {
        uint64_t length = std::min(nbytes, largest);
        iovec piece{local, length};
        PostPieces(item, place.server, place.physical, length, &piece, &desc, 1, write, deadline);
        place.physical += length;
        local += length;
        nbytes -= length;
    }
}

// --- operations ----------------------------------------------------------------------------

void channel::CopyDirect(const FabricBinding &item, uint64_t offset, char *local, uint64_t nbytes,
                         bool write) {
    while (nbytes > 0) {
        FabricBinding::Place place = item.Locate(offset);
        uint64_t length = std::min(nbytes, place.contiguous);
        char *fam = item.servers[place.server].direct + place.physical;
        write ? WriteFamBytes(fam, local, length) : CopyFamBytes(local, fam, length);
        offset += length;
        local += length;
        nbytes -= length;
    }
}

void FabricChannel::CopyDirect(const std::shared_ptr<Binding> &binding, uint64_t offset,
                               char *local, uint64_t nbytes, bool write, bool blocking) {
    const auto &item = static_cast<const FabricBinding &>(*binding);
    if (blocking || nbytes <= kDirectInline) {
        return channel::CopyDirect(item, offset, local, nbytes, write);
    }
    // The queue holds the binding, and with it the heap mappings, until the copy is done.
    direct_queue_.Post([binding, offset, local, nbytes, write] {
        channel::CopyDirect(static_cast<const FabricBinding &>(*binding), offset, local, nbytes,
                            write);
    });
}

void FabricChannel::Read(const std::shared_ptr<Binding> &binding, uint64_t offset, void *local,
                         uint64_t nbytes, bool blocking) {
    const auto &item = static_cast<const FabricBinding &>(*binding);
    if (item.direct) {
        return CopyDirect(binding, offset, static_cast<char *>(local), nbytes, false, blocking);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(blocking);
    auto deadline = Deadline();
    AfterAtomics(deadline);
    if (blocking && domain_.local_registration() && nbytes <= kBounce) {
        Transfer(item, offset, scratch_->bounce, nbytes, scratch_desc_, false, deadline);
        Finish(deadline);
        std::memcpy(local, scratch_->bounce, nbytes);
        return;
    }
    if (blocking && Stages(item, nbytes)) {
        return StagedTransfer(item, offset, static_cast<char *>(local), nbytes, false, deadline);
    }
    void *desc = LocalDescriptor(local, nbytes, deadline);
    Transfer(item, offset, static_cast<char *>(local), nbytes, desc, false, deadline);
    if (blocking) Finish(deadline);
    EndNonBlocking(blocking);
}

void FabricChannel::Write(const std::shared_ptr<Binding> &binding, uint64_t offset,
                          const void *local, uint64_t nbytes, bool blocking) {
    const auto &item = static_cast<const FabricBinding &>(*binding);
    // libfabric takes a writable pointer for both directions; a write only reads it.
    char *source = const_cast<char *>(static_cast<const char *>(local));
    if (item.direct) return CopyDirect(binding, offset, source, nbytes, true, blocking);
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(blocking);
    auto deadline = Deadline();
    AfterAtomics(deadline);
    MakePagesAhead(item, offset, nbytes);
    if (blocking && domain_.local_registration() && nbytes <= kBounce) {
        std::memcpy(scratch_->bounce, local, nbytes);
        Transfer(item, offset, scratch_->bounce, nbytes, scratch_desc_, true, deadline);
        Finish(deadline);
        return;
    }
    if (blocking && Stages(item, nbytes)) {
        return StagedTransfer(item, offset, source, nbytes, true, deadline);
    }
    void *desc = LocalDescriptor(local, nbytes, deadline);
    Transfer(item, offset, source, nbytes, desc, true, deadline);
    if (blocking) Finish(deadline);
    EndNonBlocking(blocking);
}

void FabricChannel::WriteCopies(const std::vector<std::shared_ptr<Binding>> &items, uint64_t offset,
                                const void *local, uint64_t nbytes) {
    for (const auto &item : items) {
        if (static_cast<const FabricBinding &>(*item).direct) {
            return Channel::WriteCopies(items, offset, local, nbytes);
        }
    }
    char *source = const_cast<char *>(static_cast<const char *>(local));
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(true);
    auto deadline = Deadline();
    AfterAtomics(deadline);
    for (const auto &item : items) {
        MakePagesAhead(static_cast<const FabricBinding &>(*item), offset, nbytes);
    }
    void *desc = scratch_desc_;
    if (domain_.local_registration() && nbytes <= kBounce) {
        std::memcpy(scratch_->bounce, local, nbytes);
        source = scratch_->bounce;
    } else {
        desc = LocalDescriptor(local, nbytes, deadline);
    }
    for (const auto &item : items) {
        Transfer(static_cast<const FabricBinding &>(*item), offset, source, nbytes, desc, true,
                 deadline);
    }
    Finish(deadline);
}

void FabricChannel::Elements(const std::shared_ptr<Binding> &binding, ElementPlan plan, char *local,
                             uint64_t count, uint64_t element_size, bool to_fam, bool blocking) {
    const auto &item = static_cast<const FabricBinding &>(*binding);
    if (item.direct) {
        auto move = [binding, plan = std::move(plan), local, count, element_size, to_fam] {
            const auto &mapped = static_cast<const FabricBinding &>(*binding);
            for (uint64_t i = 0; i < count; ++i) {
                channel::CopyDirect(mapped, plan.IndexOf(i) * element_size,
                                    local + i * element_size, element_size, to_fam);
            }
        };
        if (blocking || count * element_size <= kDirectInline) return move();
        return direct_queue_.Post(std::move(move));
    }
    if (ToMemorySide(count) && !Adjacent(plan, count)) {
        return ElementsOnServers(binding, std::move(plan), local, count, element_size, to_fam,
                                 blocking);
    }
    RmaElements(item, plan, local, count, element_size, to_fam, blocking);
}

void FabricChannel::RmaElements(const FabricBinding &item, const ElementPlan &plan, char *local,
                                uint64_t count, uint64_t element_size, bool to_fam, bool blocking) {
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(blocking);
    auto deadline = Deadline();
    AfterAtomics(deadline);
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
        if (run_length > 0)
            Transfer(item, run_start, run_local, run_length, desc, to_fam, deadline);
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
    // A 128-bit fetch is a compare-and-swap on the CPU (cmpxchg16b always writes): over a
    // read-only mapping it takes the fabric's way to the memory server instead.
    if (item.direct && (item.writable || SizeOf(type) < 16)) {
        char *word = item.servers[place.server].direct + place.physical;
        return ApplyAtomic(word, op, type, operand, compare, result);
    }
    // A non-fetching atomic completes by the next fence or quiet, as a non-blocking put does.
    const bool blocking = result != nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    Begin(blocking);
    auto deadline = Deadline();
    FabricAtomic atomic;
    bool known = ToFabric(op, type, result != nullptr, &atomic);
    if (atomic.kind == FabricAtomic::kPlain && context_->plain_atomics_fetch()) {
        atomic.kind = FabricAtomic::kFetch;
    }
    if (!known || !context_->Supports(endpoint_.endpoint.get(), atomic)) {
        return Fallback(item, place, op, type, operand, compare, result, deadline);
    }
    const FabricBinding::Server &server = Reachable(item, place.server);
    // Every operand slot in use: wait for those atomics (their failures wait for Quiet).
    if (!blocking && atomics_in_flight_ == kOperandSlots) Settle(deadline, false);
    if (!endpoint_.endpoint) Open();  // a failure there replaced it; reopening may fail
    fid_ep *endpoint = endpoint_.endpoint.get();
    size_t size = SizeOf(type);
    Scratch &scratch = *scratch_;
    // A blocking atomic after non-fetching ones the provider does not keep in order waits
    // for them (shm orders nothing it is not asked to).
    if (blocking && !domain_.atomics_ordered()) AfterAtomics(deadline);
    unsigned char *operand_slot = blocking ? scratch.operand : scratch.operands[atomics_in_flight_];
    unsigned char *result_slot = blocking ? scratch.result : scratch.results[atomics_in_flight_];
    FabricOperand(op, type, operand, operand_slot);
    if (compare) std::memcpy(scratch.compare, compare, size);
    uint64_t remote = server.base + place.physical;
    void *context = ContextOf(current_tag_, kAtomic, server.id);
    void *desc = scratch_desc_;
    Post(
        [&]() -> ssize_t {
            switch (atomic.kind) {
                case FabricAtomic::kPlain: {
                    fi_ioc ioc{operand_slot, 1};
                    fi_rma_ioc rma{remote, 1, server.key};
                    fi_msg_atomic message{&ioc, &desc,       1,         server.address, &rma,
                                          1,    atomic.type, atomic.op, context,        0};
                    return fi_atomicmsg(endpoint, &message, domain_.write_flags());
                }
                case FabricAtomic::kFetch:
                    return fi_fetch_atomic(endpoint, operand_slot, 1, desc, result_slot, desc,
                                           server.address, remote, server.key, atomic.type,
                                           atomic.op, context);
                default:
                    return fi_compare_atomic(endpoint, scratch.operand, 1, desc, scratch.compare,
                                             desc, scratch.result, desc, server.address, remote,
                                             server.key, atomic.type, atomic.op, context);
            }
        },
        "fi_atomic", server, deadline);
    writes_in_flight_ = true;
    if (!blocking) {
        ++atomics_in_flight_;
        return EndNonBlocking(false);
    }
    Finish(deadline);
    std::memcpy(result, scratch.result, size);
}

void FabricChannel::Fallback(const FabricBinding &item, const FabricBinding::Place &place,
                             AtomicOp op, DataType type, const void *operand, const void *compare,
                             void *result, Clock::time_point deadline) {
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
        context_->server(server.id).Atomic(extent, server.key, place.physical, static_cast<int>(op),
                                           static_cast<int>(type), operand, compare,
                                           result ? result : ignored);
    } catch (const Failure &failure) {
        // The server refused the key: fail as the fabric fails an operation whose key it
        // refuses, so that the caller binds the item again when its keys were replaced.
        if (failure.fam_error() != openfam::FAM_ERR_NOPERM) throw;
        Fail(openfam::FAM_ERR_LIBFABRIC, "fi_atomic on memory server {} failed: {}", server.id,
             failure.fam_error_msg());
    }
}

void FabricChannel::Fence() {
    direct_queue_.Drain();
    std::lock_guard<std::mutex> lock(mutex_);
    BeginWait();
    // FI_FENCE is rare among providers (sockets only here): complete what came first.
    Settle(Deadline(), true);
}

void FabricChannel::Quiet() {
    // The fabric's operations are waited for (they may still write into the caller's buffers)
    // even when a copy of the direct queue failed; its failure is reported first.
    std::exception_ptr direct_failure;
    try {
        direct_queue_.Quiet();
    } catch (...) {
        direct_failure = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    BeginWait();
    Settle(Deadline(), true);
    if (direct_failure) std::rethrow_exception(direct_failure);
    if (deferred_.empty()) return;
    std::vector<Failed> failures = std::move(deferred_);
    deferred_.clear();
    uint64_t dropped = deferred_dropped_;
    deferred_dropped_ = 0;
    ThrowFirst(std::move(failures), dropped);
}

void FabricChannel::Drain() {
    direct_queue_.Drain();
    std::lock_guard<std::mutex> lock(mutex_);
    BeginWait();
    Settle(Deadline(), false);
}

uint64_t FabricChannel::Pending() {
    uint64_t direct = direct_queue_.Pending();
    std::lock_guard<std::mutex> lock(mutex_);
    fid_cntr *counter = endpoint_.counter.get();
    if (!counter) return direct;  // closed: nothing can be in flight on the fabric
    uint64_t done = fi_cntr_read(counter) + fi_cntr_readerr(counter);
    while (!call_ends_.empty() && call_ends_.front() <= done) call_ends_.pop_front();
    return direct + call_ends_.size();
}

}  // namespace fampool
