#include "fabric/fabric.h"

#include <poll.h>
#include <rdma/fi_eq.h>
#include <sys/prctl.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"

namespace fampool {

void FailFabric(const char *call, ssize_t ret, const std::string &provider) {
    Fail(openfam::FAM_ERR_LIBFABRIC, "{}: {} (provider {})", call,
         fi_strerror(static_cast<int>(ret < 0 ? -ret : ret)), provider);
}

namespace {

// ofi_rxm (the RDM layer over tcp and verbs) gives every connection bounce buffers of this
// many bytes: 16 KiB by default, which left a PE over tcp with 72.4 MiB of anonymous memory
// after its first 1 MiB put and get (3 memory servers), and cost every fam_initialize and
// fam_finalize of the cluster test suites most of their time in page faults and zeroing. At
// 1 KiB: 12.4 MiB, with get/put bandwidth and small-operation rates within run-to-run noise
// (docs/configuration.md has the figures). Both ends of a connection must use the same size
// (rxm refuses a peer whose differs), so every fampool process, PE and service alike, sets the
// same default; a value in the environment wins and must then be the same everywhere.
constexpr const char *kRxmBufferVariable = "FI_OFI_RXM_BUFFER_SIZE";
constexpr const char *kRxmBufferDefault = "1024";

bool rxm_buffer_size_given = false;  // by the environment, not by this default

// When libfampool is loaded: before the program's main, so before anything else in the process
// (an MPI library's MPI_Init) can have made libfabric read its settings.
[[gnu::constructor]] void SetFabricDefaults() {
    rxm_buffer_size_given = getenv(kRxmBufferVariable) != nullptr;
    setenv(kRxmBufferVariable, kRxmBufferDefault, 0);
}

// An rxm endpoint whose buffers are not the size the environment now names: libfabric read its
// settings before libfampool was loaded (a program that loads it with dlopen after using
// libfabric). Its connections to fampool's services would be refused and time out.
void CheckBufferSize(fid_ep *endpoint, const fi_info *info, const std::string &provider) {
    const char *layers = info->fabric_attr->prov_name;
    if (!layers || !std::strstr(layers, "ofi_rxm")) return;
    size_t limit = 0, length = sizeof limit;
    if (fi_getopt(&endpoint->fid, FI_OPT_ENDPOINT, FI_OPT_BUFFERED_LIMIT, &limit, &length) != 0) {
        return;  // the provider does not say: nothing to compare
    }
    const char *named = getenv(kRxmBufferVariable);
    if (!named || std::to_string(limit) == named) return;
    Fail(openfam::FAM_ERR_LIBFABRIC,
         "provider {} uses {}-byte message buffers in this process, but {}={}: libfabric read "
         "its settings before fampool set them, and the cluster's services would refuse this "
         "process's connections; export {}={} for every process of the job",
         provider, limit, kRxmBufferVariable, named, kRxmBufferVariable, named);
}

}  // namespace

std::string BufferSizeHint(const std::string &provider) {
    if (!rxm_buffer_size_given || provider == "shm" || provider == "sockets") return "";
    // fampool's own launchers pass the default on to the PEs they start: no cause to name.
    const char *named = getenv(kRxmBufferVariable);
    if (named && std::strcmp(named, kRxmBufferDefault) == 0) return "";
    return fmt::format(
        "; or {}={} in this process's environment differs from the servers' (fampool's "
        "default, {}, unless set there too): rxm refuses peers whose buffer sizes differ",
        kRxmBufferVariable, named ? named : "", kRxmBufferDefault);
}

namespace {

// What fampool would like beyond what it needs; a provider without it is still used.
struct Wishes {
    uint64_t caps = 0;      // servers: FI_RMA_EVENT (FabricDomain::remote_events)
    uint64_t op_flags = 0;  // clients: FI_DELIVERY_COMPLETE (FabricDomain::write_flags)
    // Clients: reads after writes and writes after writes to one server in order, atomics
    // after atomics too (a non-fetching atomic completes by the next quiet, a fetch after it
    // must see it). Not asked of shm (FabricDomain::ReadFlags says why).
    uint64_t msg_order = 0;
};

fi_info *GetInfo(const FabricConfig &config, FabricDomain::Role role, bool with_node,
                 Wishes wishes) {
    fi_info *hints = fi_allocinfo();
    if (!hints) Fail(openfam::FAM_ERR_RESOURCE, "fi_allocinfo: out of memory");
    bool server = role == FabricDomain::Role::kServer;
    bool messages = role == FabricDomain::Role::kMessages;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = messages ? FI_MSG | wishes.caps
                           : FI_RMA | FI_ATOMIC | wishes.caps |
                                 (server ? FI_REMOTE_READ | FI_REMOTE_WRITE : FI_READ | FI_WRITE);
    // Everything fampool can live with; the provider keeps the bits it needs.
    hints->domain_attr->mr_mode =
        FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->tx_attr->op_flags = wishes.op_flags;
    hints->tx_attr->msg_order = wishes.msg_order;
    hints->mode = 0;
    hints->fabric_attr->prov_name = strdup(config.provider.c_str());
    if (!config.domain.empty()) hints->domain_attr->name = strdup(config.domain.c_str());

    const char *node = with_node && !config.node.empty() ? config.node.c_str() : nullptr;
    const char *service = !config.service.empty() && role != FabricDomain::Role::kClient
                              ? config.service.c_str()
                              : nullptr;
    fi_info *info = nullptr;
    CrashSignals before;
    int ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node, service,
                         node || service ? FI_SOURCE : 0, hints, &info);
    fi_freeinfo(hints);
    RestoreCrashSignals(before);  // a provider loaded just now may have taken them
    if (ret == -FI_ENODATA) {
        // Give up wishes one at a time, the least important first.
        if (wishes.caps)
            return GetInfo(config, role, with_node, {0, wishes.op_flags, wishes.msg_order});
        constexpr uint64_t kAtomicOrder = FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAW;
        if (wishes.msg_order & kAtomicOrder) {  // keep RMA's order at least
            return GetInfo(config, role, with_node,
                           {0, wishes.op_flags, wishes.msg_order & ~kAtomicOrder});
        }
        if (wishes.msg_order) return GetInfo(config, role, with_node, {0, wishes.op_flags, 0});
        if (wishes.op_flags) return GetInfo(config, role, with_node, {});
    }
    if (ret) {
        Fail(openfam::FAM_ERR_LIBFABRIC,
             "fi_getinfo: {} (provider {}{}, {} {}:{}): no FI_EP_RDM endpoint with {}",
             fi_strerror(-ret), config.provider,
             config.domain.empty() ? "" : ", domain " + config.domain,
             messages ? "messages"
             : server ? "server"
                      : "client",
             node ? node : "*", service ? service : "*", messages ? "messages" : "RMA and atomics");
    }
    return info;
}

}  // namespace

FabricDomain::FabricDomain(const FabricConfig &config, Role role) : config_(config) {
    const bool client = role == Role::kClient;
    Wishes wishes;
    if (role == Role::kMessages) {
        // nothing beyond sending and receiving
    } else if (client) {
        wishes.op_flags = FI_DELIVERY_COMPLETE;
        // shm orders nothing it is not asked to, and ordering would keep every read off its
        // fast path (see ReadFlags); other providers keep reads and writes in order.
        if (config.provider != "shm") {
            wishes.msg_order =
                FI_ORDER_RMA_RAW | FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAW;
        }
    } else {
        // A server with manual progress and no wait object that wakes on incoming operations
        // (shm) can still tell busy from idle by counting them (FI_RMA_EVENT).
        wishes.caps = FI_RMA_EVENT;
    }
    info_ = GetInfo(config, role, true, wishes);
    // Providers that name endpoints with strings (shm) derive a client's name from its source
    // address, which would then be the same in every client process: let them choose a unique
    // one instead. Socket-addressed providers keep the node, so traffic uses its interface.
    bool unnamed = client || (role == Role::kMessages && config.service.empty());
    if (unnamed && info_->addr_format == FI_ADDR_STR) {
        fi_freeinfo(info_);
        info_ = GetInfo(config, role, false, wishes);
        provider_names_endpoints_ = true;
    }
    // Only writes ask for delivery completion, operation by operation: shm takes a slower
    // protocol for every operation, reads included, when it is the endpoint's default.
    // Keep one answer: the provider's first (preferred) one, or its first in the domain asked
    // for (a layered provider such as tcp;ofi_rxm does not filter by the name itself).
    fi_info *chosen = info_;
    if (!config.domain.empty()) {
        std::vector<std::string> offered;
        for (chosen = info_; chosen; chosen = chosen->next) {
            const char *name = chosen->domain_attr ? chosen->domain_attr->name : nullptr;
            if (name && config.domain == name) break;
            if (name && std::find(offered.begin(), offered.end(), name) == offered.end()) {
                offered.emplace_back(name);
            }
        }
        if (!chosen) {
            fi_freeinfo(info_);
            Fail(openfam::FAM_ERR_LIBFABRIC, "provider {} has no domain \"{}\" (it has: {})",
                 config.provider, config.domain, fmt::join(offered, ", "));
        }
    }
    write_flags_ = chosen->tx_attr->op_flags & FI_DELIVERY_COMPLETE;
    chosen->tx_attr->op_flags &= ~FI_DELIVERY_COMPLETE;
    two_read_paths_ = client && std::strcmp(chosen->fabric_attr->prov_name, "shm") == 0 &&
                      write_flags_ != 0 && (chosen->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
    half_received_reads_crash_ = std::strstr(chosen->fabric_attr->prov_name, "tcp") &&
                                 std::strstr(chosen->fabric_attr->prov_name, "ofi_rxm") &&
                                 fi_version() < FI_VERSION(1, 18);
    closing_leaks_operations_ = std::strcmp(chosen->fabric_attr->prov_name, "sockets") == 0;
    if (chosen != info_ || info_->next) {
        fi_info *all = info_;
        info_ = fi_dupinfo(chosen);
        fi_freeinfo(all);
        if (!info_) Fail(openfam::FAM_ERR_RESOURCE, "fi_dupinfo: out of memory");
    }
    try {
        fid_fabric *fabric = nullptr;
        CheckFabric(fi_fabric(info_->fabric_attr, &fabric, nullptr), "fi_fabric", provider());
        fabric_.reset(fabric);
        fid_domain *domain = nullptr;
        CheckFabric(fi_domain(fabric, info_, &domain, nullptr), "fi_domain", provider());
        domain_.reset(domain);
    } catch (...) {
        domain_.reset();
        fabric_.reset();
        fi_freeinfo(info_);
        throw;
    }
}

FabricDomain::~FabricDomain() {
    domain_.reset();
    fabric_.reset();
    fi_freeinfo(info_);
}

FidPtr<fid_av> FabricDomain::OpenAddressVector() {
    fi_av_attr attributes{};
    attributes.type =
        info_->domain_attr->av_type != FI_AV_UNSPEC ? info_->domain_attr->av_type : FI_AV_TABLE;
    fid_av *av = nullptr;
    CheckFabric(fi_av_open(domain(), &attributes, &av, nullptr), "fi_av_open", provider());
    return FidPtr<fid_av>(av);
}

uint64_t FabricDomain::RandomKey() const {
    // 0 means the provider did not say: its keys are then 64-bit (fi_domain(3)).
    size_t width = info_->domain_attr->mr_key_size;
    width = width == 0 ? sizeof(uint64_t) : std::min(width, sizeof(uint64_t));
    uint64_t mask = width == sizeof(uint64_t) ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1;
    for (;;) {
        uint64_t key = 0;
        if (getrandom(&key, sizeof key, 0) != static_cast<ssize_t>(sizeof key)) {
            Fail(openfam::FAM_ERR_RESOURCE, "getrandom for a fabric key failed: {}",
                 std::strerror(errno));
        }
        key &= mask;
        // 0 and all ones mean "no key" and "every grant" to fampool's own calls.
        if (key != 0 && key != mask) return key;
    }
}

FidPtr<fid_mr> FabricDomain::Register(const void *address, size_t length, uint64_t access,
                                      fid_ep *endpoint) {
    iovec iov{const_cast<void *>(address), length};
    fi_mr_attr attributes{};
    attributes.mr_iov = &iov;
    attributes.iov_count = 1;
    attributes.access = access;
    const bool we_choose = !(mr_mode() & FI_MR_PROV_KEY);
    fid_mr *mr = nullptr;
    // A drawn key that another registration of this domain holds is refused (FI_ENOKEY): draw
    // again. With 64-bit keys that takes billions of live registrations to be likely at all.
    int status = -FI_ENOKEY;
    for (int attempt = 0; attempt < kKeyDraws && status == -FI_ENOKEY; ++attempt) {
        attributes.requested_key = we_choose ? RandomKey() : 0;
        status = fi_mr_regattr(domain(), &attributes, 0, &mr);
        if (!we_choose) break;
    }
    CheckFabric(status, "fi_mr_regattr", provider());
    FidPtr<fid_mr> registration(mr);
    if (endpoint_registration() && endpoint) {
        CheckFabric(fi_mr_bind(mr, &endpoint->fid, 0), "fi_mr_bind", provider());
        CheckFabric(fi_mr_enable(mr), "fi_mr_enable", provider());
    }
    return registration;
}

namespace {

FabricEndpoint OpenEndpointOnce(FabricDomain &domain, fid_av *av, const EndpointOptions &options,
                                int *enable_status) {
    const std::string &provider = domain.provider();
    FabricEndpoint result;

    fi_cq_attr queue_attributes{};
    queue_attributes.format = options.queue_format;
    queue_attributes.wait_obj = options.queue_wait;
    fid_cq *queue = nullptr;
    CheckFabric(fi_cq_open(domain.domain(), &queue_attributes, &queue, nullptr), "fi_cq_open",
                provider);
    result.queue.reset(queue);

    if (options.counter_events) {
        fi_cntr_attr counter_attributes{};
        counter_attributes.events = FI_CNTR_EVENTS_COMP;
        counter_attributes.wait_obj = options.counter_wait;
        fid_cntr *counter = nullptr;
        CheckFabric(fi_cntr_open(domain.domain(), &counter_attributes, &counter, nullptr),
                    "fi_cntr_open", provider);
        result.counter.reset(counter);
    }

    fid_ep *endpoint = nullptr;
    CheckFabric(fi_endpoint(domain.domain(), domain.info(), &endpoint, nullptr), "fi_endpoint",
                provider);
    result.endpoint.reset(endpoint);
    CheckFabric(fi_ep_bind(endpoint, &av->fid, 0), "fi_ep_bind(av)", provider);
    uint64_t queue_flags = FI_TRANSMIT | FI_RECV;
    if (options.failures_only) queue_flags |= FI_SELECTIVE_COMPLETION;
    CheckFabric(fi_ep_bind(endpoint, &queue->fid, queue_flags), "fi_ep_bind(cq)", provider);
    if (result.counter) {
        CheckFabric(fi_ep_bind(endpoint, &result.counter->fid, options.counter_events),
                    "fi_ep_bind(cntr)", provider);
    }
    *enable_status = fi_enable(endpoint);
    if (*enable_status != 0) result.Close();
    return result;
}

}  // namespace

FabricEndpoint OpenEndpoint(FabricDomain &domain, fid_av *av, const EndpointOptions &options) {
    // shm names an unnamed endpoint "<pid>:<uid>:<index of the endpoint in the process>" and
    // backs it with a file of that name under /dev/shm. A process killed with SIGKILL leaves
    // its files behind; once pids wrap around (pid_max is 32768 here, and a test run goes
    // through that many), a new process can draw the pid of a dead one, and enabling its
    // endpoint then finds the old file stamped with its own, live, pid: the provider refuses
    // it (FI_EBUSY) and removes the file. The next endpoint gets the next index, and the
    // name is free again anyway: try again. A name fampool chose (a server's port) is not
    // retried: there a live process may really hold it.
    int attempts = domain.provider_names_endpoints() ? kEndpointNameAttempts : 1;
    int status = 0;
    for (int attempt = 1;; ++attempt) {
        FabricEndpoint endpoint = OpenEndpointOnce(domain, av, options, &status);
        if (status == 0) {
            CheckBufferSize(endpoint.endpoint.get(), domain.info(), domain.provider());
            return endpoint;
        }
        if (status != -FI_EBUSY || attempt >= attempts) break;
    }
    if (status == -FI_EBUSY) {
        Fail(openfam::FAM_ERR_LIBFABRIC,
             "fi_enable: {} (provider {}): the endpoint's name is taken{}", fi_strerror(EBUSY),
             domain.provider(),
             domain.provider_names_endpoints()
                 ? fmt::format(" in {} attempts", attempts)
                 : std::string(" by a live process (is another server using this port?)"));
    }
    FailFabric("fi_enable", status, domain.provider());
}

std::string EndpointAddress(fid_ep *endpoint, const std::string &provider) {
    std::string address(64, '\0');
    size_t length = address.size();
    int ret = fi_getname(&endpoint->fid, address.data(), &length);
    if (ret == -FI_ETOOSMALL) {
        address.resize(length);
        ret = fi_getname(&endpoint->fid, address.data(), &length);
    }
    CheckFabric(ret, "fi_getname", provider);
    address.resize(length);
    return address;
}

int QueueDescriptor(fid_cq *queue) {
    int fd = -1;
    if (fi_control(&queue->fid, FI_GETWAIT, &fd) != 0) return -1;
    return fd;
}

namespace {

using Clock = std::chrono::steady_clock;

// Longest sleep on the queue's file descriptor (tcp): it wakes on traffic; the bound only
// lets the thread notice shutdown.
constexpr int kSleepMs = 100;
// Sleeps between polls of a provider with nothing to sleep on (shm): they grow while the
// server stays idle, up to the latency an idle server may add to the next operation: 100 us
// at first (about 12% of a core here), 1 ms once it has been idle for a while (about 1.5%).
constexpr auto kFirstNap = std::chrono::microseconds(2);
constexpr auto kShortIdleNap = std::chrono::microseconds(100);
constexpr auto kLongIdle = std::chrono::milliseconds(100);
constexpr auto kLongIdleNap = std::chrono::microseconds(1000);
// A sleep on the descriptor that traffic ends within kShortSleep lengthens the polling
// window, up to kLongestSpin (see RunProgressLoop).
constexpr auto kShortSleep = std::chrono::microseconds(200);
constexpr auto kLongestSpin = std::chrono::microseconds(3200);
// After this long without work inside the window, a thread that `yields` yields the core
// between polls. Memory servers and PEs share cores (two here for three servers and a PE):
// a server that polled without yielding held a core the PE or the next server needed, and an
// operation that alternated between two servers took 230-370 us instead of 20 (see
// docs/bench/redundancy.md, "A second server"). A yield costs about a microsecond when nobody
// else wants the core.
constexpr auto kPureSpin = std::chrono::microseconds(10);

}  // namespace

void RunProgressLoop(fid_fabric *fabric, fid_cq *queue, int queue_fd,
                     const std::atomic<bool> &stopping, const std::function<bool()> &serve,
                     std::chrono::microseconds spin, bool yields,
                     const std::function<bool()> &pending) {
    // Short sleeps should be short: the default timer slack (50 us) would stretch them.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    // How long the thread polls after the last sign of traffic. Some traffic leaves no sign
    // while it is polled (tcp puts nothing in a target's queue for the RMA it serves, and the
    // descriptor is readable only until the provider reads the socket), so the thread can fall
    // asleep under steady traffic; each sleep then costs the next operation a wake-up. A sleep
    // that traffic ends at once says so: the window doubles, up to kLongestSpin, and goes back
    // to `spin` after a sleep that lasted.
    auto window = spin;
    auto last_work = Clock::now();
    auto active_until = last_work + window;
    auto nap = kFirstNap;
    while (!stopping.load(std::memory_order_relaxed)) {
        if (serve()) {
            last_work = Clock::now();
            active_until = last_work + window;
            nap = kFirstNap;
            continue;
        }
        // Within the window, polling the queue is all: it drives the provider. The system
        // calls below cost a microsecond or more each; made every round they added ~2 us to
        // a 256 B operation over tcp, so only a thread about to sleep makes them. The window
        // yields the core after kPureSpin, so that threads with work take it.
        auto polled = Clock::now();
        if (polled < active_until) {
            if (yields && polled - last_work > kPureSpin) std::this_thread::yield();
            continue;
        }
        // With a descriptor (tcp), traffic shows as work left to progress or as a readable
        // descriptor. fi_trywait also clears the provider's stale wake-ups; without it the
        // descriptor stays readable after a client vanished, and the thread would spin.
        fid *waiting = &queue->fid;
        bool may_sleep = queue_fd >= 0 && fi_trywait(fabric, &waiting, 1) == FI_SUCCESS;
        pollfd poll_fd{queue_fd, POLLIN, 0};
        if ((queue_fd >= 0 && (!may_sleep || poll(&poll_fd, 1, 0) > 0)) || (pending && pending())) {
            active_until = Clock::now() + window;
            continue;
        }
        if (queue_fd >= 0) {
            // The descriptor wakes on incoming traffic.
            auto asleep = Clock::now();
            bool woken = poll(&poll_fd, 1, kSleepMs) > 0;
            auto now = Clock::now();
            window = woken && now - asleep < kShortSleep
                         ? std::min<std::chrono::microseconds>(window * 2, kLongestSpin)
                         : spin;
            if (woken) active_until = now + window;
            continue;
        }
        // Nothing to sleep on: poll at a rate that falls as the idle time grows.
        std::this_thread::sleep_for(nap);
        bool long_idle = Clock::now() - active_until > kLongIdle;
        nap =
            std::min<std::chrono::microseconds>(nap * 2, long_idle ? kLongIdleNap : kShortIdleNap);
    }
}

}  // namespace fampool
