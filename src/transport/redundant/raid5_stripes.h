// RAID5 on the client: an item's bytes cut into the pieces of its stripes' data units, the
// stripe calls sent to the servers holding the stripes' parity, and stripes written by the
// client itself under leases from those servers (RedundantChannel::Raid5LeasedStripes,
// raid5_stripes.cc).
#ifndef FAMPOOL_TRANSPORT_REDUNDANT_RAID5_STRIPES_H_
#define FAMPOOL_TRANSPORT_REDUNDANT_RAID5_STRIPES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "transport/redundant/redundant_transport.h"

namespace fampool {

// Bytes of one stripe request (below gRPC's message limit), and of the whole stripes a client
// writes under one set of leases.
constexpr uint64_t kStripeRequestBytes = 16 << 20;

// A piece of item bytes inside one data unit: item byte `at`, `length` bytes from byte
// `within` of column `column`'s unit of stripe `stripe`.
struct StripePiece {
    uint64_t at, stripe, column, within, length;
};
std::vector<StripePiece> Raid5Pieces(const ItemInfo &item, uint64_t offset, uint64_t nbytes);
// The pieces [first, first + count) of a list of them: those of one stripe.
struct StripeRun {
    size_t first, count;
};
// Sends each server (id, call) its stripe call at once and waits for every answer; throws the
// first failure.
std::vector<std::string> SendStripes(RedundantTransport &transport,
                                     const std::vector<std::pair<uint64_t, StripeCall>> &calls);

}  // namespace fampool

#endif  // FAMPOOL_TRANSPORT_REDUNDANT_RAID5_STRIPES_H_
