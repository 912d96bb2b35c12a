// Calls over the fabric: the frequent metadata calls (lookups, fam_stat's reads, item
// allocation, region creation and destruction) and the memory servers' redundant-region calls
// (RAID1 and RAID5 atomics, RAID1 mirror writes) travel as one libfabric message each way
// (rpc::FabricCall, rpc::FabricReply) between the caller's endpoint and an endpoint of the
// service, instead of a gRPC call. Same requests, same replies, same service code; gRPC stays
// the way in for everything else, for discovery (the services name their endpoints) and as the
// fallback.
//
// Why: a gRPC call costs 130-190 us on the project machine (libgrpc's own work on both sides,
// measured against a 20-25 us TCP round trip), a message round trip 3 us over shm and ~30 us
// over tcp (docs/bench/cluster.md); over verbs or cxi it is a few microseconds.
// What both ends of the message path share: message sizes, the buffers messages are sent from
// and received into, and the endpoint options. The client is messages/message_client.h, the
// service messages/message_service.h.
#ifndef FAMPOOL_MESSAGES_FABRIC_MESSAGES_H_
#define FAMPOOL_MESSAGES_FABRIC_MESSAGES_H_

#include <cstddef>
#include <vector>

#include "fabric/fabric.h"

namespace fampool {

// Largest message either way. A call that does not fit goes over gRPC; a reply that does not
// fit (an item striped over hundreds of servers) is answered with use_grpc (or item_partial),
// and the caller asks again over gRPC.
constexpr size_t kMaxFabricMessage = 60 << 10;
// Size of every buffer a message is received into: larger than any message a provider sends
// in one piece (tcp;ofi_rxm: 16 KiB), whoever sends it. libfabric 1.17's tcp provider loses
// its place in the stream when a message does not fit, and stops delivering.
constexpr size_t kReceiveBuffer = 64 << 10;

// Buffers for messages in flight, registered when the provider wants local registration.
class MessageSlots {
  public:
    MessageSlots(FabricDomain &domain, fid_ep *endpoint, size_t count, size_t size);
    char *slot(size_t index) { return memory_.data() + index * size_; }
    size_t size() const { return size_; }
    void *descriptor() const { return registration_ ? fi_mr_desc(registration_.get()) : nullptr; }

  private:
    size_t size_;
    std::vector<char> memory_;
    FidPtr<fid_mr> registration_;
};

// Both ends sleep on the queue's descriptor where the provider has one that wakes on traffic
// (tcp); shm's only wait object is a sched_yield loop that ignores timeouts: never use it.
EndpointOptions MessageEndpointOptions(const FabricDomain &domain);

}  // namespace fampool

#endif  // FAMPOOL_MESSAGES_FABRIC_MESSAGES_H_
