// FabricChannel: callers' buffers registered with the domain, where the provider wants local
// buffers registered (FI_MR_LOCAL, or FabricConfig::register_local). Registrations are kept in
// a cache of kRegistrationCache; a buffer of more than kRegistrationWindow bytes is registered
// a window at a time as its pieces are posted, so that a call of any size holds a bounded
// amount registered (docs/robustness.md, "Large transfers, and giving up on them").
#include <algorithm>

#include "transport/fabric/fabric_channel.h"
#include "transport/fabric/fabric_channel_internals.h"

namespace fampool {

void *FabricChannel::LocalDescriptor(const void *local, uint64_t length,
                                     Clock::time_point deadline) {
    if (!domain_.local_registration()) return nullptr;
    const char *start = static_cast<const char *>(local);
    if (length > kRegistrationWindow) {
        window_buffer_ = start;
        window_buffer_length_ = length;
        return kByWindow;
    }
    return Registered(start, length, deadline);
}

void *FabricChannel::WindowDescriptor(const char *piece, uint64_t length,
                                      Clock::time_point deadline) {
    const char *buffer = window_buffer_;
    const char *end = buffer + window_buffer_length_;
    const char *window = buffer + (piece - buffer) / kRegistrationWindow * kRegistrationWindow;
    // A piece that crosses the window's end (a striped item's blocks need not meet windows)
    // widens it, by one piece at most.
    const char *window_end = std::min(end, std::max(window + kRegistrationWindow, piece + length));
    return Registered(window, window_end - window, deadline);
}

void *FabricChannel::Registered(const char *start, uint64_t length, Clock::time_point deadline) {
    for (auto it = registrations_.begin(); it != registrations_.end(); ++it) {
        if (start >= it->start && start + length <= it->start + it->length) {
            registrations_.splice(registrations_.begin(), registrations_, it);
            return fi_mr_desc(registrations_.front().mr.get());
        }
    }
    if (registrations_.size() >= kRegistrationCache) {
        Settle(deadline, true);  // the oldest registrations may back operations in flight
        // After a failure Settle replaced the endpoint, registrations and all (and when it
        // could not open a new one, this call opens it or fails saying why).
        if (!endpoint_.endpoint) Open();
        // Nothing is in flight now: half go, so that a large call's windows wait once per
        // half a cache, not once each.
        while (registrations_.size() > kRegistrationCache / 2) {
            registered_bytes_ -= registrations_.back().length;
            registrations_.pop_back();
        }
    }
    FidPtr<fid_mr> mr =
        domain_.Register(start, length, FI_READ | FI_WRITE, endpoint_.endpoint.get());
    void *desc = fi_mr_desc(mr.get());
    registrations_.push_front(LocalRegistration{start, length, std::move(mr)});
    registered_bytes_ += length;
    most_registered_ = std::max(most_registered_, registered_bytes_);
    return desc;
}

uint64_t FabricChannel::MostRegistered() {
    std::lock_guard<std::mutex> lock(mutex_);
    return most_registered_;
}

}  // namespace fampool
