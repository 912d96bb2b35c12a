// Hashes of names that must come out the same in every process and build: where a region is
// placed (meta/metadata_store.cc), which metadata shard owns it (common/shards.h), what a run
// directory's heaps and namespaces are called (tools/cli).
#ifndef FAMPOOL_COMMON_HASH_H_
#define FAMPOOL_COMMON_HASH_H_

#include <cstdint>
#include <string_view>

namespace fampool {

// FNV-1a, 64 bits, over the bytes of `text` (with the offset basis fampool has always used,
// 1469598103934665603: region placement depends on it).
constexpr uint64_t Fnv1a(std::string_view text) {
    uint64_t hash = 1469598103934665603ull;
    for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return hash;
}

// splitmix64's finalizer: every bit of `x` moves every bit of the result. Two choices made
// from one name's hash (its shard, its memory server) are then independent.
constexpr uint64_t Mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace fampool

#endif  // FAMPOOL_COMMON_HASH_H_
