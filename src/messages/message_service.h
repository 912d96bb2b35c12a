// A service's side of calls over the fabric (messages/fabric_messages.h says why they take the
// fabric; the caller's side: messages/message_client.h). The metadata service
// (meta/metadata_fabric.h) and every memory server (memserver/memory_server_service.h) host
// one, each with its own dispatch of the calls it takes.
#ifndef FAMPOOL_MESSAGES_MESSAGE_SERVICE_H_
#define FAMPOOL_MESSAGES_MESSAGE_SERVICE_H_

#include <array>
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

#include "common/metrics.h"
#include "fabric/fabric.h"
#include "messages/fabric_messages.h"
#include "rpc/authentication.h"
#include "rpc/fampool.pb.h"

namespace fampool {

// Whether the bytes are a call a service can answer: a FabricCall whose reply_to is an endpoint
// name of `address_format` (fi_info's addr_format). tests/fuzz feeds it mutated bytes.
bool DecodeFabricCall(const char *data, size_t length, uint32_t address_format,
                      rpc::FabricCall *call);
// A reply larger than kMaxFabricMessage cut down to one that tells the caller to make the call
// over gRPC (use_grpc), keeping its call_id and shared.
void FitFabricReplyForGrpc(rpc::FabricReply *reply);

// What a service does with the calls that reach it.
struct MessageHandler {
    // Runs `call` into `reply`: the reply's oneof, and its outcome as a gRPC status would
    // carry it (code, message, details).
    std::function<void(const rpc::FabricCall &, rpc::FabricReply *)> dispatch;
    // Whether a call waits on other services (hundreds of microseconds, or a call to another
    // server's endpoint): such calls run on worker threads, so that the progress thread keeps
    // answering the others meanwhile. Empty: none does.
    std::function<bool(const rpc::FabricCall &)> waits;
    // How many: one serializes them (a slow one then delays the next; a call that waited its
    // turn for more than a second is not run, and its caller makes it over gRPC).
    size_t workers = 1;
    // Cuts a reply larger than kMaxFabricMessage down to what tells the caller to ask again
    // over gRPC. Empty: FitFabricReplyForGrpc.
    std::function<void(const rpc::FabricCall &, rpc::FabricReply *)> fit;
    // With authentication: the live session a sealed call names (messages/message_seal.h).
    // A call that names none, or whose tag does not hold under its key, is dropped unanswered
    // before anything else is done for it. Empty: calls are not sealed.
    std::function<std::optional<SessionTable::Sealed>(const std::string &id)> session;
    // Whether the progress thread yields the core while it polls between calls (RunProgressLoop):
    // for services that share cores with other busy threads (memory servers: their data-path
    // progress, the PEs).
    bool yields = false;
};

// A service's endpoint: one thread receives calls, runs them through the handler and sends the
// replies; it sleeps on the queue when nobody calls (RunProgressLoop). Calls that wait on
// others run on the worker threads, and the progress thread sends their replies when they are
// done.
class FabricMessageService {
  public:
    // Opens the endpoint at config.node:config.service (empty service: a port of the
    // provider's choosing) and starts serving. `who` names the service in its log lines
    // ("metadata", "memory server 2").
    FabricMessageService(const FabricConfig &config, MessageHandler handler, std::string who);
    ~FabricMessageService();  // closes the endpoint before its buffers go
    FabricMessageService(const FabricMessageService &) = delete;
    FabricMessageService &operator=(const FabricMessageService &) = delete;

    const std::string &address() const { return address_; }
    const std::string &name() const { return name_; }  // the address in words
    // Differs between two runs of the service, even on the same address.
    const std::string &incarnation() const { return incarnation_; }
    const std::string &provider() const { return domain_.provider(); }
    // Calls answered so far (for tests and `fampool status`).
    uint64_t answered() const { return answered_.load(std::memory_order_relaxed); }
    // Messages dropped unanswered: not a call, no one to answer, or (with authentication) no
    // live session or a tag that does not hold.
    uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
    // Sealed calls not run for want of their reply proof (messages/message_seal.h): each got
    // the proof back, at its reply_to.
    uint64_t challenged() const { return challenged_.load(std::memory_order_relaxed); }

  private:
    struct Arrival {
        size_t slot;
        size_t length;
    };
    // Whose calls these are, for the bound on what one sender may have in flight: the session
    // (sealed calls), else the endpoint the reply goes to.
    using Sender = std::string;
    struct Reply {
        size_t slot;
        size_t size;
        fi_addr_t peer;
        std::chrono::steady_clock::time_point deadline;
        Sender sender;
        bool counted;  // in answered_ (a reply proof's challenge is not)
    };
    struct Work {
        rpc::FabricCall call;
        rpc::FabricReply reply;
        std::chrono::steady_clock::time_point arrived;
        std::string key;  // the session's, to seal the reply with (empty: not sealed)
        Sender sender;
    };
    bool Serve();  // reaps the queue and answers what arrived; true when it found work
    bool Reap();   // reads the queue once
    void Complete(void *context, size_t length, bool failed);
    void Answer(size_t receive, size_t length);
    // Parses the call in `length` bytes, checks its seal (filling in its session's token and
    // `key`); false, counted in refused_, for a message to drop. A sealed call without its
    // reply proof is admitted with `proof` set to the proof: it is answered with it, not run.
    bool Admit(const char *data, size_t length, rpc::FabricCall *call, std::string *key,
               Sender *sender, std::string *proof);
    // Puts `reply` to `call` into a free send slot, sealed with `key` if any, and offers it to
    // the provider; `sender`'s call is no longer in flight once the provider took the reply
    // (or it was dropped). `counted`: counted in answered_ (false for a challenge).
    void Send(const rpc::FabricCall &call, fi_addr_t peer, rpc::FabricReply *reply,
              const std::string &key, Sender sender, bool counted = true);
    void Settled(const Sender &sender);  // one call of `sender` no longer in flight
    void RunWorker();
    // Runs the handler's dispatch, counted and timed in fampool_calls_total (common/metrics.h).
    void Dispatch(const rpc::FabricCall &call, rpc::FabricReply *reply);
    void Post(size_t receive);
    bool Flush();        // offers the replies waiting to the provider; true when it took one
    void PostWaiting();  // posts again the receives the provider refused before
    fi_addr_t PeerOf(const std::string &name);

    // Everything down to answered_ is used by the progress thread only after construction,
    // except handler_, endpoint_ (its queue, for fi_cq_signal) and queue_fd_, which the worker
    // uses too.
    MessageHandler handler_;
    std::string who_;
    std::string proof_secret_;  // ReplyProof's, drawn at start
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
    // Calls each sender has in flight: admitted, and whose reply the provider has not taken.
    std::map<Sender, size_t> in_flight_;
    // The last caller answered, and when: whether the service is shared (FabricReply.shared).
    fi_addr_t last_peer_ = FI_ADDR_UNSPEC;
    std::chrono::steady_clock::time_point last_answered_;
    std::atomic<uint64_t> answered_{0};
    std::atomic<uint64_t> refused_{0};
    std::atomic<uint64_t> challenged_{0};
    // Each kind of call's metrics (by the number of its field in FabricCall), found once.
    std::array<std::atomic<metrics::Calls *>, 64> calls_{};
    std::atomic<bool> stopping_{false};
    // Calls handed to the worker, and its answers; finished_ counts the answers not sent yet.
    std::mutex work_mutex_;
    std::condition_variable work_ready_;
    std::deque<Work> waiting_, done_;
    std::atomic<int> finished_{0};
    std::thread progress_;
    std::vector<std::thread> workers_;
};

}  // namespace fampool

#endif  // FAMPOOL_MESSAGES_MESSAGE_SERVICE_H_
