// The metadata service's side of the frequent metadata calls over the fabric (why they take
// the fabric: meta/client/fabric_messages.h; the caller's side:
// meta/client/metadata_fabric_client.h). Same requests, same replies, same service code
// (MetadataRpcService answers both); gRPC stays the way in for everything else, for discovery
// (ClusterStatus names the service's endpoint) and as the fallback.
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

#include "fabric/fabric.h"
#include "meta/client/fabric_messages.h"
#include "meta/metadata_rpc_service.h"
#include "rpc/fampool.pb.h"

namespace fampool {

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
    bool Flush();        // offers the replies waiting to the provider; true when it took one
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
    std::deque<Arrival> arrived_;             // calls to answer
    std::vector<size_t> unposted_;            // receive slots the provider did not take back yet
    std::list<Reply> unsent_;                 // replies the provider has not taken yet
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

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_FABRIC_H_
