// The frequent metadata calls over the fabric: lookups, fam_stat's reads, item allocation and
// region creation and destruction travel as one libfabric message each way between the
// caller's endpoint and an endpoint of the metadata service, instead of a gRPC call. Same
// requests, same replies, same service code (MetadataRpcService answers both); gRPC stays the
// way in for everything else, for discovery (ClusterStatus names the service's endpoint) and
// as the fallback.
//
// Why: a gRPC call costs 130-190 us on the project machine (libgrpc's own work on both sides,
// measured against a 20-25 us TCP round trip), a message round trip 3 us over shm and ~30 us
// over tcp (docs/bench/cluster.md); over verbs or cxi it is a few microseconds.
#ifndef FAMPOOL_META_METADATA_FABRIC_H_
#define FAMPOOL_META_METADATA_FABRIC_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "meta/metadata_rpc_service.h"
#include "rpc/fampool.pb.h"
#include "fabric/fabric.h"

namespace fampool {

// Largest message either way. A call that does not fit goes over gRPC; a reply that does not
// fit (an item striped over hundreds of servers) is answered with use_grpc (or item_partial),
// and the caller asks again over gRPC.
constexpr size_t kMaxFabricMessage = 60 << 10;
// Size of every buffer a message is received into: larger than any message a provider sends
// in one piece (tcp;ofi_rxm: 16 KiB), whoever sends it. libfabric 1.17's tcp provider loses
// its place in the stream when a message does not fit, and stops delivering.
constexpr size_t kReceiveBuffer = 64 << 10;

// The service's side of a message, apart from the fabric (tests/fuzz feeds it mutated bytes):
//   DecodeFabricCall: whether the bytes are a call the service can answer (a FabricCall whose
//     reply_to is an endpoint name of `address_format`, fi_info's addr_format);
//   DispatchFabricCall: runs it on `service`, as gRPC would, into `reply`;
//   FitFabricReply: cuts a reply larger than kMaxFabricMessage down to what tells the caller
//     to ask again over gRPC.
bool DecodeFabricCall(const char *data, size_t length, uint32_t address_format,
                      rpc::FabricCall *call);
void DispatchFabricCall(MetadataRpcService &service, const rpc::FabricCall &call,
                        rpc::FabricReply *reply);
void FitFabricReply(const rpc::FabricCall &call, rpc::FabricReply *reply);

// Buffers for messages in flight, registered when the provider wants local registration.
class MessageSlots {
  public:
    MessageSlots(FabricDomain &domain, fid_ep *endpoint, size_t count, size_t size);
    char *slot(size_t index) { return memory_.data() + index * size_; }
    size_t size() const { return size_; }
    void *descriptor() const { return registration_ ? fi_mr_desc(registration_.get()) : nullptr; }

  private:
    size_t size_;
    std::vector<char> memory_;
    FidPtr<fid_mr> registration_;
};

// The metadata service's endpoint: one thread receives calls, runs them on `service` and
// sends the replies; it sleeps on the queue when nobody calls (RunProgressLoop). Calls that
// wait on memory servers (region creation and destruction) run on a second thread, the
// worker, and the progress thread sends their replies when they are done.
class MetadataFabricService {
  public:
    // Opens the endpoint at config.node:config.service (empty service: a port of the
    // provider's choosing) and starts serving.
    MetadataFabricService(const FabricConfig &config, MetadataRpcService *service);
    ~MetadataFabricService();  // closes the endpoint before its buffers go
    MetadataFabricService(const MetadataFabricService &) = delete;
    MetadataFabricService &operator=(const MetadataFabricService &) = delete;

    const std::string &address() const { return address_; }
    const std::string &name() const { return name_; }  // the address in words
    // Differs between two runs of the service, even on the same address.
    const std::string &incarnation() const { return incarnation_; }
    const std::string &provider() const { return domain_.provider(); }
    // Calls answered so far (for tests and `fampool status`).
    uint64_t answered() const { return answered_.load(std::memory_order_relaxed); }

  private:
    struct Arrival {
        size_t slot;
        size_t length;
    };
    struct Reply {
        size_t slot;
        size_t size;
        fi_addr_t peer;
        std::chrono::steady_clock::time_point deadline;
    };
    struct Work {
        rpc::FabricCall call;
        rpc::FabricReply reply;
        std::chrono::steady_clock::time_point arrived;
    };
    bool Serve();  // reaps the queue and answers what arrived; true when it found work
    bool Reap();   // reads the queue once
    void Complete(void *context, size_t length, bool failed);
    void Answer(size_t receive, size_t length);
    // Puts `reply` to `call` into a free send slot and offers it to the provider.
    void Send(const rpc::FabricCall &call, fi_addr_t peer, rpc::FabricReply *reply);
    void RunWorker();
    void Post(size_t receive);
    bool Flush();  // offers the replies waiting to the provider; true when it took one
    void PostWaiting();  // posts again the receives the provider refused before
    fi_addr_t PeerOf(const std::string &name);

    // Everything down to answered_ is used by the progress thread only after construction,
    // except service_, endpoint_ (its queue, for fi_cq_signal) and queue_fd_, which the worker
    // uses too.
    MetadataRpcService *service_;
    FabricDomain domain_;
    FidPtr<fid_av> av_;
    FabricEndpoint endpoint_;
    int queue_fd_ = -1;
    std::string address_, name_, incarnation_;
    MessageSlots receives_;
    MessageSlots sends_;
    std::vector<fi_context2> receive_contexts_;
    std::vector<fi_context2> send_contexts_;
    std::vector<size_t> free_sends_;
    std::deque<Arrival> arrived_;  // calls to answer
    std::vector<size_t> unposted_;  // receive slots the provider did not take back yet
    std::list<Reply> unsent_;      // replies the provider has not taken yet
    std::map<std::string, fi_addr_t> peers_;  // caller endpoint name -> address vector entry
    // The last caller answered, and when: whether the service is shared (FabricReply.shared).
    fi_addr_t last_peer_ = FI_ADDR_UNSPEC;
    std::chrono::steady_clock::time_point last_answered_;
    std::atomic<uint64_t> answered_{0};
    std::atomic<bool> stopping_{false};
    // Calls handed to the worker, and its answers; finished_ counts the answers not sent yet.
    std::mutex work_mutex_;
    std::condition_variable work_ready_;
    std::deque<Work> waiting_, done_;
    std::atomic<int> finished_{0};
    std::thread progress_, worker_;
};

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
    bool Call(rpc::FabricCall &call, rpc::FabricReply *reply, const char *method,
              bool idempotent, const std::function<bool()> &same_service);
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
    MessageSlots call_;   // the call being made
    MessageSlots reply_;  // where its reply arrives
    std::mutex mutex_;    // one call in flight
    uint64_t next_call_ = 1;
    // How long the next call polls before it sleeps: halved after each reply that says the
    // service is shared, kSpin after any other (see kSpin in the .cc). Under mutex_.
    std::chrono::microseconds spin_;
    fi_context2 send_context_{}, receive_context_{};
    std::atomic<bool> broken_{false};
    std::atomic<uint64_t> calls_{0};
};

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_FABRIC_H_
