#include "messages/message_service.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "common/error.h"
#include "messages/message_seal.h"

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
// The service counts itself shared when it answered another caller within this.
constexpr auto kSharedWithin = std::chrono::microseconds(200);
// A reply the provider does not take within this (it cannot connect to the caller) is dropped.
constexpr auto kSendWait = std::chrono::seconds(1);
// The calls one sender (a session, with authentication; else a reply endpoint) may have in
// flight: more are dropped unanswered, so that one sender's flood (replies to endpoints that
// never accept, each held for kSendWait) takes at most this many of the kServiceSends reply
// slots. A process makes one call at a time per service (its FabricMessageClient; other
// threads meanwhile call over gRPC) and one reply-less call beside it. Not per user: a job's
// PEs are one user's many processes, each with calls of its own in flight.
constexpr size_t kMostInFlightPerSender = 8;
// A call for the worker that waited this long for its turn is not run (the caller is told to
// make it over gRPC).
constexpr auto kLongestWait = std::chrono::seconds(1);

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

// Where the requests that name their caller get the token of a sealed call's session (the
// service's code reads it there, as from a gRPC call; a token never travels on the fabric).
void PlaceToken(rpc::FabricCall *call, const std::string &token) {
    call->set_token(token);
    rpc::Caller *caller = nullptr;
    switch (call->request_case()) {
        case rpc::FabricCall::kLookupRegion:
            caller = call->mutable_lookup_region()->mutable_caller();
            break;
        case rpc::FabricCall::kGetRegion:
            caller = call->mutable_get_region()->mutable_caller();
            break;
        case rpc::FabricCall::kAllocateItem:
            caller = call->mutable_allocate_item()->mutable_caller();
            break;
        case rpc::FabricCall::kDeallocateItem:
            caller = call->mutable_deallocate_item()->mutable_caller();
            break;
        case rpc::FabricCall::kLookupItem:
            caller = call->mutable_lookup_item()->mutable_caller();
            break;
        case rpc::FabricCall::kGetItem:
            caller = call->mutable_get_item()->mutable_caller();
            break;
        case rpc::FabricCall::kCreateRegion:
            caller = call->mutable_create_region()->mutable_caller();
            break;
        case rpc::FabricCall::kDestroyRegion:
            caller = call->mutable_destroy_region()->mutable_caller();
            break;
        default:
            break;  // memory servers' calls: the token is the call's own
    }
    if (caller) caller->set_token(token);
}

}  // namespace

bool DecodeFabricCall(const char *data, size_t length, uint32_t address_format,
                      rpc::FabricCall *call) {
    return call->ParseFromArray(data, static_cast<int>(length)) && !call->reply_to().empty() &&
           call->reply_to().size() <= kLongestName &&
           PlausibleAddress(call->reply_to(), address_format);
}

void FitFabricReplyForGrpc(rpc::FabricReply *reply) {
    if (reply->ByteSizeLong() <= kMaxFabricMessage) return;
    uint64_t call_id = reply->call_id();
    bool shared = reply->shared();
    reply->Clear();
    reply->set_call_id(call_id);
    reply->set_shared(shared);
    reply->set_use_grpc(true);
}

FabricMessageService::FabricMessageService(const FabricConfig &config, MessageHandler handler,
                                           std::string who)
    : handler_(std::move(handler)),
      who_(std::move(who)),
      proof_secret_(RandomSecret()),
      domain_(config, FabricDomain::Role::kMessages),
      av_(domain_.OpenAddressVector()),
      endpoint_(OpenEndpoint(domain_, av_.get(), MessageEndpointOptions(domain_))),
      queue_fd_(QueueDescriptor(endpoint_.queue.get())),
      address_(EndpointAddress(endpoint_.endpoint.get(), domain_.provider())),
      receives_(domain_, endpoint_.endpoint.get(), kServiceReceives, kReceiveBuffer),
      sends_(domain_, endpoint_.endpoint.get(), kServiceSends, kMaxFabricMessage + kSealBytes),
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
            [this] { return Serve(); }, kServiceSpin, handler_.yields,
            [this] { return finished_.load(std::memory_order_acquire) > 0; });
    });
    for (size_t i = 0; i < std::max<size_t>(handler_.workers, 1); ++i) {
        workers_.emplace_back([this] { RunWorker(); });
    }
}

FabricMessageService::~FabricMessageService() {
    {
        std::lock_guard<std::mutex> lock(work_mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    for (std::thread &worker : workers_) worker.join();
    if (queue_fd_ >= 0) fi_cq_signal(endpoint_.queue.get());
    progress_.join();
    endpoint_.Close();  // before the buffers it may still write into
}

void FabricMessageService::Post(size_t receive) {
    ssize_t ret = fi_recv(endpoint_.endpoint.get(), receives_.slot(receive), receives_.size(),
                          receives_.descriptor(), FI_ADDR_UNSPEC, &receive_contexts_[receive]);
    if (ret == 0) return;
    // Busy (EAGAIN: progress first) or failing: tried again at every turn of the loop.
    if (ret != -FI_EAGAIN && unposted_.empty()) {
        std::fprintf(stderr, "fampool-server: %s fabric endpoint: fi_recv: %s\n", who_.c_str(),
                     fi_strerror(static_cast<int>(-ret)));
    }
    unposted_.push_back(receive);
}

void FabricMessageService::PostWaiting() {
    std::vector<size_t> waiting;
    waiting.swap(unposted_);
    for (size_t receive : waiting) Post(receive);
}

// Sorts a completion: a receive is queued for an answer, a send's slot is free again.
void FabricMessageService::Complete(void *context, size_t length, bool failed) {
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

bool FabricMessageService::Reap() {
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

bool FabricMessageService::Serve() {
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
            if (peer != FI_ADDR_UNSPEC) {
                Send(work.call, peer, &work.reply, work.key, std::move(work.sender));
            } else {
                Settled(work.sender);
            }
            done_.pop_front();
            finished_.fetch_sub(1, std::memory_order_release);
            worked = true;
        }
    }
    // Keep polling while anything waits: replies the provider did not take yet, calls,
    // receives to post again. (Not for the worker: it wakes this thread when it is done.)
    return worked || !unsent_.empty() || !arrived_.empty() || !unposted_.empty();
}

void FabricMessageService::RunWorker() {
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
            Dispatch(work.call, &work.reply);
        }
        lock.lock();
        done_.push_back(std::move(work));
        finished_.fetch_add(1, std::memory_order_release);
        // The progress thread may sleep on the queue: wake it to send the reply.
        if (queue_fd_ >= 0) fi_cq_signal(endpoint_.queue.get());
    }
}

bool FabricMessageService::Flush() {
    bool worked = false;
    for (auto it = unsent_.begin(); it != unsent_.end();) {
        ssize_t ret = fi_send(endpoint_.endpoint.get(), sends_.slot(it->slot), it->size,
                              sends_.descriptor(), it->peer, &send_contexts_[it->slot]);
        if (ret == 0) {
            worked = true;
            Settled(it->sender);
        } else if (ret == -FI_EAGAIN && Clock::now() < it->deadline) {
            ++it;  // the provider is still connecting to the caller: later
            continue;
        } else {
            // The caller cannot be reached: it times out. Nobody else waits for this.
            std::fprintf(stderr,
                         "fampool-server: %s fabric endpoint: a reply of %zu bytes dropped: the "
                         "provider did not take it (%s)\n",
                         who_.c_str(), it->size,
                         ret == -FI_EAGAIN ? "busy for 1 s: no connection to the caller"
                                           : fi_strerror(static_cast<int>(-ret)));
            free_sends_.push_back(it->slot);
            if (it->counted) answered_.fetch_sub(1, std::memory_order_relaxed);
            Settled(it->sender);
        }
        it = unsent_.erase(it);
    }
    return worked;
}

fi_addr_t FabricMessageService::PeerOf(const std::string &name) {
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

bool FabricMessageService::Admit(const char *data, size_t length, rpc::FabricCall *call,
                                 std::string *key, Sender *sender, std::string *proof) {
    bool sealed = static_cast<bool>(handler_.session);
    bool admitted = false;
    if (!sealed) {
        admitted = DecodeFabricCall(data, length, domain_.info()->addr_format, call);
        call->clear_token();
        *sender = call->reply_to();
    } else if (length > kSealBytes &&
               DecodeFabricCall(data, length - kSealBytes, domain_.info()->addr_format, call)) {
        std::optional<SessionTable::Sealed> session = handler_.session(call->session());
        if (session && SealHolds(session->key, data, length)) {
            PlaceToken(call, session->token);
            *key = std::move(session->key);
            *sender = call->session();
            admitted = true;
            std::string expected = ReplyProof(proof_secret_, call->session(), call->reply_to());
            if (call->reply_proof() != expected) *proof = std::move(expected);
        }
    }
    if (admitted) {
        size_t &calls = in_flight_[*sender];
        admitted = calls < kMostInFlightPerSender;
        if (admitted) {
            ++calls;
        } else if (calls == 0) {
            in_flight_.erase(*sender);
        }
    }
    if (!admitted) refused_.fetch_add(1, std::memory_order_relaxed);
    return admitted;
}

void FabricMessageService::Settled(const Sender &sender) {
    auto found = in_flight_.find(sender);
    if (found == in_flight_.end()) return;
    if (--found->second == 0) in_flight_.erase(found);
}

void FabricMessageService::Answer(size_t receive, size_t length) {
    rpc::FabricCall call;
    std::string key, proof;
    Sender sender;
    // A message that is not a call, names no one to answer or (with authentication) no live
    // session, or whose seal does not hold, is dropped: nobody can be told. So is a call of a
    // sender with kMostInFlightPerSender in flight already. Its sender times out. Nothing runs
    // for a caller that cannot be answered, and nothing is held for it.
    if (!Admit(receives_.slot(receive), length, &call, &key, &sender, &proof)) return;
    fi_addr_t peer = PeerOf(call.reply_to());
    if (peer == FI_ADDR_UNSPEC) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        Settled(sender);
        return;
    }
    if (!proof.empty()) {
        // Not run: reply_to gets the proof, which its owner sends with the call again.
        rpc::FabricReply challenge;
        challenge.set_reply_proof(proof);
        challenged_.fetch_add(1, std::memory_order_relaxed);
        Send(call, peer, &challenge, key, std::move(sender), /*counted=*/false);
        return;
    }
    if (handler_.waits && handler_.waits(call)) {
        {
            std::lock_guard<std::mutex> lock(work_mutex_);
            waiting_.push_back(
                {std::move(call), {}, Clock::now(), std::move(key), std::move(sender)});
        }
        work_ready_.notify_one();
        return;
    }
    rpc::FabricReply reply;
    Dispatch(call, &reply);
    Send(call, peer, &reply, key, std::move(sender));
}

void FabricMessageService::Dispatch(const rpc::FabricCall &call, rpc::FabricReply *reply) {
    if (!metrics::Enabled()) return handler_.dispatch(call, reply);
    auto start = Clock::now();
    handler_.dispatch(call, reply);
    size_t kind = static_cast<size_t>(call.request_case());
    if (kind >= calls_.size()) return;
    metrics::Calls *calls = calls_[kind].load(std::memory_order_acquire);
    if (!calls) {
        const auto *field = rpc::FabricCall::descriptor()->FindFieldByNumber(call.request_case());
        std::string method = field ? field->camelcase_name() : "unknown";
        if (!method.empty()) method[0] = static_cast<char>(std::toupper(method[0]));
        calls = &metrics::CallsOf(
            "fabric", who_.rfind("metadata", 0) == 0 ? "Metadata" : "MemoryServer", method);
        calls_[kind].store(calls, std::memory_order_release);
    }
    calls->Record(reply->code() == 0, std::chrono::duration<double>(Clock::now() - start).count());
}

void FabricMessageService::Send(const rpc::FabricCall &call, fi_addr_t peer,
                                rpc::FabricReply *answer, const std::string &key, Sender sender,
                                bool counted) {
    rpc::FabricReply &reply = *answer;  // filled in, and cut down when too large
    reply.set_call_id(call.call_id());
    auto now = Clock::now();
    reply.set_shared(!arrived_.empty() ||
                     (peer != last_peer_ && now - last_answered_ < kSharedWithin));
    last_peer_ = peer;
    last_answered_ = now;
    if (handler_.fit) {
        handler_.fit(call, &reply);
    } else {
        FitFabricReplyForGrpc(&reply);
    }
    size_t slot = free_sends_.back();
    free_sends_.pop_back();
    size_t size = reply.ByteSizeLong();
    reply.SerializeToArray(sends_.slot(slot), static_cast<int>(size));
    if (!key.empty()) {
        SealMessage(key, sends_.slot(slot), size);
        size += kSealBytes;
    }
    unsent_.push_back({slot, size, peer, Clock::now() + kSendWait, std::move(sender), counted});
    // Counted before the provider has it: the caller may have its reply (and ask the service
    // for the count) before this thread runs again.
    if (counted) answered_.fetch_add(1, std::memory_order_relaxed);
    Flush();
}

}  // namespace fampool
