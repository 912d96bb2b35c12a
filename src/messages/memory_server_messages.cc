#include "messages/memory_server_messages.h"

#include <fmt/format.h>

#include "common/error.h"
#include "common/network.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

// How long a call waits to learn where the server's endpoint is: a stopped server must not
// cost the call its whole timeout twice (here, then over gRPC).
constexpr auto kLongestAsk = std::chrono::milliseconds(1000);
// The most bytes a stripe read over the fabric asks for: its reply must fit in a message.
constexpr uint64_t kMostFabricRead = kMaxFabricMessage - (4 << 10);
// How long a call waits to learn whether the server's port refuses connections.
constexpr auto kLongestProbe = std::chrono::milliseconds(200);

}  // namespace

void FabricMemoryServerClient::UseFabric(const FabricConfig &fabric) {
    route_.Use(fabric, timeout());
}

std::optional<rpc::FabricEndpoint> FabricMemoryServerClient::AskEndpoint() {
    rpc::FabricEndpoint endpoint;
    try {
        MemoryServerInfo info = Info(std::min(timeout(), kLongestAsk));
        endpoint.set_provider(info.messages_provider);
        endpoint.set_address(info.messages_address);
        endpoint.set_incarnation(info.messages_incarnation);
        endpoint.set_session_known(info.messages_session_known);
    } catch (const Failure &) {
        return std::nullopt;
    }
    return endpoint;
}

rpc::FabricEndpoint FabricMemoryServerClient::RouteEndpoint() {
    try {
        std::string token;
        if (munge()) token = SessionToken();
        std::optional<rpc::FabricEndpoint> endpoint = AskEndpoint();
        if (!endpoint) return rpc::FabricEndpoint();
        if (munge() && !endpoint->address().empty() && !endpoint->session_known()) {
            SessionToken(&token);  // ended there (idle, or the server restarted): a new one
        }
        return *endpoint;
    } catch (const Failure &) {
        return rpc::FabricEndpoint();  // no session: gRPC it is, and its call says why
    }
}

bool FabricMemoryServerClient::SameServer(const FabricMessageClient &messages) {
    std::optional<rpc::FabricEndpoint> now = AskEndpoint();
    if (now) return messages.Reaches(*now);
    return !PortRefuses(address(), kLongestProbe);
}

bool FabricMemoryServerClient::OverFabric(rpc::FabricCall &call, rpc::FabricReply *reply,
                                          const char *method) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        // Unreachable: gRPC it is (its call reports the server being gone).
        std::shared_ptr<FabricMessageClient> messages =
            route_.Client([this] { return RouteEndpoint(); });
        if (!messages) return false;
        std::string token;
        SessionSeal seal;
        if (munge()) {
            token = SessionToken();
            seal = seals_.For(token);
        }
        auto same_service = [&] { return SameServer(*messages); };
        // Once the message left, a failure is FAM_ERR_RPC, as a gRPC call's timeout: the
        // caller's recovery makes the call again where it should (a mirrored atomic with its
        // id, applied once), not a second copy of it over gRPC here.
        if (!messages->Call(call, reply, method, /*idempotent=*/false, same_service,
                            munge() ? &seal : nullptr)) {
            return false;
        }
        grpc::Status status(static_cast<grpc::StatusCode>(reply->code()), reply->message(),
                            reply->details());
        // The server restarted since the session was opened: a new one, and once more.
        if (munge() && attempt == 0 && status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
            SessionToken(&token);
            continue;
        }
        CheckStatus(status, method, address());
        return true;
    }
    return false;
}

void FabricMemoryServerClient::StripeUnanswered(const StripeCall &call) {
    std::shared_ptr<FabricMessageClient> messages =
        route_.Client([this] { return RouteEndpoint(); });
    if (messages) {
        rpc::FabricCall message;
        ToProto(call, message.mutable_stripe());
        SessionSeal seal;
        if (munge()) seal = seals_.For(SessionToken());
        if (messages->Send(message, munge() ? &seal : nullptr)) return;
    }
    MemoryServerClient::Stripe(call);
}

MirroredAtomicResult FabricMemoryServerClient::MirroredAtomic(const MirroredAtomicCall &call) {
    rpc::FabricCall message;
    ToProto(call, message.mutable_atomic());
    rpc::FabricReply reply;
    if (!OverFabric(message, &reply, "MemoryServer.Atomic")) {
        return MemoryServerClient::MirroredAtomic(call);
    }
    const rpc::AtomicReply &atomic = reply.atomic();
    return MirroredAtomicResult{atomic.result(), atomic.mirror_failed(), atomic.busy(),
                                atomic.value(), atomic.repeat()};
}

void FabricMemoryServerClient::Mirror(const MirrorWrite &call) {
    rpc::FabricCall message;
    ToProto(call, message.mutable_mirror());
    rpc::FabricReply reply;
    if (!OverFabric(message, &reply, "MemoryServer.Mirror")) {
        MemoryServerClient::Mirror(call);
    }
}

std::string FabricMemoryServerClient::Stripe(const StripeCall &call,
                                             std::chrono::milliseconds timeout) {
    // Reads whose bytes may not fit in a reply, and rebuilds, over gRPC. A write too large
    // for a message goes there too (OverFabric: it never leaves).
    uint64_t bytes = 0;
    for (const StripeCall::Piece &piece : call.pieces) bytes += piece.length;
    if (call.op == StripeCall::Op::kRebuild ||
        (call.op == StripeCall::Op::kRead && bytes > kMostFabricRead)) {
        return MemoryServerClient::Stripe(call, timeout);
    }
    rpc::FabricCall message;
    ToProto(call, message.mutable_stripe());
    rpc::FabricReply reply;
    if (!OverFabric(message, &reply, "MemoryServer.Stripe")) {
        return MemoryServerClient::Stripe(call, timeout);
    }
    return std::move(*reply.mutable_stripe()->mutable_data());
}

}  // namespace fampool
