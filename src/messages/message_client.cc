#include "messages/message_client.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "common/error.h"
#include "messages/message_seal.h"

namespace fampool {
namespace {

using Clock = std::chrono::steady_clock;

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
constexpr auto kYield = std::chrono::microseconds(200);
constexpr auto kSharedYield = std::chrono::milliseconds(2);  // for a caller told it is shared
constexpr auto kNap = std::chrono::microseconds(20);
// A caller with no reply after this asks (over gRPC) whether the service is still the same.
constexpr auto kAskAfter = std::chrono::milliseconds(100);
// A caller whose message the provider has not taken within this (no connection to the service)
// gives up on the fabric and makes the call over gRPC; one whose message was taken but not sent
// within it asks whether the service is still the same, and waits on if it is.
constexpr auto kConnectWait = std::chrono::seconds(1);
// The largest call Send takes (a lease's release is about 200 bytes).
constexpr size_t kLooseMessage = 4096;

}  // namespace

FabricMessageClient::FabricMessageClient(const FabricConfig &config,
                                         const std::string &service_address,
                                         const std::string &incarnation,
                                         std::chrono::milliseconds timeout, std::string service)
    : service_name_(std::move(service)),
      domain_(config, FabricDomain::Role::kMessages),
      av_(domain_.OpenAddressVector()),
      endpoint_(OpenEndpoint(domain_, av_.get(), MessageEndpointOptions(domain_))),
      queue_fd_(QueueDescriptor(endpoint_.queue.get())),
      address_(EndpointAddress(endpoint_.endpoint.get(), domain_.provider())),
      service_address_(service_address),
      incarnation_(incarnation),
      timeout_(timeout),
      last_answer_(Clock::now().time_since_epoch().count()),
      call_(domain_, endpoint_.endpoint.get(), 1, kMaxFabricMessage + kSealBytes),
      reply_(domain_, endpoint_.endpoint.get(), 1, kReceiveBuffer),
      loose_(domain_, endpoint_.endpoint.get(), 1, kLooseMessage),
      spin_(kSpin) {
    if (fi_av_insert(av_.get(), service_address.data(), 1, &service_, 0, nullptr) != 1) {
        Fail(openfam::FAM_ERR_LIBFABRIC,
             "fi_av_insert: the fabric address of the {} is not one of provider {}", service_name_,
             domain_.provider());
    }
    if (!PostReceive()) {
        Fail(openfam::FAM_ERR_LIBFABRIC, "fi_recv: the provider refused a receive (provider {})",
             domain_.provider());
    }
}

size_t FabricMessageClient::Prepare(rpc::FabricCall &call, const SessionSeal *seal, char *slot,
                                    size_t room) {
    call.set_call_id(RandomCallId());
    call.set_reply_to(address_);
    call.clear_token();  // a token never travels on the fabric
    if (seal) call.set_session(seal->id);
    if (seal && proof_session_ == seal->id) {
        call.set_reply_proof(proof_);
    } else {
        call.clear_reply_proof();
    }
    size_t body = call.ByteSizeLong();
    size_t size = body + (seal ? kSealBytes : 0);
    if (body > kMaxFabricMessage || size > room) return 0;
    call.SerializeToArray(slot, static_cast<int>(body));
    if (seal) SealMessage(seal->key, slot, body);
    return size;
}

bool FabricMessageClient::IsReply(size_t length, uint64_t id, const SessionSeal *seal,
                                  rpc::FabricReply *reply) {
    const char *bytes = reply_.slot(0);
    bool taken =
        (!seal || SealHolds(seal->key, bytes, length)) &&
        reply->ParseFromArray(bytes, static_cast<int>(seal ? length - kSealBytes : length)) &&
        reply->call_id() == id;
    if (!taken) {
        rejected_.fetch_add(1, std::memory_order_relaxed);
        reply->Clear();
    }
    return taken;
}

bool FabricMessageClient::Send(rpc::FabricCall &call, const SessionSeal *seal) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || broken_) return false;
    // Without this endpoint's reply proof the service would not run it (and say so to no one
    // who waits): over gRPC until a Call learnt the proof.
    if (seal && proof_session_ != seal->id) return false;
    // The last one's buffer is the provider's until its send completed (seen by any call).
    fid_cq *queue = endpoint_.queue.get();
    auto deadline = Clock::now() + kConnectWait;
    while (loose_pending_) {
        fi_cq_msg_entry entries[2];
        ssize_t n = fi_cq_read(queue, entries, 2);
        fi_cq_err_entry error{};
        if (n == -FI_EAVAIL && fi_cq_readerr(queue, &error, 0) > 0) {
            if (error.op_context == &receive_context_ && !PostReceive()) return false;
            Reaped(error.op_context);
            continue;
        }
        for (ssize_t i = 0; i < n; ++i) {
            // An earlier call's reply, come late: not needed.
            if (entries[i].op_context == &receive_context_ && !PostReceive()) return false;
            Reaped(entries[i].op_context);
        }
        if (Clock::now() > deadline) {
            broken_ = true;  // the buffer may still be the provider's: never reuse it
            return false;
        }
        if (n <= 0) std::this_thread::yield();
    }
    size_t size = Prepare(call, seal, loose_.slot(0), loose_.size());
    if (size == 0) return false;
    for (;;) {
        ssize_t ret = fi_send(endpoint_.endpoint.get(), loose_.slot(0), size, loose_.descriptor(),
                              service_, &loose_context_);
        if (ret == 0) break;
        if (ret != -FI_EAGAIN || Clock::now() > deadline) {
            broken_ = true;
            return false;
        }
        fi_cq_msg_entry progress[1];
        fi_cq_read(queue, progress, 0);
    }
    loose_pending_ = true;
    return true;
}

bool FabricMessageClient::Reaped(void *context) {
    if (context != &loose_context_) return false;
    loose_pending_ = false;
    return true;
}

bool FabricMessageClient::PostReceive() {
    ssize_t ret = fi_recv(endpoint_.endpoint.get(), reply_.slot(0), reply_.size(),
                          reply_.descriptor(), FI_ADDR_UNSPEC, &receive_context_);
    if (ret != 0) broken_ = true;
    return ret == 0;
}

FabricMessageClient::~FabricMessageClient() {
    // The endpoint goes first: the provider may still own the buffers (a reply that came late).
    endpoint_.Close();
}

bool FabricMessageClient::Call(rpc::FabricCall &call, rpc::FabricReply *reply, const char *method,
                               bool idempotent, const std::function<bool()> &same_service,
                               const SessionSeal *seal) {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || broken_) return false;
    if (!CallOnce(call, reply, method, idempotent, same_service, seal)) return false;
    if (seal && !reply->reply_proof().empty()) {
        // Not run: the service sent this endpoint's proof for the session, which the call
        // carries from now on (messages/message_seal.h).
        proof_ = reply->reply_proof();
        proof_session_ = seal->id;
        reply->Clear();
        if (!CallOnce(call, reply, method, idempotent, same_service, seal)) return false;
        if (!reply->reply_proof().empty()) return false;  // not run: over gRPC
    }
    calls_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

bool FabricMessageClient::CallOnce(rpc::FabricCall &call, rpc::FabricReply *reply,
                                   const char *method, bool idempotent,
                                   const std::function<bool()> &same_service,
                                   const SessionSeal *seal) {
    size_t size = Prepare(call, seal, call_.slot(0), call_.size());
    if (size == 0) return false;
    uint64_t id = call.call_id();

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
    bool sent = false, answered = false, posted = false, asked = false, connect_checked = false;
    while (!answered || !sent) {
        if (!posted) {
            ssize_t ret = fi_send(endpoint_.endpoint.get(), call_.slot(0), size, call_.descriptor(),
                                  service_, &send_context_);
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
            if (Reaped(error.op_context)) continue;  // a Send's message failed: not needed
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
            if (Reaped(entries[i].op_context)) continue;
            if (entries[i].op_context == &send_context_) {
                sent = true;
                continue;
            }
            if (entries[i].op_context != &receive_context_) continue;
            // Else a late reply to an earlier call, or a message someone else sent.
            if (!answered && IsReply(entries[i].len, id, seal, reply)) answered = true;
            // Without a receive posted the client cannot be used again (it is then broken);
            // this call's reply is in hand all the same.
            if (!PostReceive() && !answered) return give_up("the provider refused a receive");
        }
        if (n > 0) continue;
        auto now = Clock::now();
        if (!sent && now > connect_deadline && !connect_checked) {
            if (answered) {
                broken_ = true;  // the buffer may still be the provider's: never reuse it
                break;
            }
            // Taken but not sent: the provider keeps trying to reach an endpoint that is gone,
            // or is still setting the connection up under load (128 PEs connecting at once on
            // 2 cores took more than 1 s now and then, and their allocations failed). Asked
            // again now: a service that is still the same gets the rest of the call's time.
            connect_checked = true;
            if (!same_service()) {
                return give_up(fmt::format(
                    "the message was not sent within 1 s, and the {} stopped or restarted "
                    "meanwhile",
                    service_name_));
            }
        }
        if (!asked && !answered && now - start > kAskAfter) {
            // Slow: the service may have died with the call (shm delivers into a dead
            // service's queue). Ask over gRPC whether the endpoint still has its service.
            asked = true;
            if (!same_service()) {
                return give_up(fmt::format("the {} stopped or restarted with the call in flight",
                                           service_name_));
            }
        }
        if (now > deadline) {
            return give_up(
                fmt::format("no answer from the {} in {} ms", service_name_, timeout_.count()));
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
    Confirmed();
    return !reply->use_grpc();
}

std::chrono::steady_clock::duration FabricMessageClient::quiet_for() const {
    return Clock::now().time_since_epoch() - Clock::duration(last_answer_.load());
}

void FabricMessageClient::Confirmed() { last_answer_ = Clock::now().time_since_epoch().count(); }

void MessageRoute::Use(const FabricConfig &config, std::chrono::milliseconds timeout) {
    std::lock_guard<std::mutex> lock(mutex_);
    config_ = config;
    timeout_ = timeout;
    wanted_ = true;
    client_.reset();
    asked_ = {};  // ask at the next call
}

std::shared_ptr<FabricMessageClient> MessageRoute::Client(
    const std::function<rpc::FabricEndpoint()> &ask) {
    using std::chrono::seconds;
    std::unique_lock<std::mutex> lock(mutex_);
    if (!wanted_) return nullptr;
    bool usable = client_ && !client_->broken();
    if (usable && client_->quiet_for() < seconds(1)) return client_;  // the service answered
    auto now = Clock::now();
    if (asking_ || (!usable && now - asked_ < seconds(1))) return nullptr;
    asked_ = now;
    asking_ = true;
    lock.unlock();
    rpc::FabricEndpoint endpoint = ask();
    lock.lock();
    asking_ = false;
    if (endpoint.address().empty() || endpoint.provider() != config_.provider) {
        client_.reset();
    } else if (usable && client_->Reaches(endpoint)) {
        client_->Confirmed();
    } else {
        try {
            client_ = std::make_shared<FabricMessageClient>(
                config_, endpoint.address(), endpoint.incarnation(), timeout_, service_);
        } catch (const Failure &) {
            client_.reset();  // cannot reach that endpoint over this provider
        }
    }
    return client_;
}

uint64_t MessageRoute::calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return client_ ? client_->calls() : 0;
}

}  // namespace fampool
