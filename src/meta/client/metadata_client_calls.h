// What MetadataClient's two files share (not for other code): the requests they build and
// the call over gRPC. metadata_client.cc holds the sessions and the calls that only gRPC
// carries; metadata_fabric_client.cc the calls that go over the fabric first, beside the
// fabric exchange they use.
#ifndef FAMPOOL_META_CLIENT_METADATA_CLIENT_CALLS_H_
#define FAMPOOL_META_CLIENT_METADATA_CLIENT_CALLS_H_

#include <optional>
#include <set>
#include <string>

#include "meta/client/metadata_client.h"
#include "rpc/convert.h"

namespace fampool {
namespace metadata_requests {

inline rpc::RegionRequest RegionRequest(uint64_t region_id, const Caller &caller) {
    rpc::RegionRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_region_id(region_id);
    return request;
}

inline rpc::ItemRequest ItemRequest(uint64_t region_id, uint64_t offset, const Caller &caller) {
    rpc::ItemRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_region_id(region_id);
    request.set_offset(offset);
    return request;
}

inline rpc::LookupRequest LookupRequest(const std::string &name, const std::string &region,
                                        const Caller &caller) {
    rpc::LookupRequest request;
    ToProto(caller, request.mutable_caller());
    request.set_name(name);
    request.set_region(region);
    return request;
}

// Calls that leave the service as one call would when made twice: reads, and permission
// changes to a given mode. (Not creations, allocations, deallocations or destructions.)
inline bool RepeatableCall(const char *name) {
    static const std::set<std::string> repeatable = {"Metadata.GetItem",
                                                     "Metadata.GetRegion",
                                                     "Metadata.ListItems",
                                                     "Metadata.LookupItem",
                                                     "Metadata.LookupRegion",
                                                     "Metadata.Status",
                                                     "Metadata.ReportFailure",
                                                     "Metadata.ChangeItemPermissions",
                                                     "Metadata.ChangeRegionPermissions",
                                                     "Metadata.MetadataEndpoint"};
    return repeatable.count(name) > 0;
}

}  // namespace metadata_requests

template <typename Request, typename Reply>
void MetadataClient::Call(grpc::Status (rpc::Metadata::Stub::*method)(grpc::ClientContext *,
                                                                      const Request &, Reply *),
                          const char *name, const Request &request, Reply *reply,
                          std::chrono::milliseconds timeout) {
    for (int attempt = 0;; ++attempt) {
        std::optional<std::string> token;  // the session token the call carried, if any
        grpc::Status status;
        auto context = CallContext(timeout.count() ? timeout : timeout_);
        if (wait_for_service_) context->set_wait_for_ready(true);
        if constexpr (requires(Request r) { r.mutable_caller(); }) {
            if (munge_) {
                Request stamped = request;
                token = Stamp(stamped.mutable_caller());
                status = ((*stub_).*method)(context.get(), stamped, reply);
            }
        }
        if (!token) status = ((*stub_).*method)(context.get(), request, reply);
        if (attempt == 0 && token && Reauthenticated(status, *token)) continue;
        // The first call after the service died goes out on the dead connection (the channel
        // has not read its close yet) and fails at once; one that changes nothing when made
        // twice is made again, waiting for the service.
        if (attempt == 0 && wait_for_service_ &&
            status.error_code() == grpc::StatusCode::UNAVAILABLE &&
            metadata_requests::RepeatableCall(name)) {
            continue;
        }
        CheckStatus(status, name, address_);
        return;
    }
}

}  // namespace fampool

#endif  // FAMPOOL_META_CLIENT_METADATA_CLIENT_CALLS_H_
