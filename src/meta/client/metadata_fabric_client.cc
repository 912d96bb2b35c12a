#include "common/error.h"
#include "meta/client/metadata_client.h"
#include "meta/client/metadata_client_calls.h"
#include "rpc/convert.h"

namespace fampool {

using metadata_requests::ItemRequest;
using metadata_requests::LookupRequest;
using metadata_requests::RegionRequest;

// MetadataClient's calls that go over the fabric first (metadata_client.h): each makes its
// request, and Call below sends it through a FabricMessageClient (messages/message_client.h), or
// over gRPC when the fabric is not in use, busy or gone.

template <typename Request, typename Reply>
bool MetadataClient::Call(grpc::Status (rpc::Metadata::Stub::*method)(grpc::ClientContext *,
                                                                      const Request &, Reply *),
                          const char *name, const Request &request, Reply *reply,
                          Request *(rpc::FabricCall::*call_field)(),
                          Reply *(rpc::FabricReply::*reply_field)(), bool idempotent) {
    for (int attempt = 0;; ++attempt) {
        std::shared_ptr<FabricMessageClient> fabric =
            fabric_.Client([this] { return AskFabricEndpoint(); });
        if (!fabric) break;  // over gRPC, below
        rpc::FabricCall call;
        Request *sent = (call.*call_field)();
        *sent = request;
        // With authentication the call names the session and is sealed with its key; the
        // token itself never travels on the fabric (messages/message_seal.h).
        std::optional<std::string> token;
        SessionSeal seal;
        if (munge_) {
            token = Stamp(sent->mutable_caller());
            sent->mutable_caller()->clear_token();
            seal = seals_.For(*token);
        }
        rpc::FabricReply answer;
        auto same_service = [&] { return fabric->Reaches(AskFabricEndpoint()); };
        if (!fabric->Call(call, &answer, name, idempotent, same_service, token ? &seal : nullptr)) {
            break;
        }
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

ItemInfo MetadataClient::LookupItem(const std::string &item, const std::string &region,
                                    const Caller &caller) {
    rpc::Item reply;
    Call(&rpc::Metadata::Stub::LookupItem, "Metadata.LookupItem",
         LookupRequest(item, region, caller), &reply, &rpc::FabricCall::mutable_lookup_item,
         &rpc::FabricReply::mutable_item,
         /*idempotent=*/true);
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

ItemInfo MetadataClient::GetItem(uint64_t region_id, uint64_t offset, const Caller &caller) {
    rpc::Item reply;
    Call(&rpc::Metadata::Stub::GetItem, "Metadata.GetItem", ItemRequest(region_id, offset, caller),
         &reply, &rpc::FabricCall::mutable_get_item, &rpc::FabricReply::mutable_item,
         /*idempotent=*/true);
    return FromProto(reply);
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

void MetadataClient::UseFabric(const FabricConfig &config) { fabric_.Use(config, timeout_); }

rpc::FabricEndpoint MetadataClient::AskFabricEndpoint() {
    rpc::FabricEndpoint endpoint;
    try {
        rpc::Caller request;  // the session's token: the reply says whether it is live
        if (munge_) Stamp(&request);
        Call(&rpc::Metadata::Stub::MetadataEndpoint, "Metadata.MetadataEndpoint", request,
             &endpoint);
        if (munge_ && !endpoint.address().empty() && !endpoint.session_known()) {
            std::string stale;
            {
                std::lock_guard<std::mutex> lock(session_mutex_);
                stale = token_;
            }
            Reauthenticated(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, ""), stale);
        }
    } catch (const Failure &) {
        endpoint.Clear();  // unreachable: gRPC it is (its calls report the service being gone)
    }
    return endpoint;
}

uint64_t MetadataClient::fabric_calls() { return fabric_.calls(); }

}  // namespace fampool
