#include "memserver/fabric_server.h"

#include <fmt/format.h>

#include "common/error.h"

namespace fampool {
namespace {

// How long the progress thread keeps polling after it last saw traffic: long enough to catch
// the next request of a client issuing operations back to back without a wake-up in between.
constexpr auto kSpin = std::chrono::microseconds(100);

// Reads (and drops) whatever the queue holds; this is what drives a manual-progress provider.
// Incoming RMA and atomics put no entries in the target's queue, so entries are rare: failures
// of the provider's own traffic. True when there was one.
bool Reap(fid_cq *queue) {
    fi_cq_entry entries[8];
    ssize_t n = fi_cq_read(queue, entries, 8);
    if (n == -FI_EAVAIL) {
        fi_cq_err_entry error{};
        fi_cq_readerr(queue, &error, 0);
        return true;
    }
    return n > 0;
}

}  // namespace

FabricServer::FabricServer(const FabricConfig &config, Progress progress)
    : domain_(config, FabricDomain::Role::kServer), mode_(progress) {
    av_ = domain_.OpenAddressVector();
    EndpointOptions options;
    if (domain_.remote_events()) options.counter_events = FI_REMOTE_READ | FI_REMOTE_WRITE;
    // A file descriptor to sleep on, where the provider has one that wakes on traffic (tcp).
    // shm's only wait object is a sched_yield loop that ignores timeouts: never use it.
    options.queue_wait = mode_ == Progress::kBlocking ? FI_WAIT_FD : FI_WAIT_NONE;
    try {
        try {
            endpoint_ = OpenEndpoint(domain_, av_.get(), options);
        } catch (const Failure &) {
            if (options.queue_wait == FI_WAIT_NONE) throw;
            options.queue_wait = FI_WAIT_NONE;
            endpoint_ = OpenEndpoint(domain_, av_.get(), options);
        }
    } catch (const Failure &failure) {
        // shm names the endpoint's region after node:service; a file a dead server left there
        // is taken over, one whose process lives is refused (OpenEndpoint says so).
        Fail(openfam::FAM_ERR_LIBFABRIC, "memory server endpoint at {}:{}: {}", config.node,
             config.service, failure.fam_error_msg());
    }
    queue_fd_ = options.queue_wait == FI_WAIT_FD ? QueueDescriptor(endpoint_.queue.get()) : -1;
    address_ = EndpointAddress(endpoint_.endpoint.get(), provider());
    // Providers with automatic progress (sockets) serve remote operations on their own threads.
    if (domain_.manual_progress()) progress_ = std::thread([this] { DriveProgress(); });
}

FabricServer::~FabricServer() {
    stopping_ = true;
    if (progress_.joinable()) {
        if (queue_fd_ >= 0) fi_cq_signal(endpoint_.queue.get());  // wakes poll()
        progress_.join();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    registrations_.clear();
}

bool FabricServer::Served() {
    bool served = Reap(endpoint_.queue.get());
    if (endpoint_.counter) {
        uint64_t count = fi_cntr_read(endpoint_.counter.get());
        served |= count != remote_operations_.load(std::memory_order_relaxed);
        remote_operations_.store(count, std::memory_order_relaxed);
    }
    return served;
}

void FabricServer::DriveProgress() {
    if (mode_ == Progress::kBusyPoll) {
        while (!stopping_.load(std::memory_order_relaxed)) Reap(endpoint_.queue.get());
        return;
    }
    RunProgressLoop(
        domain_.fabric(), endpoint_.queue.get(), queue_fd_, stopping_, [this] { return Served(); },
        kSpin, /*yields=*/true);
}

Registrar::Registration FabricServer::Register(void *address, size_t length, bool writable) {
    uint64_t access = FI_REMOTE_READ | (writable ? FI_REMOTE_WRITE : 0);
    FidPtr<fid_mr> mr = domain_.Register(address, length, access, endpoint_.endpoint.get());
    Registration registration;
    registration.key = fi_mr_key(mr.get());
    if (registration.key == FI_KEY_NOTAVAIL) {
        Fail(openfam::FAM_ERR_LIBFABRIC, "fi_mr_key: key not available (provider {})", provider());
    }
    registration.base = domain_.virtual_addressing() ? reinterpret_cast<uint64_t>(address) : 0;
    std::lock_guard<std::mutex> lock(mutex_);
    registration.handle = next_handle_++;
    registrations_.emplace(registration.handle, std::move(mr));
    return registration;
}

void FabricServer::Deregister(uint64_t handle) {
    FidPtr<fid_mr> mr;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = registrations_.find(handle);
        if (it == registrations_.end()) {
            Fail(openfam::FAM_ERR_INVALID, "fabric registration {} does not exist", handle);
        }
        mr = std::move(it->second);
        registrations_.erase(it);
    }
    mr.reset();  // fi_close
}

}  // namespace fampool
