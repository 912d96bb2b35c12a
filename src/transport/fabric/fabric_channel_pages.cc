// FabricChannel: the pages of a large put's destination made on its memory servers ahead of
// its bytes. A put over the fabric lands on a server by the provider's receive, and each fresh
// page of the heap then faults in under the kernel's copy, one at a time: a first put ran at
// a third to a half of the same put again (docs/bench/large.md). Asked first (Populate), the
// server has the kernel make the put's pages in large steps, in the background, while the
// bytes arrive.
#include <algorithm>
#include <utility>

#include "common/error.h"
#include "transport/fabric/fabric_channel.h"
#include "transport/fabric/fabric_channel_internals.h"

namespace fampool {

using namespace channel;

namespace {

// Whether [begin, end) lies within one of the ranges of `made` (disjoint, by first byte).
bool Covered(const std::map<uint64_t, uint64_t> &made, uint64_t begin, uint64_t end) {
    auto after = made.upper_bound(begin);
    if (after == made.begin()) return false;
    return std::prev(after)->second >= end;
}

// Adds [begin, end) to `made`, merging the ranges it meets.
void Note(std::map<uint64_t, uint64_t> *made, uint64_t begin, uint64_t end) {
    auto at = made->upper_bound(begin);
    if (at != made->begin() && std::prev(at)->second >= begin) --at;
    while (at != made->end() && at->first <= end) {
        begin = std::min(begin, at->first);
        end = std::max(end, at->second);
        at = made->erase(at);
    }
    made->emplace(begin, end);
}

}  // namespace

void FabricChannel::MakePagesAhead(const FabricBinding &item, uint64_t offset, uint64_t nbytes) {
    if (nbytes < kPagesAheadFrom || item.direct || item.raid5_members != 0) return;
    // What the put reaches on each server, as one physical range per server.
    std::map<size_t, std::pair<uint64_t, uint64_t>> reach;
    for (uint64_t at = offset, end = offset + nbytes; at < end;) {
        FabricBinding::Place place = item.Locate(at);
        uint64_t length = std::min(end - at, std::max<uint64_t>(place.contiguous, 1));
        auto [range, fresh] =
            reach.emplace(place.server, std::make_pair(place.physical, place.physical + length));
        if (!fresh) {
            range->second.first = std::min(range->second.first, place.physical);
            range->second.second = std::max(range->second.second, place.physical + length);
        }
        at += length;
    }
    for (const auto &[index, range] : reach) {
        if (index >= item.servers.size() || !item.servers[index].reachable) continue;
        const FabricBinding::Server &server = item.servers[index];
        if (pages_made_.size() >= kPagesAheadKept) pages_made_.clear();
        std::map<uint64_t, uint64_t> &made =
            pages_made_[std::make_tuple(server.id, item.region_id, item.persistent)];
        if (Covered(made, range.first, range.second)) continue;
        try {
            context_->server(server.id).Populate(ExtentRef{item.region_id, item.persistent},
                                                 server.key, {range});
        } catch (const Failure &) {
            continue;  // only speed is lost; the put says what is wrong, if anything is
        }
        if (made.size() >= kPagesAheadKept) made.clear();
        Note(&made, range.first, range.second);
    }
}

}  // namespace fampool
