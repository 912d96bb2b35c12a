// A caller's side of calls over the fabric (messages/fabric_messages.h says why they take the
// fabric): one message each way to a service's endpoint (messages/message_service.h).
#ifndef FAMPOOL_MESSAGES_MESSAGE_CLIENT_H_
#define FAMPOOL_MESSAGES_MESSAGE_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "fabric/fabric.h"
#include "messages/fabric_messages.h"
#include "rpc/authentication.h"
#include "rpc/fampool.pb.h"

namespace fampool {

// A caller's way to a FabricMessageService: its own endpoint, one call in flight at a time.
// `service` names the service in errors ("metadata service", "memory server 2").
class FabricMessageClient {
  public:
    FabricMessageClient(const FabricConfig &config, const std::string &service_address,
                        const std::string &incarnation, std::chrono::milliseconds timeout,
                        std::string service);
    ~FabricMessageClient();
    FabricMessageClient(const FabricMessageClient &) = delete;
    FabricMessageClient &operator=(const FabricMessageClient &) = delete;

    // Makes `call` and fills `reply`. False when the caller should make it over gRPC instead:
    // another thread's call is in flight, the call or its reply does not fit in a message, or
    // the provider never took the message (the service is gone; the client is then broken).
    // Once the provider took it, the service may have run the call: a failure from then on
    // (an error completion, the service gone per `same_service`, asked after 100 ms without a
    // reply, or no reply within the timeout) returns false for an `idempotent` call and
    // throws Failure(FAM_ERR_RPC) for another; the client is then broken.
    // With `seal` (a cluster with authentication) the call names the session and is sealed
    // (messages/message_seal.h), and only a reply sealed with the same session's key is taken;
    // without, only the call id (random) tells the reply. Anything else that arrives is
    // counted (rejected()) and ignored. A sealed call's first round trip for a session gets
    // this endpoint's reply proof instead of the reply (messages/message_seal.h): the call is
    // then made again, carrying it.
    bool Call(rpc::FabricCall &call, rpc::FabricReply *reply, const char *method, bool idempotent,
              const std::function<bool()> &same_service, const SessionSeal *seal = nullptr);
    // Sends `call` (at most 4 KiB) without waiting for its reply or its sending (a call whose
    // outcome the caller does not need): the next Call or Send sees its completion and skips
    // its reply. False when it was not sent (as Call's false; then the caller makes it over
    // gRPC): the one before it had not completed its sending within 1 s (the client is then
    // broken), or the provider did not take it.
    bool Send(rpc::FabricCall &call, const SessionSeal *seal = nullptr);
    bool broken() const { return broken_.load(); }
    uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
    // Messages that arrived while a call waited and were not its reply: late replies to
    // earlier calls, and anything another process sent this endpoint.
    uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }
    // Whether `endpoint` (as the service names it now) is the one this client calls.
    bool Reaches(const rpc::FabricEndpoint &endpoint) const {
        return endpoint.address() == service_address_ && endpoint.incarnation() == incarnation_;
    }
    // Time since the service last answered (since construction before its first answer).
    std::chrono::steady_clock::duration quiet_for() const;
    // Counts from now as if the service had answered (it was just seen alive).
    void Confirmed();

  private:
    // One round trip of Call, with mutex_ held; a reply holding only a reply proof is the
    // service's challenge (the call was not run).
    bool CallOnce(rpc::FabricCall &call, rpc::FabricReply *reply, const char *method,
                  bool idempotent, const std::function<bool()> &same_service,
                  const SessionSeal *seal);
    bool PostReceive();  // false (and broken) when the provider refuses it
    // Serializes `call` (its id drawn, reply_to this endpoint, sealed with `seal` if any) into
    // `slot` (`room` bytes); its size, 0 when it does not fit.
    size_t Prepare(rpc::FabricCall &call, const SessionSeal *seal, char *slot, size_t room);
    // Whether the `length` bytes received are the reply to call `id`, sealed with `seal`'s
    // key if any; parsed into `reply` if so.
    bool IsReply(size_t length, uint64_t id, const SessionSeal *seal, rpc::FabricReply *reply);
    // Whether a completion is of the message Send posted last (then no longer pending).
    bool Reaped(void *context);

    std::string service_name_;
    FabricDomain domain_;
    FidPtr<fid_av> av_;
    FabricEndpoint endpoint_;
    int queue_fd_ = -1;  // the queue's wait descriptor, where it has one
    std::string address_;
    std::string service_address_, incarnation_;
    fi_addr_t service_ = FI_ADDR_UNSPEC;
    std::chrono::milliseconds timeout_;
    std::atomic<int64_t> last_answer_;  // steady_clock ticks
    MessageSlots call_;                 // the call being made
    MessageSlots reply_;                // where its reply arrives
    MessageSlots loose_;                // Send's call, until its sending completed
    bool loose_pending_ = false;        // under mutex_
    std::mutex mutex_;                  // one call in flight
    // This endpoint's reply proof (messages/message_seal.h) for the session of id
    // proof_session_, once the service sent it. Under mutex_.
    std::string proof_, proof_session_;
    // How long the next call polls before it sleeps: halved after each reply that says the
    // service is shared, kSpin after any other (see kSpin in the .cc). Under mutex_.
    std::chrono::microseconds spin_;
    fi_context2 send_context_{}, receive_context_{}, loose_context_{};
    std::atomic<bool> broken_{false};
    std::atomic<uint64_t> calls_{0};
    std::atomic<uint64_t> rejected_{0};
};

// Which FabricMessageClient a caller of one service uses now, if any: none until Use; then the
// caller asks the service (over gRPC) where its endpoint is before the first call, and again
// after a second without a call (a restarted service has a new endpoint, and a message to the
// old one may vanish: shm delivers it into the dead service's queue). A broken client (or
// none) is replaced at most once a second; gRPC carries the calls meanwhile, and while another
// thread asks.
class MessageRoute {
  public:
    // `service` names the service in the clients' errors.
    explicit MessageRoute(std::string service) : service_(std::move(service)) {}
    void Use(const FabricConfig &config, std::chrono::milliseconds timeout);
    // `ask` returns the service's endpoint as it names it now (empty address: it has none, or
    // did not answer).
    std::shared_ptr<FabricMessageClient> Client(const std::function<rpc::FabricEndpoint()> &ask);
    uint64_t calls();  // calls made by the client in use

  private:
    std::string service_;
    std::mutex mutex_;
    bool wanted_ = false;
    bool asking_ = false;
    FabricConfig config_;
    std::chrono::milliseconds timeout_{0};
    std::chrono::steady_clock::time_point asked_{};
    std::shared_ptr<FabricMessageClient> client_;
};

}  // namespace fampool

#endif  // FAMPOOL_MESSAGES_MESSAGE_CLIENT_H_
