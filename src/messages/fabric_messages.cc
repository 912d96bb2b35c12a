#include "messages/fabric_messages.h"

namespace fampool {

EndpointOptions MessageEndpointOptions(const FabricDomain &domain) {
    EndpointOptions options;
    options.queue_format = FI_CQ_FORMAT_MSG;
    options.queue_wait = domain.provider() == "shm" ? FI_WAIT_NONE : FI_WAIT_FD;
    return options;
}

MessageSlots::MessageSlots(FabricDomain &domain, fid_ep *endpoint, size_t count, size_t size)
    : size_(size), memory_(count * size) {
    if (domain.local_registration()) {
        registration_ =
            domain.Register(memory_.data(), memory_.size(), FI_SEND | FI_RECV, endpoint);
    }
}

}  // namespace fampool
