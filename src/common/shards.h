// Metadata shards: the metadata service may run as several shards, each owning the regions
// whose names hash to it and keeping them in a store of its own. A client finds the shard of a
// name by hashing it, and the shard of a region id from the id itself: shard k numbers its
// regions from k << kShardShift, so that ids are unique across shards and carry their owner.
// A cluster of one shard numbers regions from 1, as before shards existed.
#ifndef FAMPOOL_COMMON_SHARDS_H_
#define FAMPOOL_COMMON_SHARDS_H_

#include <cstdint>
#include <string_view>

#include "common/hash.h"

namespace fampool {

// Most shards a cluster may have.
constexpr uint32_t kMostShards = 64;
// Region ids of shard k are (k << kShardShift) + 1, + 2, ...
constexpr int kShardShift = 56;

// The shard that owns region id `region_id`.
constexpr uint32_t ShardOfRegion(uint64_t region_id) {
    return static_cast<uint32_t>(region_id >> kShardShift);
}

// The first region id shard `shard` gives.
constexpr uint64_t FirstRegionId(uint32_t shard) {
    return (static_cast<uint64_t>(shard) << kShardShift) + 1;
}

// The shard of `shards` that owns the region named `name`: the name's FNV-1a, mixed, modulo
// the count. Clients and shards must agree on it, so it never changes. Mixed so that it does
// not follow the name's memory server (FNV-1a modulo the servers): unmixed, with 2 shards and
// 2 servers every region of shard 0 went to server 0.
constexpr uint32_t ShardOfName(std::string_view name, uint32_t shards) {
    if (shards <= 1) return 0;
    return static_cast<uint32_t>(Mix(Fnv1a(name)) % shards);
}

}  // namespace fampool

#endif  // FAMPOOL_COMMON_SHARDS_H_
