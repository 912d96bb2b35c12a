#include "meta/client/metadata_client.h"

#include <algorithm>
#include <random>
#include <thread>

#include "common/network.h"
#include "meta/client/metadata_client_calls.h"
#include "rpc/convert.h"

namespace fampool {

using metadata_requests::ItemRequest;
using metadata_requests::RegionRequest;

MetadataClient::MetadataClient(std::string address, std::chrono::milliseconds timeout,
                               const TlsSettings &tls)
    : address_(std::move(address)),
      timeout_(timeout),
      tls_(tls.enabled()),
      stub_(rpc::Metadata::NewStub(OpenChannel(address_, tls))) {}

MetadataClient::~MetadataClient() = default;

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

void MetadataClient::ChangeRegionPermissions(uint64_t region_id, uint32_t perm,
                                             const Caller &caller) {
    rpc::RegionRequest request = RegionRequest(region_id, caller);
    request.set_perm(perm);
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::ChangeRegionPermissions, "Metadata.ChangeRegionPermissions", request,
         &reply);
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

rpc::QuotaTaken MetadataClient::QuotaUsage(uint32_t uid, uint32_t gid, const Caller &caller) {
    rpc::QuotaUsageRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_uid(uid);
    request.set_gid(gid);
    rpc::QuotaTaken reply;
    Call(&rpc::Metadata::Stub::QuotaUsage, "Metadata.QuotaUsage", request, &reply);
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

void MetadataClient::ReportUsage(rpc::UsageReport report, std::chrono::milliseconds timeout) {
    ToProto(ThisProcess(), report.mutable_caller());
    rpc::Empty reply;
    Call(&rpc::Metadata::Stub::ReportUsage, "Metadata.ReportUsage", report, &reply, timeout);
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
    bool refusing = false;  // every attempt since refused_since refused at connect
    Clock::time_point refused_since = start;
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
        // Nothing listens there: a cluster not started, or stopped. A service starting or
        // restarting listens within seconds; a slow or busy one is not refused.
        bool refused = status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                       PortRefuses(address_, milliseconds(200));
        if (refused && !refusing) refused_since = Clock::now();
        refusing = refused;
        bool nobody = refusing && Clock::now() - refused_since >= kRefusedBound;
        left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
        if (status.ok() || !transient || nobody || left.count() <= 0) {
            try {
                CheckStatus(status, "Metadata.Servers", address_);
            } catch (const Failure &failure) {
                if (!transient) throw;
                auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
                Fail(openfam::FAM_ERR_RPC,
                     "{} (tried {} times in {} ms; connect_timeout_ms bounds the wait){}{}",
                     failure.fam_error_msg(), attempt, waited.count(),
                     refused ? std::string() : TlsHint(status.error_message()),
                     refused ? ". Nothing listens at " + address_ +
                                   ": is the cluster up? `fampool up` starts one (and prints "
                                   "the FAMPOOL_CONFIG to export); FAMPOOL_CONFIG names the "
                                   "cluster file of a running one"
                             : std::string());
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
