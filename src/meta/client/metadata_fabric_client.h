// A client's side of the frequent metadata calls over the fabric (meta/client/fabric_messages.h
// says why they take the fabric): one message each way to the metadata service's endpoint.
#ifndef FAMPOOL_META_CLIENT_METADATA_FABRIC_CLIENT_H_
#define FAMPOOL_META_CLIENT_METADATA_FABRIC_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "fabric/fabric.h"
#include "meta/client/fabric_messages.h"
#include "rpc/fampool.pb.h"

namespace fampool {

// A client's way to MetadataFabricService: its own endpoint, one call in flight at a time.
class MetadataFabricClient {
  public:
    MetadataFabricClient(const FabricConfig &config, const std::string &service_address,
                         const std::string &incarnation, std::chrono::milliseconds timeout);
    ~MetadataFabricClient();
    MetadataFabricClient(const MetadataFabricClient &) = delete;
    MetadataFabricClient &operator=(const MetadataFabricClient &) = delete;

    // Makes `call` and fills `reply`. False when the caller should make it over gRPC instead:
    // another thread's call is in flight, the call or its reply does not fit in a message, or
    // the provider never took the message (the service is gone; the client is then broken).
    // Once the provider took it, the service may have run the call: a failure from then on
    // (an error completion, the service gone per `same_service`, asked after 100 ms without a
    // reply, or no reply within the timeout) returns false for an `idempotent` call and
    // throws Failure(FAM_ERR_RPC) for another; the client is then broken.
    bool Call(rpc::FabricCall &call, rpc::FabricReply *reply, const char *method, bool idempotent,
              const std::function<bool()> &same_service);
    bool broken() const { return broken_.load(); }
    uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
    // Whether `endpoint` (as the service names it now) is the one this client calls.
    bool Reaches(const rpc::FabricEndpoint &endpoint) const {
        return endpoint.address() == service_address_ && endpoint.incarnation() == incarnation_;
    }
    // Time since the service last answered (since construction before its first answer).
    std::chrono::steady_clock::duration quiet_for() const;
    // Counts from now as if the service had answered (it was just seen alive).
    void Confirmed();

  private:
    bool PostReceive();  // false (and broken) when the provider refuses it

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
    std::mutex mutex_;                  // one call in flight
    uint64_t next_call_ = 1;
    // How long the next call polls before it sleeps: halved after each reply that says the
    // service is shared, kSpin after any other (see kSpin in the .cc). Under mutex_.
    std::chrono::microseconds spin_;
    fi_context2 send_context_{}, receive_context_{};
    std::atomic<bool> broken_{false};
    std::atomic<uint64_t> calls_{0};
};

}  // namespace fampool

#endif  // FAMPOOL_META_CLIENT_METADATA_FABRIC_CLIENT_H_
