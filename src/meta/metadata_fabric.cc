#include "meta/metadata_fabric.h"

namespace fampool {

void DispatchFabricCall(MetadataRpcService &service, const rpc::FabricCall &call,
                        rpc::FabricReply *reply) {
    grpc::Status status;
    switch (call.request_case()) {
        case rpc::FabricCall::kLookupRegion:
            status = service.LookupRegion(nullptr, &call.lookup_region(), reply->mutable_region());
            break;
        case rpc::FabricCall::kGetRegion:
            status = service.GetRegion(nullptr, &call.get_region(), reply->mutable_region());
            break;
        case rpc::FabricCall::kAllocateItem:
            status = service.AllocateItem(nullptr, &call.allocate_item(), reply->mutable_item());
            break;
        case rpc::FabricCall::kDeallocateItem:
            status =
                service.DeallocateItem(nullptr, &call.deallocate_item(), reply->mutable_empty());
            break;
        case rpc::FabricCall::kLookupItem:
            status = service.LookupItem(nullptr, &call.lookup_item(), reply->mutable_item());
            break;
        case rpc::FabricCall::kGetItem:
            status = service.GetItem(nullptr, &call.get_item(), reply->mutable_item());
            break;
        case rpc::FabricCall::kCreateRegion:
            status = service.CreateRegion(nullptr, &call.create_region(), reply->mutable_region());
            break;
        case rpc::FabricCall::kDestroyRegion:
            status = service.DestroyRegion(nullptr, &call.destroy_region(), reply->mutable_empty());
            break;
        default:
            status = grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                  "metadata call not taken over the fabric");
            break;
    }
    if (!status.ok()) reply->clear_reply();
    reply->set_code(status.error_code());
    reply->set_message(status.error_message());
    reply->set_details(status.error_details());
}

void FitFabricReply(const rpc::FabricCall &call, rpc::FabricReply *answer) {
    rpc::FabricReply &reply = *answer;
    if (reply.ByteSizeLong() <= kMaxFabricMessage) return;
    // Too large for a message. An allocation or a region creation is done and must not be made
    // twice: send which one, the caller reads it over gRPC; any other call is made again.
    bool allocated = call.has_allocate_item() && reply.has_item();
    bool created = call.has_create_region() && reply.has_region();
    uint64_t region_id = allocated ? reply.item().region_id() : created ? reply.region().id() : 0;
    uint64_t offset = allocated ? reply.item().offset() : 0;
    uint64_t call_id = reply.call_id();
    bool shared = reply.shared();
    reply.Clear();
    reply.set_call_id(call_id);
    reply.set_shared(shared);
    if (allocated) {
        reply.set_item_partial(true);
        reply.mutable_item()->set_region_id(region_id);
        reply.mutable_item()->set_offset(offset);
    } else if (created) {
        reply.set_region_partial(true);
        reply.mutable_region()->set_id(region_id);
    } else {
        reply.set_use_grpc(true);
    }
}

std::unique_ptr<FabricMessageService> OpenMetadataFabric(const FabricConfig &config,
                                                         MetadataRpcService *service) {
    MessageHandler handler;
    handler.dispatch = [service](const rpc::FabricCall &call, rpc::FabricReply *reply) {
        DispatchFabricCall(*service, call, reply);
    };
    // Region creation and destruction wait on memory servers (over gRPC, hundreds of
    // microseconds): the worker runs them.
    handler.waits = [](const rpc::FabricCall &call) {
        return call.has_create_region() || call.has_destroy_region();
    };
    handler.fit = FitFabricReply;
    if (SessionTable *sessions = service->sessions()) {
        handler.session = [sessions](const std::string &id) { return sessions->FindSealed(id); };
    }
    return std::make_unique<FabricMessageService>(config, std::move(handler), "metadata");
}

}  // namespace fampool
