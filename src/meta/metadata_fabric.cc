#include "meta/metadata_fabric.h"

#include <fmt/format.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "common/error.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kServiceReceives = 64;  // calls the service can take before answering any
constexpr size_t kServiceSends = 64;     // replies in flight
constexpr size_t kLongestName = 512;     // bytes of an endpoint name in reply_to
constexpr size_t kMostPeers = 16384;     // address vector entries kept for callers
// The service's thread polls this long after its last call before it sleeps: back-to-back
// calls then find it awake (sleeping at once put a wake-up, 100-200 us here, on every call).
constexpr auto kServiceSpin = std::chrono::microseconds(100);
// A caller polls for its reply for kSpin (a round trip takes 3 us over shm, 30-40 us over tcp
// here), then sleeps on the queue's descriptor (tcp) or, with none (shm), yields the core
// between polls until kYield and naps kNap between polls after that. A waiting caller must not
// stay runnable: with more callers than cores it takes the service's CPU (the allocation rate
// at 16 clients on 2 cores fell to 0.55 of one client's with callers that only yielded and
// napped).
//
// The poll adapts: a reply that says the service is serving other callers too halves the
// caller's next poll, any other restores it. Polling callers take CPU the service may need:
// on two cores, 2-4 callers that polled lowered the lookup rate to 0.7-0.9 of one caller's.
// (Halving it after slow replies instead kept a lone caller asleep: its own wake-up and
// every allocation made replies slow, and its lookups went from 45 to 75 us.) Without a
// descriptor (shm), such a caller yields for kSharedYield rather than kYield before it naps:
// 20 us naps cost a timer wake-up each, and 16 callers that napped brought 16 clients'
// allocation rate to 0.08-0.38 of one client's; yielding, 0.72-0.88.
constexpr auto kSpin = std::chrono::microseconds(50);
// The service counts itself shared when it answered another caller within this.
constexpr auto kSharedWithin = std::chrono::microseconds(200);
constexpr auto kYield = std::chrono::microseconds(200);
constexpr auto kSharedYield = std::chrono::milliseconds(2);  // for a caller told it is shared
constexpr auto kNap = std::chrono::microseconds(20);
// A reply the provider does not take within this (it cannot connect to the caller) is dropped.
constexpr auto kSendWait = std::chrono::seconds(1);
// A call for the worker that waited this long for its turn is not run (the caller is told to
// make it over gRPC).
constexpr auto kLongestWait = std::chrono::seconds(1);
// A caller with no reply after this asks (over gRPC) whether the service is still the same.
constexpr auto kAskAfter = std::chrono::milliseconds(100);
// A caller whose message the provider has not taken and sent within this (no connection to the
// service) gives up on the fabric and makes the call over gRPC.
constexpr auto kConnectWait = std::chrono::seconds(1);

// Both ends sleep on the queue's descriptor where the provider has one that wakes on traffic
// (tcp); shm's only wait object is a sched_yield loop that ignores timeouts: never use it.
EndpointOptions MessageEndpointOptions(const FabricDomain &domain) {
    EndpointOptions options;
    options.queue_format = FI_CQ_FORMAT_MSG;
    options.queue_wait = domain.provider() == "shm" ? FI_WAIT_NONE : FI_WAIT_FD;
    return options;
}

}  // namespace

void DispatchFabricCall(MetadataRpcService &service, const rpc::FabricCall &call,
                        rpc::FabricReply *reply) {
    grpc::Status status;
    switch (call.request_case()) {
        case rpc::FabricCall::kLookupRegion:
            status = service.LookupRegion(nullptr, &call.lookup_region(), reply->mutable_region());
            break;
        case rpc::FabricCall::kGetRegion:
            status = service.GetRegion(nullptr, &call.get_region(), reply->mutable_region());
            break;
        case rpc::FabricCall::kAllocateItem:
            status = service.AllocateItem(nullptr, &call.allocate_item(), reply->mutable_item());
            break;
        case rpc::FabricCall::kDeallocateItem:
            status =
                service.DeallocateItem(nullptr, &call.deallocate_item(), reply->mutable_empty());
            break;
        case rpc::FabricCall::kLookupItem:
            status = service.LookupItem(nullptr, &call.lookup_item(), reply->mutable_item());
            break;
        case rpc::FabricCall::kGetItem:
            status = service.GetItem(nullptr, &call.get_item(), reply->mutable_item());
            break;
        case rpc::FabricCall::kCreateRegion:
            status = service.CreateRegion(nullptr, &call.create_region(), reply->mutable_region());
            break;
        case rpc::FabricCall::kDestroyRegion:
            status =
                service.DestroyRegion(nullptr, &call.destroy_region(), reply->mutable_empty());
            break;
        default:
            status = grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                  "metadata call not taken over the fabric");
            break;
    }
    if (!status.ok()) reply->clear_reply();
    reply->set_code(status.error_code());
    reply->set_message(status.error_message());
    reply->set_details(status.error_details());
}

namespace {

// Calls that wait on memory servers (over gRPC, hundreds of microseconds): run on the worker
// thread, so that the progress thread keeps answering the others meanwhile.
bool WaitsOnServers(const rpc::FabricCall &call) {
    return call.has_create_region() || call.has_destroy_region();
}

// Whether `name` can be an endpoint name of this address format. A name the provider rejects
// is not harmless: libfabric 1.17's rxm then refuses every new connection to the endpoint.
bool PlausibleAddress(const std::string &name, uint32_t format) {
    auto family = [&](size_t size, sa_family_t expected) {
        sa_family_t found = 0;
        if (name.size() != size) return false;
        std::memcpy(&found, name.data(), sizeof found);
        return found == expected;
    };
    switch (format) {
        case FI_SOCKADDR_IN:
            return family(sizeof(sockaddr_in), AF_INET);
        case FI_SOCKADDR_IN6:
            return family(sizeof(sockaddr_in6), AF_INET6);
        case FI_SOCKADDR:
            return family(sizeof(sockaddr_in), AF_INET) || family(sizeof(sockaddr_in6), AF_INET6);
        case FI_ADDR_STR:
            // "fi_<format>://<address>", printable, NUL-terminated or not.
            for (char c : name) {
                if (c == '\0') break;
                if (c < 0x20 || c > 0x7e) return false;
            }
            return name.rfind("fi_", 0) == 0 && name.find("://") != std::string::npos;
        default:
            return true;  // the provider's own format: it checks
    }
}

}  // namespace

bool DecodeFabricCall(const char *data, size_t length, uint32_t address_format,
                      rpc::FabricCall *call) {
    return call->ParseFromArray(data, static_cast<int>(length)) && !call->reply_to().empty() &&
           call->reply_to().size() <= kLongestName &&
           PlausibleAddress(call->reply_to(), address_format);
}

void FitFabricReply(const rpc::FabricCall &call, rpc::FabricReply *answer) {
    rpc::FabricReply &reply = *answer;
    if (reply.ByteSizeLong() <= kMaxFabricMessage) return;
    // Too large for a message. An allocation or a region creation is done and must not be made
    // twice: send which one, the caller reads it over gRPC; any other call is made again.
    bool allocated = call.has_allocate_item() && reply.has_item();
    bool created = call.has_create_region() && reply.has_region();
    uint64_t region_id = allocated ? reply.item().region_id() : created ? reply.region().id() : 0;
    uint64_t offset = allocated ? reply.item().offset() : 0;
    uint64_t call_id = reply.call_id();
    bool shared = reply.shared();
    reply.Clear();
    reply.set_call_id(call_id);
    reply.set_shared(shared);
    if (allocated) {
        reply.set_item_partial(true);
        reply.mutable_item()->set_region_id(region_id);
        reply.mutable_item()->set_offset(offset);
    } else if (created) {
        reply.set_region_partial(true);
        reply.mutable_region()->set_id(region_id);
    } else {
        reply.set_use_grpc(true);
    }
}

MessageSlots::MessageSlots(FabricDomain &domain, fid_ep *endpoint, size_t count, size_t size)
    : size_(size), memory_(count * size) {
    if (domain.local_registration()) {
        registration_ = domain.Register(memory_.data(), memory_.size(), FI_SEND | FI_RECV,
                                        endpoint);
    }
}

MetadataFabricService::MetadataFabricService(const FabricConfig &config,
                                             MetadataRpcService *service)
    : service_(service),
      domain_(config, FabricDomain::Role::kMessages),
      av_(domain_.OpenAddressVector()),
      endpoint_(OpenEndpoint(domain_, av_.get(), MessageEndpointOptions(domain_))),
      queue_fd_(QueueDescriptor(endpoint_.queue.get())),
      address_(EndpointAddress(endpoint_.endpoint.get(), domain_.provider())),
      receives_(domain_, endpoint_.endpoint.get(), kServiceReceives, kReceiveBuffer),
      sends_(domain_, endpoint_.endpoint.get(), kServiceSends, kMaxFabricMessage),
      receive_contexts_(kServiceReceives),
      send_contexts_(kServiceSends) {
    std::random_device random;
    incarnation_ = fmt::format("{:08x}{:08x}-{}", random(), random(), getpid());
    char name[256] = {};
    size_t length = sizeof name;
    fi_av_straddr(av_.get(), address_.data(), name, &length);
    name_ = name;
    for (size_t i = 0; i < kServiceSends; ++i) free_sends_.push_back(kServiceSends - 1 - i);
    for (size_t i = 0; i < kServiceReceives; ++i) Post(i);
    progress_ = std::thread([this] {
        RunProgressLoop(
            domain_.fabric(), endpoint_.queue.get(), queue_fd_, stopping_,
            [this] { return Serve(); }, kServiceSpin,
            [this] { return finished_.load(std::memory_order_acquire) > 0; });
    });
    worker_ = std::thread([this] { RunWorker(); });
}

MetadataFabricService::~MetadataFabricService() {
    {
        std::lock_guard<std::mutex> lock(work_mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    worker_.join();
    if (queue_fd_ >= 0) fi_cq_signal(endpoint_.queue.get());
    progress_.join();
    endpoint_.Close();  // before the buffers it may still write into
}

void MetadataFabricService::Post(size_t receive) {
    ssize_t ret = fi_recv(endpoint_.endpoint.get(), receives_.slot(receive), receives_.size(),
                          receives_.descriptor(), FI_ADDR_UNSPEC, &receive_contexts_[receive]);
    if (ret == 0) return;
    // Busy (EAGAIN: progress first) or failing: tried again at every turn of the loop.
    if (ret != -FI_EAGAIN && unposted_.empty()) {
        std::fprintf(stderr, "fampool-server: metadata fabric endpoint: fi_recv: %s\n",
                     fi_strerror(static_cast<int>(-ret)));
    }
    unposted_.push_back(receive);
}

void MetadataFabricService::PostWaiting() {
    std::vector<size_t> waiting;
    waiting.swap(unposted_);
    for (size_t receive : waiting) Post(receive);
}

// Sorts a completion: a receive is queued for an answer, a send's slot is free again.
void MetadataFabricService::Complete(void *context, size_t length, bool failed) {
    auto *receive = static_cast<fi_context2 *>(context);
    if (receive >= receive_contexts_.data() &&
        receive < receive_contexts_.data() + receive_contexts_.size()) {
        size_t index = static_cast<size_t>(receive - receive_contexts_.data());
        if (failed) {
            Post(index);  // truncated or cancelled: nothing to answer
        } else {
            arrived_.push_back({index, length});
        }
        return;
    }
    auto *send = static_cast<fi_context2 *>(context);
    if (send >= send_contexts_.data() && send < send_contexts_.data() + send_contexts_.size()) {
        free_sends_.push_back(static_cast<size_t>(send - send_contexts_.data()));
    }
}

bool MetadataFabricService::Reap() {
    fi_cq_msg_entry entries[8];
    ssize_t n = fi_cq_read(endpoint_.queue.get(), entries, 8);
    if (n == -FI_EAVAIL) {
        fi_cq_err_entry error{};
        if (fi_cq_readerr(endpoint_.queue.get(), &error, 0) > 0) {
            Complete(error.op_context, 0, true);
        }
        return true;
    }
    for (ssize_t i = 0; i < n; ++i) Complete(entries[i].op_context, entries[i].len, false);
    return n > 0;
}

bool MetadataFabricService::Serve() {
    bool worked = Reap();
    if (!unposted_.empty()) PostWaiting();
    worked |= Flush();
    // A call waits (its receive not posted again) while every reply slot is taken.
    while (!arrived_.empty() && !free_sends_.empty()) {
        Arrival arrival = arrived_.front();
        arrived_.pop_front();
        Answer(arrival.slot, arrival.length);
        Post(arrival.slot);
        worked = true;
    }
    if (finished_.load(std::memory_order_acquire) > 0) {
        std::lock_guard<std::mutex> lock(work_mutex_);
        while (!done_.empty() && !free_sends_.empty()) {
            Work &work = done_.front();
            fi_addr_t peer = PeerOf(work.call.reply_to());
            if (peer != FI_ADDR_UNSPEC) Send(work.call, peer, &work.reply);
            done_.pop_front();
            finished_.fetch_sub(1, std::memory_order_release);
            worked = true;
        }
    }
    // Keep polling while anything waits: replies the provider did not take yet, calls,
    // receives to post again. (Not for the worker: it wakes this thread when it is done.)
    return worked || !unsent_.empty() || !arrived_.empty() || !unposted_.empty();
}

void MetadataFabricService::RunWorker() {
    std::unique_lock<std::mutex> lock(work_mutex_);
    for (;;) {
        work_ready_.wait(lock, [&] { return stopping_.load() || !waiting_.empty(); });
        if (stopping_) return;
        Work work = std::move(waiting_.front());
        waiting_.pop_front();
        lock.unlock();
        if (Clock::now() - work.arrived > kLongestWait) {
            // Queued behind slow calls for long: not run, the caller makes it over gRPC (it
            // would give up on the fabric soon, not knowing whether the call was made).
            work.reply.set_use_grpc(true);
        } else {
            DispatchFabricCall(*service_, work.call, &work.reply);
        }
        lock.lock();
        done_.push_back(std::move(work));
        finished_.fetch_add(1, std::memory_order_release);
        // The progress thread may sleep on the queue: wake it to send the reply.
        if (queue_fd_ >= 0) fi_cq_signal(endpoint_.queue.get());
    }
}

bool MetadataFabricService::Flush() {
    bool worked = false;
    for (auto it = unsent_.begin(); it != unsent_.end();) {
        ssize_t ret = fi_send(endpoint_.endpoint.get(), sends_.slot(it->slot), it->size,
                              sends_.descriptor(), it->peer, &send_contexts_[it->slot]);
        if (ret == 0) {
            worked = true;
        } else if (ret == -FI_EAGAIN && Clock::now() < it->deadline) {
            ++it;  // the provider is still connecting to the caller: later
            continue;
        } else {
            // The caller cannot be reached: it times out. Nobody else waits for this.
            free_sends_.push_back(it->slot);
            answered_.fetch_sub(1, std::memory_order_relaxed);
        }
        it = unsent_.erase(it);
    }
    return worked;
}

fi_addr_t MetadataFabricService::PeerOf(const std::string &name) {
    auto found = peers_.find(name);
    if (found != peers_.end()) return found->second;
    if (!PlausibleAddress(name, domain_.info()->addr_format)) return FI_ADDR_UNSPEC;
    if (peers_.size() >= kMostPeers && free_sends_.size() == kServiceSends) {
        // Callers of long ago: forget them all (none has a reply in flight); the ones still
        // alive are inserted again on their next call.
        for (const auto &[peer, entry] : peers_) {
            fi_addr_t address = entry;
            fi_av_remove(av_.get(), &address, 1, 0);
        }
        peers_.clear();
    }
    fi_addr_t address = FI_ADDR_UNSPEC;
    if (fi_av_insert(av_.get(), name.data(), 1, &address, 0, nullptr) != 1) {
        return FI_ADDR_UNSPEC;
    }
    peers_.emplace(name, address);
    return address;
}

void MetadataFabricService::Answer(size_t receive, size_t length) {
    rpc::FabricCall call;
    // A message that is not a call, or names no one to answer, is dropped: there is nobody to
    // tell. Its sender times out. Nothing runs for a caller that cannot be answered.
    if (!DecodeFabricCall(receives_.slot(receive), length, domain_.info()->addr_format, &call)) {
        return;
    }
    fi_addr_t peer = PeerOf(call.reply_to());
    if (peer == FI_ADDR_UNSPEC) return;
    if (WaitsOnServers(call)) {
        {
            std::lock_guard<std::mutex> lock(work_mutex_);
            waiting_.push_back({std::move(call), {}, Clock::now()});
        }
        work_ready_.notify_one();
        return;
    }
    rpc::FabricReply reply;
    DispatchFabricCall(*service_, call, &reply);
    Send(call, peer, &reply);
}

void MetadataFabricService::Send(const rpc::FabricCall &call, fi_addr_t peer,
                                 rpc::FabricReply *answer) {
    rpc::FabricReply &reply = *answer;  // filled in, and cut down when too large
    reply.set_call_id(call.call_id());
    auto now = Clock::now();
    reply.set_shared(!arrived_.empty() ||
                     (peer != last_peer_ && now - last_answered_ < kSharedWithin));
    last_peer_ = peer;
    last_answered_ = now;
    FitFabricReply(call, &reply);
    size_t slot = free_sends_.back();
    free_sends_.pop_back();
    size_t size = reply.ByteSizeLong();
    reply.SerializeToArray(sends_.slot(slot), static_cast<int>(size));
    unsent_.push_back({slot, size, peer, Clock::now() + kSendWait});
    // Counted before the provider has it: the caller may have its reply (and ask the service
    // for the count) before this thread runs again.
    answered_.fetch_add(1, std::memory_order_relaxed);
    Flush();
}

MetadataFabricClient::MetadataFabricClient(const FabricConfig &config,
                                           const std::string &service_address,
                                           const std::string &incarnation,
                                           std::chrono::milliseconds timeout)
    : domain_(config, FabricDomain::Role::kMessages),
      av_(domain_.OpenAddressVector()),
      endpoint_(OpenEndpoint(domain_, av_.get(), MessageEndpointOptions(domain_))),
      queue_fd_(QueueDescriptor(endpoint_.queue.get())),
      address_(EndpointAddress(endpoint_.endpoint.get(), domain_.provider())),
      service_address_(service_address),
      incarnation_(incarnation),
      timeout_(timeout),
      last_answer_(Clock::now().time_since_epoch().count()),
      call_(domain_, endpoint_.endpoint.get(), 1, kMaxFabricMessage),
      reply_(domain_, endpoint_.endpoint.get(), 1, kReceiveBuffer),
      spin_(kSpin) {
    if (fi_av_insert(av_.get(), service_address.data(), 1, &service_, 0, nullptr) != 1) {
        Fail(openfam::FAM_ERR_LIBFABRIC,
             "fi_av_insert: the metadata service's fabric address is not one of provider {}",
             domain_.provider());
    }
    if (!PostReceive()) {
        Fail(openfam::FAM_ERR_LIBFABRIC, "fi_recv: the provider refused a receive (provider {})",
             domain_.provider());
    }
}

bool MetadataFabricClient::PostReceive() {
    ssize_t ret = fi_recv(endpoint_.endpoint.get(), reply_.slot(0), reply_.size(),
                          reply_.descriptor(), FI_ADDR_UNSPEC, &receive_context_);
    if (ret != 0) broken_ = true;
    return ret == 0;
}

MetadataFabricClient::~MetadataFabricClient() {
    // The endpoint goes first: the provider may still own the buffers (a reply that came late).
    endpoint_.Close();
}

bool MetadataFabricClient::Call(rpc::FabricCall &call, rpc::FabricReply *reply,
                                const char *method, bool idempotent,
                                const std::function<bool()> &same_service) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || broken_) return false;
    uint64_t id = next_call_++;
    call.set_call_id(id);
    call.set_reply_to(address_);
    size_t size = call.ByteSizeLong();
    if (size > kMaxFabricMessage) return false;
    call.SerializeToArray(call_.slot(0), static_cast<int>(size));

    // From the moment the provider takes the message the service may run the call: a failure
    // after that sends an idempotent call to gRPC and fails any other.
    auto give_up = [&](const std::string &why) {
        broken_ = true;
        if (idempotent) return false;
        Fail(openfam::FAM_ERR_RPC,
             "{} over the fabric (provider {}): {}; it may or may not have been done", method,
             domain_.provider(), why);
    };
    fid_cq *queue = endpoint_.queue.get();
    // Let the provider see what happened since the last call first (a connection the service
    // closed when it died), so that the message does not go to a connection that is gone.
    fi_cq_msg_entry stale[2];
    fi_cq_read(queue, stale, 0);
    auto start = Clock::now();
    auto deadline = start + timeout_;
    auto connect_deadline = start + std::min<Clock::duration>(timeout_, kConnectWait);
    bool sent = false, answered = false, posted = false, asked = false;
    while (!answered || !sent) {
        if (!posted) {
            ssize_t ret = fi_send(endpoint_.endpoint.get(), call_.slot(0), size,
                                  call_.descriptor(), service_, &send_context_);
            if (ret == 0) {
                posted = true;
            } else if (ret != -FI_EAGAIN || Clock::now() > connect_deadline) {
                // Never left this process: the service has not seen the call.
                broken_ = true;
                return false;
            }
        }
        fi_cq_msg_entry entries[2];
        ssize_t n = fi_cq_read(queue, entries, 2);
        fi_cq_err_entry error{};
        if (n == -FI_EAVAIL && fi_cq_readerr(queue, &error, 0) > 0) {
            if (error.op_context == &send_context_) {
                if (answered) break;  // the reply came: the send did its work
                return give_up(fmt::format("the message failed ({})",
                                           fi_strerror(static_cast<int>(error.err))));
            }
            // A message that did not fit: not ours (the service keeps replies smaller).
            if (error.op_context == &receive_context_ && !PostReceive()) {
                return answered || give_up("the provider refused a receive");
            }
            continue;
        }
        for (ssize_t i = 0; i < n; ++i) {
            if (entries[i].op_context == &send_context_) {
                sent = true;
                continue;
            }
            if (entries[i].op_context != &receive_context_) continue;
            bool parsed = reply->ParseFromArray(reply_.slot(0), static_cast<int>(entries[i].len));
            if (parsed && reply->call_id() == id) answered = true;  // else a stale reply
            // Without a receive posted the client cannot be used again (it is then broken);
            // this call's reply is in hand all the same.
            if (!PostReceive() && !answered) return give_up("the provider refused a receive");
        }
        if (n > 0) continue;
        auto now = Clock::now();
        if (!sent && now > connect_deadline) {
            if (answered) {
                broken_ = true;  // the buffer may still be the provider's: never reuse it
                break;
            }
            // Taken but not sent: the provider keeps trying to reach an endpoint that is gone.
            return give_up("the message was not sent within 1 s");
        }
        if (!asked && !answered && now - start > kAskAfter) {
            // Slow: the service may have died with the call (shm delivers into a dead
            // service's queue). Ask over gRPC whether the endpoint still has its service.
            asked = true;
            if (!same_service()) {
                return give_up("the metadata service stopped or restarted with the call in "
                               "flight");
            }
        }
        if (now > deadline) {
            return give_up(fmt::format("no answer from the metadata service in {} ms",
                                       timeout_.count()));
        }
        if (now - start <= spin_) continue;
        if (queue_fd_ >= 0) {
            fid *waiting = &queue->fid;
            if (fi_trywait(domain_.fabric(), &waiting, 1) == FI_SUCCESS) {
                // Bounded: the descriptor does not wake for everything the provider must
                // progress (a connection being set up), so the queue is polled every 1 ms.
                pollfd poll_fd{queue_fd_, POLLIN, 0};
                poll(&poll_fd, 1, 1);
            }
        } else if (now - start > (spin_ == kSpin ? kYield : kSharedYield)) {
            std::this_thread::sleep_for(kNap);
        } else {
            std::this_thread::yield();
        }
    }
    spin_ = reply->shared() ? spin_ / 2 : kSpin;
    calls_.fetch_add(1, std::memory_order_relaxed);
    Confirmed();
    return !reply->use_grpc();
}

std::chrono::steady_clock::duration MetadataFabricClient::quiet_for() const {
    return Clock::now().time_since_epoch() - Clock::duration(last_answer_.load());
}

void MetadataFabricClient::Confirmed() {
    last_answer_ = Clock::now().time_since_epoch().count();
}

}  // namespace fampool
