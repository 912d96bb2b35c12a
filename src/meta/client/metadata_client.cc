#include "meta/client/metadata_client.h"

#include <algorithm>
#include <optional>
#include <random>
#include <thread>

#include "rpc/convert.h"

namespace fampool {
namespace {

rpc::RegionRequest RegionRequest(uint64_t region_id, const Caller &caller) {
    rpc::RegionRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_region_id(region_id);
    return request;
}

rpc::ItemRequest ItemRequest(uint64_t region_id, uint64_t offset, const Caller &caller) {
    rpc::ItemRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_region_id(region_id);
    request.set_offset(offset);
    return request;
}

rpc::LookupRequest LookupRequest(const std::string &name, const std::string &region,
                                 const Caller &caller) {
    rpc::LookupRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_name(name);
    request.set_region(region);
    return request;
}

}  // namespace

MetadataClient::MetadataClient(std::string address, std::chrono::milliseconds timeout,
                               const TlsSettings &tls)
    : address_(std::move(address)),
      timeout_(timeout),
      tls_(tls.enabled()),
      stub_(rpc::Metadata::NewStub(OpenChannel(address_, tls))) {}

MetadataClient::~MetadataClient() = default;

template <typename Request, typename Reply>
void MetadataClient::Call(grpc::Status (rpc::Metadata::Stub::*method)(grpc::ClientContext *,
                                                                      const Request &, Reply *),
                          const char *name, const Request &request, Reply *reply,
                          std::chrono::milliseconds timeout) {
    for (int attempt = 0;; ++attempt) {
        std::optional<std::string> token;  // the session token the call carried, if any
        grpc::Status status;
        auto context = CallContext(timeout.count() ? timeout : timeout_);
        if constexpr (requires(Request r) { r.mutable_caller(); }) {
            if (munge_) {
                Request stamped = request;
                token = Stamp(stamped.mutable_caller());
                status = ((*stub_).*method)(context.get(), stamped, reply);
            }
        }
        if (!token) status = ((*stub_).*method)(context.get(), request, reply);
        if (attempt == 0 && token && Reauthenticated(status, *token)) continue;
        CheckStatus(status, name, address_);
        return;
    }
}

template <typename Request, typename Reply>
bool MetadataClient::Call(grpc::Status (rpc::Metadata::Stub::*method)(grpc::ClientContext *,
                                                                      const Request &, Reply *),
                          const char *name, const Request &request, Reply *reply,
                          Request *(rpc::FabricCall::*call_field)(),
                          Reply *(rpc::FabricReply::*reply_field)(), bool idempotent) {
    for (int attempt = 0;; ++attempt) {
        std::shared_ptr<MetadataFabricClient> fabric = Fabric();
        if (!fabric) break;  // over gRPC, below
        rpc::FabricCall call;
        Request *sent = (call.*call_field)();
        *sent = request;
        std::optional<std::string> token;
        if (munge_) token = Stamp(sent->mutable_caller());
        rpc::FabricReply answer;
        auto same_service = [&] { return fabric->Reaches(AskFabricEndpoint()); };
        if (!fabric->Call(call, &answer, name, idempotent, same_service)) break;
        grpc::Status status(static_cast<grpc::StatusCode>(answer.code()), answer.message(),
                            answer.details());
        if (attempt == 0 && token && Reauthenticated(status, *token)) continue;
        CheckStatus(status, name, address_);
        reply->Swap((answer.*reply_field)());
        return answer.item_partial() || answer.region_partial();
    }
    Call(method, name, request, reply);
    return false;
}

std::string MetadataClient::Stamp(rpc::Caller *caller) {
    std::lock_guard<std::mutex> lock(session_mutex_);
    if (!session_open_) {
        token_ = OpenSession().token();
        session_open_ = true;
    }
    caller->set_token(token_);
    return token_;
}

bool MetadataClient::Reauthenticated(const grpc::Status &status, const std::string &token) {
    if (status.error_code() != grpc::StatusCode::UNAUTHENTICATED) return false;
    std::lock_guard<std::mutex> lock(session_mutex_);
    // Another thread may have opened a new session since this call was stamped: it is used.
    if (token_ == token) {
        session_open_ = false;
        token_ = OpenSession().token();
        session_open_ = true;
    }
    return true;
}

void MetadataClient::UseMunge(const std::string &socket) {
    std::lock_guard<std::mutex> lock(session_mutex_);
    munge_socket_ = socket;
    munge_ = true;
}

rpc::Session MetadataClient::Authenticate() {
    std::lock_guard<std::mutex> lock(session_mutex_);
    rpc::Session session = OpenSession();
    token_ = session.token();
    session_open_ = true;
    return session;
}

rpc::Session MetadataClient::OpenSession() {
    rpc::Credential credential;
    credential.set_munge(MakeCredential(munge_socket_, kMetadataAudience, "Metadata.Authenticate"));
    rpc::Session session;
    auto context = CallContext(timeout_);
    CheckStatus(stub_->Authenticate(context.get(), credential, &session), "Metadata.Authenticate",
                address_);
    return session;
}

void MetadataClient::UseFabric(const FabricConfig &config) {
    std::lock_guard<std::mutex> lock(fabric_mutex_);
    fabric_config_ = config;
    fabric_wanted_ = true;
    fabric_tried_ = {};  // connect at the next call
}

std::shared_ptr<MetadataFabricClient> MetadataClient::Fabric() {
    using std::chrono::seconds;
    std::unique_lock<std::mutex> lock(fabric_mutex_);
    if (!fabric_wanted_) return nullptr;
    bool usable = fabric_ && !fabric_->broken();
    // In use lately: the service is the one that answered.
    if (usable && fabric_->quiet_for() < seconds(1)) return fabric_;
    // A quiet client asks the service (over gRPC) where its endpoint is before using it: a
    // restarted service has a new one, and a message to the old one may vanish (shm delivers
    // it into the dead service's queue). A broken client (or none) does so at most once a
    // second; gRPC carries the calls meanwhile, and while another thread asks.
    auto now = std::chrono::steady_clock::now();
    if (connecting_ || (!usable && now - fabric_tried_ < seconds(1))) return nullptr;
    fabric_tried_ = now;
    connecting_ = true;
    lock.unlock();
    rpc::FabricEndpoint endpoint = AskFabricEndpoint();
    lock.lock();
    connecting_ = false;
    if (endpoint.address().empty() || endpoint.provider() != fabric_config_.provider) {
        fabric_.reset();
    } else if (fabric_ && !fabric_->broken() && fabric_->Reaches(endpoint)) {
        fabric_->Confirmed();
    } else {
        try {
            fabric_ = std::make_shared<MetadataFabricClient>(fabric_config_, endpoint.address(),
                                                             endpoint.incarnation(), timeout_);
        } catch (const Failure &) {
            fabric_.reset();  // cannot reach that endpoint over this provider
        }
    }
    return fabric_;
}

rpc::FabricEndpoint MetadataClient::AskFabricEndpoint() {
    rpc::FabricEndpoint endpoint;
    try {
        rpc::Empty request;
        Call(&rpc::Metadata::Stub::MetadataEndpoint, "Metadata.MetadataEndpoint", request,
             &endpoint);
    } catch (const Failure &) {
        endpoint.Clear();  // unreachable: gRPC it is (its calls report the service being gone)
    }
    return endpoint;
}

uint64_t MetadataClient::fabric_calls() {
    std::lock_guard<std::mutex> lock(fabric_mutex_);
    return fabric_ ? fabric_->calls() : 0;
}

RegionInfo MetadataClient::CreateRegion(const std::string &name, uint64_t size, uint32_t perm,
                                        const Fam_Region_Attributes &attributes,
                                        const RegionIntent &intent, const Caller &caller) {
    rpc::CreateRegionRequest request;
    if (!intent.empty()) ToProto(intent, request.mutable_intent());
    ToProto(caller, request.mutable_caller());
    request.set_name(name);
    request.set_size(size);
    request.set_perm(perm);
    ToProto(attributes, request.mutable_attributes());
    rpc::Region reply;
    bool partial =
        Call(&rpc::Metadata::Stub::CreateRegion, "Metadata.CreateRegion", request, &reply,
             &rpc::FabricCall::mutable_create_region, &rpc::FabricReply::mutable_region,
             /*idempotent=*/false);
    // Created, but the whole record did not fit in a message: read it over gRPC.
    if (partial) return GetRegionOverGrpc(reply.id(), caller);
    return FromProto(reply);
}

void MetadataClient::DestroyRegion(uint64_t region_id, const Caller &caller) {
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::DestroyRegion, "Metadata.DestroyRegion",
         RegionRequest(region_id, caller), &reply, &rpc::FabricCall::mutable_destroy_region,
         &rpc::FabricReply::mutable_empty,
         /*idempotent=*/false);
}

RegionInfo MetadataClient::GetRegionOverGrpc(uint64_t region_id, const Caller &caller) {
    rpc::Region reply;
    Call(&rpc::Metadata::Stub::GetRegion, "Metadata.GetRegion", RegionRequest(region_id, caller),
         &reply);
    return FromProto(reply);
}

RegionInfo MetadataClient::ResizeRegion(uint64_t region_id, uint64_t size, const Caller &caller) {
    rpc::RegionRequest request = RegionRequest(region_id, caller);
    request.set_size(size);
    rpc::Region reply;
    Call(&rpc::Metadata::Stub::ResizeRegion, "Metadata.ResizeRegion", request, &reply);
    return FromProto(reply);
}

RegionInfo MetadataClient::LookupRegion(const std::string &name, const Caller &caller) {
    rpc::Region reply;
    Call(&rpc::Metadata::Stub::LookupRegion, "Metadata.LookupRegion",
         LookupRequest(name, "", caller), &reply, &rpc::FabricCall::mutable_lookup_region,
         &rpc::FabricReply::mutable_region,
         /*idempotent=*/true);
    return FromProto(reply);
}

RegionInfo MetadataClient::GetRegion(uint64_t region_id, const Caller &caller) {
    rpc::Region reply;
    Call(&rpc::Metadata::Stub::GetRegion, "Metadata.GetRegion", RegionRequest(region_id, caller),
         &reply, &rpc::FabricCall::mutable_get_region, &rpc::FabricReply::mutable_region,
         /*idempotent=*/true);
    return FromProto(reply);
}

void MetadataClient::ChangeRegionPermissions(uint64_t region_id, uint32_t perm,
                                             const Caller &caller) {
    rpc::RegionRequest request = RegionRequest(region_id, caller);
    request.set_perm(perm);
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::ChangeRegionPermissions, "Metadata.ChangeRegionPermissions", request,
         &reply);
}

ItemInfo MetadataClient::AllocateItem(uint64_t region_id, const std::string &name, uint64_t size,
                                      uint32_t perm, const Caller &caller) {
    rpc::AllocateRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_region_id(region_id);
    request.set_name(name);
    request.set_size(size);
    request.set_perm(perm);
    rpc::Item reply;
    bool partial =
        Call(&rpc::Metadata::Stub::AllocateItem, "Metadata.AllocateItem", request, &reply,
             &rpc::FabricCall::mutable_allocate_item, &rpc::FabricReply::mutable_item,
             /*idempotent=*/false);
    // Allocated, but the whole record did not fit in a message: read it over gRPC.
    if (partial) {
        rpc::Item whole;
        Call(&rpc::Metadata::Stub::GetItem, "Metadata.GetItem",
             ItemRequest(reply.region_id(), reply.offset(), caller), &whole);
        return FromProto(whole);
    }
    return FromProto(reply);
}

void MetadataClient::DeallocateItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::DeallocateItem, "Metadata.DeallocateItem",
         ItemRequest(region_id, offset, caller), &reply, &rpc::FabricCall::mutable_deallocate_item,
         &rpc::FabricReply::mutable_empty,
         /*idempotent=*/false);
}

ItemInfo MetadataClient::LookupItem(const std::string &item, const std::string &region,
                                    const Caller &caller) {
    rpc::Item reply;
    Call(&rpc::Metadata::Stub::LookupItem, "Metadata.LookupItem",
         LookupRequest(item, region, caller), &reply, &rpc::FabricCall::mutable_lookup_item,
         &rpc::FabricReply::mutable_item,
         /*idempotent=*/true);
    return FromProto(reply);
}

ItemInfo MetadataClient::GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    rpc::Item reply;
    Call(&rpc::Metadata::Stub::GetItem, "Metadata.GetItem", ItemRequest(region_id, offset, caller),
         &reply, &rpc::FabricCall::mutable_get_item, &rpc::FabricReply::mutable_item,
         /*idempotent=*/true);
    return FromProto(reply);
}

void MetadataClient::ChangeItemPermissions(uint64_t region_id, uint64_t offset, uint32_t perm,
                                           const Caller &caller) {
    rpc::ItemRequest request = ItemRequest(region_id, offset, caller);
    request.set_perm(perm);
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::ChangeItemPermissions, "Metadata.ChangeItemPermissions", request,
         &reply);
}

rpc::ClusterStatus MetadataClient::Status(const Caller &caller) {
    rpc::StatusRequest request;
    ToProto(caller, request.mutable_caller());
    rpc::ClusterStatus reply;
    Call(&rpc::Metadata::Stub::Status, "Metadata.Status", request, &reply);
    return reply;
}

void MetadataClient::EndSession() {
    std::lock_guard<std::mutex> lock(session_mutex_);
    if (!session_open_) return;
    session_open_ = false;
    rpc::Caller request;
    request.set_token(token_);
    rpc::Empty reply;
    auto context = CallContext(std::min(timeout_, std::chrono::milliseconds(1000)));
    // Best effort: a service that does not answer has lost its sessions, or will on restart.
    (void)stub_->EndSession(context.get(), request, &reply);
    token_.clear();
}

void MetadataClient::ReportFailure(const std::vector<uint64_t> &servers) {
    rpc::ServerReport request;
    for (uint64_t id : servers) request.add_servers(id);
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::ReportFailure, "Metadata.ReportFailure", request, &reply);
}

rpc::RebuildReply MetadataClient::Rebuild(const std::string &region,
                                          std::chrono::milliseconds timeout, const Caller &caller) {
    rpc::RebuildRequest request;
    request.set_region(region);
    ToProto(caller, request.mutable_caller());
    rpc::RebuildReply reply;
    Call(&rpc::Metadata::Stub::Rebuild, "Metadata.Rebuild", request, &reply, timeout);
    return reply;
}

std::string MetadataClient::TlsHint(const std::string &error) const {
    // What a TLS mismatch looks like from here: the connection closes during or instead of a
    // handshake (a server that is down refuses the connection instead).
    bool handshake = error.find("andshake") != std::string::npos ||
                     error.find("Socket closed") != std::string::npos ||
                     error.find("SSL") != std::string::npos;
    if (!handshake) return "";
    if (tls_) {
        return ". The TLS handshake failed: a service without TLS, a server certificate that "
               "tls_ca did not sign or that does not name this address, or (where the servers "
               "require one) no client certificate signed by their CA";
    }
    return ". The connection closed at the start: if the cluster uses TLS (its cluster file "
           "names tls_ca), this client must use it too";
}

rpc::ServerList MetadataClient::Servers(std::chrono::milliseconds within) {
    using Clock = std::chrono::steady_clock;
    using std::chrono::milliseconds;
    const auto start = Clock::now(), deadline = start + within;
    std::minstd_rand random(std::random_device{}());
    auto pause = milliseconds(20);
    for (int attempt = 1;; ++attempt) {
        auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
        rpc::Empty request;
        rpc::ServerList reply;
        // Each attempt may take the call timeout, and at least a second (or the call timeout
        // if shorter), even when connect_timeout_ms leaves less.
        auto context =
            CallContext(std::max(std::min(left, timeout_), std::min(timeout_, milliseconds(1000))));
        grpc::Status status = stub_->Servers(context.get(), request, &reply);
        bool transient = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
        left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
        if (status.ok() || !transient || left.count() <= 0) {
            try {
                CheckStatus(status, "Metadata.Servers", address_);
            } catch (const Failure &failure) {
                if (!transient) throw;
                auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
                Fail(openfam::FAM_ERR_RPC,
                     "{} (tried {} times in {} ms; connect_timeout_ms bounds the wait){}",
                     failure.fam_error_msg(), attempt, waited.count(),
                     TlsHint(status.error_message()));
            }
            return reply;
        }
        // Full jitter: PEs that failed together do not come back together.
        milliseconds nap(
            std::uniform_int_distribution<int64_t>(pause.count() / 2, pause.count())(random));
        std::this_thread::sleep_for(std::min(nap, left));
        pause = std::min(pause * 2, milliseconds(2000));
    }
}

std::vector<ItemInfo> MetadataClient::ListItems(uint64_t region_id, const Caller &caller) {
    rpc::ItemList reply;
    Call(&rpc::Metadata::Stub::ListItems, "Metadata.ListItems", RegionRequest(region_id, caller),
         &reply);
    std::vector<ItemInfo> items;
    for (const rpc::Item &item : reply.items()) items.push_back(FromProto(item));
    return items;
}

}  // namespace fampool
