// What the redundancy tests (tests/redundancy_test.cc) and their PEs (workers/raid_worker.cc)
// share: the state file both map, and the byte pattern each round of a PE writes.
#ifndef FAMPOOL_TESTS_SUPPORT_RAID_STATE_H_
#define FAMPOOL_TESTS_SUPPORT_RAID_STATE_H_

#include <atomic>
#include <cstdint>

namespace fampool_test {

// The state file's layout: a stop word, each PE's progress, the atomics' seen bytes (as many
// as the file holds).
struct RaidState {
    std::atomic<uint64_t> stop;
    std::atomic<uint64_t> progress[8];
    std::atomic<uint8_t> seen[1];
};

// Each PE's item.
constexpr uint64_t kRaidItemSize = 1 << 20;

// Byte `offset` of the pattern of `seed`.
inline uint8_t RaidPatternByte(uint64_t offset, uint32_t seed) {
    uint64_t x = (offset + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t{seed} * 0xbf58476d1ce4e5b9ull);
    x ^= x >> 31;
    return static_cast<uint8_t>(x * 0x94d049bb133111ebull >> 56);
}

// The seed of PE `pe`'s round `round`.
inline uint32_t RaidSeedOf(int pe, uint64_t round) {
    return static_cast<uint32_t>(pe * 100000 + round);
}

}  // namespace fampool_test

#endif  // FAMPOOL_TESTS_SUPPORT_RAID_STATE_H_
