// The file the thrasher's driver (tests/thrash/thrash.py) and its PEs (thrash_worker.cc) both
// map: the driver's command, each PE's counts, and what was acknowledged of the shared
// counters. Every field is a little-endian uint64 at a fixed offset, so that the driver reads
// it with Python's struct module; thrash.py repeats these offsets (kept in step by hand: the
// worker checks the magic, the driver the file size).
#ifndef FAMPOOL_TESTS_THRASH_THRASH_STATE_H_
#define FAMPOOL_TESTS_THRASH_THRASH_STATE_H_

#include <atomic>
#include <cstdint>

namespace thrash {

constexpr uint64_t kMagic = 0x31304853415254ull;  // "TRASH01"
constexpr int kMostPes = 8;
constexpr int kLevels = 2;  // RAID1, RAID5
// Many counters, each touched now and then: an atomic that reached one copy or one data unit
// only is found when the word is read with that member's server killed before a later atomic
// on the word covered it.
constexpr int kFetchWords = 32;                    // fam_fetch_add counters per level
constexpr int kAddWords = 32;                      // fam_add + fam_quiet counters per level
constexpr uint64_t kSeenBits = uint64_t{1} << 18;  // fetched values marked per fetch word

// The driver's command: (sequence << 8) | kind. A PE acts on each new sequence once and then
// stores it in its `acted` word.
enum Command : uint64_t { kRun = 1, kPause = 2, kCheck = 3, kStop = 4 };

// A PE's words. Counts are cumulative over the run.
enum PeWord {
    kActed = 0,      // the last command sequence acted on
    kOps,            // calls made (each of the kinds below)
    kPuts,           // acknowledged puts
    kGets,           // reads checked while running
    kFetchAdds,      // acknowledged fam_fetch_add
    kAdds,           // acknowledged fam_add (after fam_quiet)
    kCopies,         // acknowledged fam_copy (after fam_copy_wait)
    kFailed,         // calls that threw
    kWrongReads,     // reads while running that found neither the acknowledged bytes
    kWrongSlots,     // slots found wrong by the checks
    kWrongCounters,  // counters found wrong by the checks (PE 0 checks them)
    kDuplicates,     // fetched values seen twice (an increment lost)
    kChecks,         // checks made
    kSlotsChecked,   // slots compared by the checks
    kPhase,          // 0 starting, 1 running, 2 paused, 3 stopped
    kOpStartedNs,    // CLOCK_MONOTONIC of the call in progress (0: none)
    kCountersAbove,  // counters found above what was acknowledged (applied twice)
    kCountersBelow,  // counters found below (lost)
    kPeWords = 32,
};

constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kPeBytes = kPeWords * 8;
// Per level and counter word (fetch words first): acknowledged adds, and adds whose call
// failed (they may or may not have been applied).
constexpr uint64_t kCountersAt = kHeaderBytes + kMostPes * kPeBytes;
constexpr uint64_t kCounterWords = kFetchWords + kAddWords;
constexpr uint64_t kSeenAt = 8192;
constexpr uint64_t kStateBytes = kSeenAt + kLevels * kFetchWords * (kSeenBits / 8);

struct State {
    explicit State(void *base) : base_(static_cast<char *>(base)) {}
    std::atomic<uint64_t> &Word(uint64_t offset) {
        return *reinterpret_cast<std::atomic<uint64_t> *>(base_ + offset);
    }
    std::atomic<uint64_t> &Magic() { return Word(0); }
    std::atomic<uint64_t> &Command() { return Word(8); }
    std::atomic<uint64_t> &Pe(int pe, PeWord word) {
        return Word(kHeaderBytes + pe * kPeBytes + word * 8);
    }
    std::atomic<uint64_t> &Acked(int level, uint64_t word) {
        return Word(kCountersAt + (level * kCounterWords + word) * 16);
    }
    std::atomic<uint64_t> &Uncertain(int level, uint64_t word) {
        return Word(kCountersAt + (level * kCounterWords + word) * 16 + 8);
    }
    // Marks `value` fetched from fetch word `word`; true when it was marked before.
    bool MarkSeen(int level, uint64_t word, uint64_t value) {
        if (value >= kSeenBits) return false;
        uint64_t at = kSeenAt + (level * kFetchWords + word) * (kSeenBits / 8) + value / 64 * 8;
        uint64_t bit = uint64_t{1} << (value % 64);
        return Word(at).fetch_or(bit) & bit;
    }

  private:
    char *base_;
};

}  // namespace thrash

#endif  // FAMPOOL_TESTS_THRASH_THRASH_STATE_H_
