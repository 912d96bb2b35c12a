// The metadata service's side of the frequent metadata calls over the fabric
// (messages/fabric_messages.h says why they take the fabric): a FabricMessageService whose
// calls MetadataRpcService answers, as it answers them over gRPC; gRPC stays the way in for
// everything else, for discovery (ClusterStatus names the service's endpoint) and as the
// fallback. The caller's side: meta/client/metadata_client.h.
#ifndef FAMPOOL_META_METADATA_FABRIC_H_
#define FAMPOOL_META_METADATA_FABRIC_H_

#include <memory>

#include "fabric/fabric.h"
#include "messages/message_service.h"
#include "meta/metadata_rpc_service.h"
#include "rpc/fampool.pb.h"

namespace fampool {

// The service's side of a message, apart from the fabric (tests/fuzz feeds it mutated bytes
// after DecodeFabricCall):
//   DispatchFabricCall: runs it on `service`, as gRPC would, into `reply`;
//   FitFabricReply: cuts a reply larger than kMaxFabricMessage down to what tells the caller
//     to ask again over gRPC (an allocation or creation that is done says which one).
void DispatchFabricCall(MetadataRpcService &service, const rpc::FabricCall &call,
                        rpc::FabricReply *reply);
void FitFabricReply(const rpc::FabricCall &call, rpc::FabricReply *reply);

// The metadata service's endpoint at config.node:config.service (empty service: a port of the
// provider's choosing), serving `service`. Region creation and destruction, which wait on
// memory servers, run on its worker thread.
std::unique_ptr<FabricMessageService> OpenMetadataFabric(const FabricConfig &config,
                                                         MetadataRpcService *service);

}  // namespace fampool

#endif  // FAMPOOL_META_METADATA_FABRIC_H_
