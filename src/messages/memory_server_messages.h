// A memory server's redundant-region calls as fabric messages (messages/fabric_messages.h says
// why): RAID1 mirrored atomics and mirror writes, and RAID5 stripe atomics, go to the server's
// message endpoint (memserver/memory_server_service.h ServeOverFabric), which Info names; every
// other call, and these when the server offers no endpoint or the fabric fails them, over gRPC
// as MemoryServerClient makes them.
#ifndef FAMPOOL_MESSAGES_MEMORY_SERVER_MESSAGES_H_
#define FAMPOOL_MESSAGES_MEMORY_SERVER_MESSAGES_H_

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "fabric/fabric.h"
#include "messages/message_client.h"
#include "rpc/memory_server_client.h"

namespace fampool {

class FabricMemoryServerClient : public MemoryServerClient {
  public:
    FabricMemoryServerClient(uint64_t id, std::string address, std::chrono::milliseconds timeout,
                             const TlsSettings &tls = TlsSettings())
        : MemoryServerClient(id, address, timeout, tls),
          route_(fmt::format("memory server {} ({})", id, address)) {}
    // From now on the calls below go over the fabric where the server offers an endpoint of
    // `fabric`'s provider (its provider and interface are this process's message endpoint's).
    // Until then, over gRPC.
    void UseFabric(const FabricConfig &fabric);

    // Until the message left, a failure sends the call over gRPC; from then on it fails with
    // FAM_ERR_RPC, as a gRPC call that timed out: at once when the server is gone (it
    // restarted, or its port refuses), else when the timeout passes. A RAID1 caller then makes the
    // atomic again with its id (applied once), and the server of a mirror write reports the
    // copy's loss; a RAID5 atomic may then be applied twice (as over gRPC).
    MirroredAtomicResult MirroredAtomic(const MirroredAtomicCall &call) override;
    void Mirror(const MirrorWrite &call) override;
    // Atomics, and reads and writes that fit in a message (kMaxFabricMessage), over the
    // fabric; larger ones and rebuilds over gRPC.
    std::string Stripe(const StripeCall &call,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) override;
    // Over the fabric without waiting for the reply, where it can be sent so; else over gRPC.
    void StripeUnanswered(const StripeCall &call) override;
    // Calls made over the fabric so far (for tests).
    uint64_t fabric_calls() { return route_.calls(); }

  private:
    // Where the server takes calls over the fabric now, asked over gRPC (MessageRoute);
    // nullopt when it did not answer.
    std::optional<rpc::FabricEndpoint> AskEndpoint();
    // AskEndpoint for the route (empty address: none): with authentication, a session the
    // server knows is open first (a sealed message naming one it does not know is dropped
    // unanswered, messages/message_seal.h).
    rpc::FabricEndpoint RouteEndpoint();
    // Whether a call in flight on `messages` still has its server: the same endpoint, or a
    // server that does not answer but whose port does not refuse (stopped or busy: its answer
    // may come yet, and a call made again elsewhere could be applied twice).
    bool SameServer(const FabricMessageClient &messages);
    // Makes `call` over the fabric into `reply` and checks its outcome (throwing the server's
    // error); false when the call should be made over gRPC instead (it never left).
    bool OverFabric(rpc::FabricCall &call, rpc::FabricReply *reply, const char *method);

    MessageRoute route_;
    SealCache seals_;
};

}  // namespace fampool

#endif  // FAMPOOL_MESSAGES_MEMORY_SERVER_MESSAGES_H_
