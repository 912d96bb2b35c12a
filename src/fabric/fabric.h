// What the libfabric data path shares between its two sides (the client's FabricTransport and
// the memory server's FabricServer): opening a fabric, domain, address vector and RDM endpoint
// for a provider, registering memory, and turning libfabric errors into Failures.
//
// Provider differences this hides (see shared/ENVIRONMENT.md): `shm` addresses registered
// memory by virtual address (FI_MR_VIRT_ADDR) and names endpoints with strings; `tcp` (which
// libfabric layers as "tcp;ofi_rxm" for FI_EP_RDM) and `sockets` address it by offset and use
// socket addresses; `shm` and `tcp` need the target to drive progress by hand.
#ifndef FAMPOOL_FABRIC_FABRIC_H_
#define FAMPOOL_FABRIC_FABRIC_H_

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace fampool {

struct FabricConfig {
    std::string provider;            // as the user names it: "tcp", "shm", "sockets", "verbs"...
    std::string node = "127.0.0.1";  // the local interface to use (its address); empty: any
    std::string service;             // the port a server listens on; empty for clients
    // The provider's domain (device) to use, as fi_info names it ("mlx5_0", "cxi0"); empty:
    // the one the provider prefers for `node`.
    std::string domain;
    int timeout_ms = 10000;  // bound on every wait for a completion
    // Register local buffers even when the provider does not ask for it (FI_MR_LOCAL): lets
    // tests exercise that path on providers that do not need it.
    bool register_local = false;
    // Keep every read on the provider's key-checking path (shm: see FabricDomain::ReadFlags),
    // and every transfer and atomic on the fabric.
    bool checked_reads = false;
    // Over shm, reach an item whose memory servers give this process their heaps' descriptors
    // (memserver/heap_socket.h) with loads and stores on those heaps (FabricBinding::direct).
    bool direct = true;
    // With `direct`: open the heap files by name instead (fabric_direct: path), which only
    // their owner, the cluster user, or its sharing group can.
    bool direct_by_path = false;
    // Gathers and scatters of at least this many elements (not adjacent in the item) that do
    // not lie on mapped heaps are done by the memory servers' CPUs, one request per server,
    // instead of one RMA per element; 0: never.
    uint64_t memory_side_elements = 64;
    // Bytes of element offsets and data in one request to a memory server.
    uint64_t memory_side_request_bytes = 4 << 20;
};

// The actions of the crash and termination signals at one moment.
class CrashSignals {
  public:
    static constexpr size_t kCount = 8;  // SIGINT ILL ABRT BUS FPE SEGV TERM QUIT
    CrashSignals();                      // as they are now

  private:
    friend void RestoreCrashSignals(const CrashSignals &before);
    struct sigaction saved_[kCount];
};

// Where a libfabric provider's library installed its own handlers for the crash and
// termination signals since `before` (crash_signals.cc says why), puts back what was there
// (the default action if that was such a handler too). Runs when libfampool is loaded and
// around each fi_getinfo.
void RestoreCrashSignals(const CrashSignals &before);

// Throws Failure(FAM_ERR_LIBFABRIC, "<call>: <fi_strerror> (provider <provider>)").
[[noreturn]] void FailFabric(const char *call, ssize_t ret, const std::string &provider);

inline ssize_t CheckFabric(ssize_t ret, const char *call, const std::string &provider) {
    if (ret < 0) FailFabric(call, ret, provider);
    return ret;
}

// Closes any libfabric object (they all start with a struct fid named `fid`).
struct FidCloser {
    template <typename T>
    void operator()(T *object) const {
        if (object) fi_close(&object->fid);
    }
};
template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser>;

// One provider's fabric and domain, opened for a client (initiates RMA and atomics), a server
// (is their target), or an endpoint that sends and receives messages (the metadata calls).
class FabricDomain {
  public:
    enum class Role { kClient, kServer, kMessages };

    FabricDomain(const FabricConfig &config, Role role);
    ~FabricDomain();
    FabricDomain(const FabricDomain &) = delete;
    FabricDomain &operator=(const FabricDomain &) = delete;

    const FabricConfig &config() const { return config_; }
    const std::string &provider() const { return config_.provider; }
    // The provider as libfabric reports it ("tcp;ofi_rxm").
    const char *provider_reported() const { return info_->fabric_attr->prov_name; }
    fi_info *info() const { return info_; }
    fid_domain *domain() const { return domain_.get(); }
    fid_fabric *fabric() const { return fabric_.get(); }

    bool virtual_addressing() const { return mr_mode() & FI_MR_VIRT_ADDR; }
    bool local_registration() const { return config_.register_local || (mr_mode() & FI_MR_LOCAL); }
    bool endpoint_registration() const { return mr_mode() & FI_MR_ENDPOINT; }
    // Whether the provider counts operations other endpoints apply to this one (FI_RMA_EVENT,
    // asked for by servers where the provider has it).
    bool remote_events() const { return info_->caps & FI_RMA_EVENT; }
    bool manual_progress() const { return info_->domain_attr->data_progress == FI_PROGRESS_MANUAL; }
    size_t max_message() const { return info_->ep_attr->max_msg_size; }
    // Local buffer pieces one RMA operation may gather or scatter (at most kMostPieces).
    static constexpr size_t kMostPieces = 8;
    size_t iov_limit() const {
        return std::clamp<size_t>(info_->tx_attr->iov_limit, 1, kMostPieces);
    }
    // Whether the provider chose this domain's endpoint names (shm without a source address:
    // "<pid>:<uid>:<endpoint index>"), rather than fampool naming them after a port.
    bool provider_names_endpoints() const { return provider_names_endpoints_; }
    // Flags for writes and non-fetching atomics: FI_DELIVERY_COMPLETE where the provider has
    // it, so that they complete once their bytes are in the server's memory (by default tcp
    // and shm complete small writes once the bytes left): a blocking put or a quiet then means
    // what it says, and a write the target refuses fails at the client.
    uint64_t write_flags() const { return write_flags_; }
    // Flags for a read of `length` bytes. shm serves a read in one of two ways: the target's
    // progress thread copies it after checking the key (with FI_DELIVERY_COMPLETE, which
    // means nothing more for a read), or the reader copies it itself with process_vm_readv
    // without looking at the key (no flag, and nothing asked of the endpoint's order). The
    // second is 1.6x faster from 32 KiB (64 KiB: 5.9 against 9.4 us here) and 2x slower at
    // 4 KiB and less (a system call against a command in shared memory): reads from
    // kFastReadBytes take it, unless writes of the channel may still be in flight (the
    // target's queue keeps them in order; a reader's own copy would overtake them). Only
    // processes allowed to ptrace the server (the same user, or CAP_SYS_PTRACE) can take it
    // at all: for them the key was never a boundary.
    static constexpr uint64_t kFastReadBytes = 16 * 1024;
    // Whether the provider keeps atomics after atomics in order (FI_ORDER_ATOMIC_RAW, _WAW).
    bool atomics_ordered() const {
        constexpr uint64_t kBoth = FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAW;
        return (info_->tx_attr->msg_order & kBoth) == kBoth;
    }
    // With FabricConfig::checked_reads every read takes the first way.
    uint64_t ReadFlags(uint64_t length, bool writes_in_flight) const {
        if (!two_read_paths_) return 0;  // the provider's one way
        bool checked = config_.checked_reads || writes_in_flight || length < kFastReadBytes;
        return checked ? write_flags_ : 0;
    }

    // Whether closing an endpoint while a read's response is half received crashes the
    // process: libfabric before 1.18, tcp under ofi_rxm. Its tcp provider then reports the
    // read twice, the second time with no context, which ofi_rxm dereferences (fixed upstream
    // in 1.18; docs/robustness.md, "Large transfers, and giving up on them"). A channel aborts
    // such connections first (DropConnections, fabric/connection_reset.h).
    bool half_received_reads_crash() const { return half_received_reads_crash_; }
    // Whether closing an endpoint with operations in flight leaks them: the sockets provider
    // takes an endpoint's operations off its domain's progress engine without freeing the
    // engine's entries that carry them, 128 for the whole domain (libfabric 1.17's
    // sock_pe_remove_tx_ctx), and once they are gone no operation of any endpoint of the
    // domain is sent again. A channel aborts its connections first, and waits for the provider
    // to fail each operation on them, which frees its entry.
    bool closing_leaks_operations() const { return closing_leaks_operations_; }
    // Whether a channel must know its endpoint's sockets (either of the above).
    bool drops_connections_at_close() const {
        return half_received_reads_crash_ || closing_leaks_operations_;
    }

    FidPtr<fid_av> OpenAddressVector();
    // Registers [address, address + length) for `access` (FI_READ, FI_REMOTE_WRITE, ...); binds
    // and enables it on `endpoint` when the provider wants endpoint-bound registrations.
    FidPtr<fid_mr> Register(const void *address, size_t length, uint64_t access, fid_ep *endpoint);

  private:
    // Keys drawn for one registration before giving up on the provider's FI_ENOKEY.
    static constexpr int kKeyDraws = 16;
    uint64_t mr_mode() const { return info_->domain_attr->mr_mode; }

    FabricConfig config_;
    fi_info *info_ = nullptr;
    FidPtr<fid_fabric> fabric_;
    FidPtr<fid_domain> domain_;
    // A key we choose when the provider does not (no FI_MR_PROV_KEY): drawn from the kernel's
    // random source over the provider's whole key width (mr_key_size bytes), so that a key says
    // nothing about another (docs/security.md, "Fabric keys").
    uint64_t RandomKey() const;
    uint64_t write_flags_ = 0;
    bool two_read_paths_ = false;  // see ReadFlags
    bool provider_names_endpoints_ = false;
    bool half_received_reads_crash_ = false;
    bool closing_leaks_operations_ = false;
};

// An RDM endpoint bound to an address vector, a completion queue and, optionally, a
// completion counter for its reads and writes. Members close in reverse order: endpoint first.
struct FabricEndpoint {
    FidPtr<fid_cntr> counter;
    FidPtr<fid_cq> queue;
    FidPtr<fid_ep> endpoint;
    // Closes it now, endpoint first (before buffers it may still write into go away).
    void Close() {
        endpoint.reset();
        queue.reset();
        counter.reset();
    }
};

struct EndpointOptions {
    // The queue reports only failures (FI_SELECTIVE_COMPLETION); completions are counted.
    bool failures_only = false;
    fi_wait_obj queue_wait = FI_WAIT_NONE;             // FI_WAIT_NONE: polled only
    fi_cq_format queue_format = FI_CQ_FORMAT_CONTEXT;  // FI_CQ_FORMAT_MSG: with lengths
    // Events the counter counts (FI_READ | FI_WRITE: this endpoint's own operations;
    // FI_REMOTE_READ | FI_REMOTE_WRITE: other endpoints' operations on it); 0: no counter.
    uint64_t counter_events = 0;
    fi_wait_obj counter_wait = FI_WAIT_NONE;
};

// Opens, binds and enables an endpoint. Where the provider names endpoints itself (shm), a name
// it finds taken is retried with the next name, up to kEndpointNameAttempts names (a dead
// process of the same pid may have left one file per endpoint it had; see fabric.cc).
constexpr int kEndpointNameAttempts = 64;
FabricEndpoint OpenEndpoint(FabricDomain &domain, fid_av *av, const EndpointOptions &options);

// What to add to a message about a peer that never answers when FI_OFI_RXM_BUFFER_SIZE was
// set in this process's environment (rxm then refuses connections to peers of another size);
// empty otherwise. fampool sets the same default in every process (fabric.cc).
std::string BufferSizeHint(const std::string &provider);

// The endpoint's address as other endpoints insert it into their address vectors.
std::string EndpointAddress(fid_ep *endpoint, const std::string &provider);

// The queue's wait descriptor (fi_control FI_GETWAIT), or -1 when it has none.
int QueueDescriptor(fid_cq *queue);

// The loop of a server's progress thread, until `stopping`: calls `serve` (which reads the
// queue: that is what drives a manual-progress provider; true when it found work), keeps
// polling for `spin` after the last work, then sleeps on the queue's descriptor `queue_fd`
// (tcp; wakes on traffic) or, with none (-1; shm), in naps that grow with idle time.
// Wake it for `stopping` with fi_cq_signal. Another thread that hands it work wakes it with
// fi_cq_signal too, and says so through `pending` (true while such work waits): fi_trywait
// clears a signal that came just before it, so the thread asks `pending` before it sleeps.
// `yields`: the polling yields the core after a short spin (memory servers: see fabric.cc).
// The metadata service does not: with 4 shards and 16 clients on 2 cores, shards that yielded
// every 20 us served a third of the allocations (docs/bench/results-notes.md); with 1 shard,
// yielding or not made no difference beyond the noise (5,496-6,488 pairs/s at 1 client).
void RunProgressLoop(fid_fabric *fabric, fid_cq *queue, int queue_fd,
                     const std::atomic<bool> &stopping, const std::function<bool()> &serve,
                     std::chrono::microseconds spin, bool yields,
                     const std::function<bool()> &pending = nullptr);

}  // namespace fampool

#endif  // FAMPOOL_FABRIC_FABRIC_H_
