// The parallel LSD radix sort that both versions of the application share (README.md): the
// keys, the options, the eleven phases of one pass (seed paper, Fig. 12) and the checks.
//
// A version differs from the other only in where four things live: the input (a file or FAM),
// the global histogram and the send counts (the symmetric heap or FAM), and the output (a file
// or FAM). The global histogram and the send counts are exchanged through an Exchange, which
// each version implements; the input and the output are the mains' business. Everything else
// (local histograms, send and receive buffers, the key exchange itself) is on the OpenSHMEM
// symmetric heap in both, as the paper's table keeps it.
#ifndef FAMPOOL_APPS_RADIX_SORT_RADIX_SORT_H_
#define FAMPOOL_APPS_RADIX_SORT_RADIX_SORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "appkit/app.h"

namespace radix {

constexpr const char *kApp = "radix_sort";

// What to sort: `keys` keys of `key_bits` bits from `seed`, sorted `digit_bits` at a time.
struct Config {
    uint64_t keys = uint64_t{1} << 20;
    uint64_t seed = 1;
    unsigned key_bits = 64;
    unsigned digit_bits = 8;
    unsigned Passes() const { return (key_bits + digit_bits - 1) / digit_bits; }
    uint64_t Buckets() const { return uint64_t{1} << digit_bits; }
};

// The options both versions take (--keys, --seed, --key-bits, --digit-bits); exits 2 with a
// message on a value out of range.
Config ConfigOf(const apps::Args &args);
extern const char *kCommonUsage;

// Key `index` of the input: the same in both versions for the same seed.
uint64_t KeyAt(const Config &config, uint64_t index);

// The first row of PE `pe`'s block when `total` rows are spread over `count` PEs.
inline uint64_t BlockStart(uint64_t total, uint64_t pe, uint64_t count) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(total) * pe / count);
}

// This PE's rank and the job's size as OpenSHMEM sees them (call after shmem_init).
apps::Pe ShmemPe();
// Prints "radix_sort: PE <n>: <message>" on stderr and ends the whole job with status 1.
[[noreturn]] void Fail(const apps::Pe &pe, const std::string &message);

// The phases of the paper's Fig. 12, plus the output (the last pass ends by storing it).
enum Phase {
    kInput,            // 0: each PE reads its block of the input
    kLocalHistogram,   // 1: histogram of this pass's digit over the PE's keys
    kLocalRank,        // 2: local prefix; keys into the send buffer in digit order
    kGlobalHistogram,  // 3: every PE's histogram, on every PE
    kGlobalPrefix,     // 4: exclusive prefix over (digit, PE)
    kGlobalRank,       // 5: global rank of the first key of each of this PE's buckets
    kSendCounts,       // 6: how many keys go to each PE; every PE's counts, on every PE
    kDisplacements,    // 7: where each run starts in the send and in the receive buffers
    kKeyExchange,      // 8: all-to-all puts of the runs into the receive buffers
    kRecvHistogram,    // 9: histogram of the digit over the received keys
    kRecvRank,         // 10: received keys back into digit order: the next pass's input
    kOutput,           // each PE stores its block of the sorted keys
    kPhases
};
const char *PhaseName(int phase);

struct PhaseTimes {
    double seconds[kPhases] = {};
};

// Where a version exchanges the global histogram (phase 3) and the send counts (phase 6).
class Exchange {
  public:
    virtual ~Exchange() = default;
    // Every PE's histogram of this pass: from this PE's `local` (buckets entries, on the
    // symmetric heap) fills `matrix` digit-major: matrix[digit * npes + pe].
    virtual void GlobalHistogram(const uint64_t *local, std::vector<uint64_t> *matrix) = 0;
    // Every PE's send counts: from this PE's `row` (npes entries) fills `counts` row-major:
    // counts[p * npes + q] = keys PE p sends to PE q.
    virtual void SendCounts(const std::vector<uint64_t> &row, std::vector<uint64_t> *counts) = 0;
};

// The sort itself: this PE's block of keys, sorted in place with the others' by Sort().
// Its buffers are on the symmetric heap, so it is built and destroyed by every PE together,
// between shmem_init and shmem_finalize.
class Sorter {
  public:
    Sorter(const Config &config, const apps::Pe &pe, Exchange *exchange);
    ~Sorter();
    Sorter(const Sorter &) = delete;
    Sorter &operator=(const Sorter &) = delete;

    // This PE's block: Count() keys, the input before Sort() and the sorted output after.
    uint64_t *Keys() { return keys_; }
    uint64_t Count() const { return count_; }
    // Phases 1 to 10 for every digit, least significant first; adds each phase's time.
    void Sort(PhaseTimes *times);

  private:
    void Pass(unsigned shift, PhaseTimes *times);

    Config config_;
    apps::Pe pe_;
    Exchange *exchange_;
    uint64_t count_;
    uint64_t *keys_ = nullptr;   // symmetric: the pass's input and output
    uint64_t *send_ = nullptr;   // symmetric: keys in local digit order
    uint64_t *recv_ = nullptr;   // symmetric: the runs other PEs put here
    uint64_t *local_ = nullptr;  // symmetric: local histogram (phase 1)
    std::vector<uint64_t> matrix_, prefix_, bucket_rank_, row_, counts_, send_offset_,
        remote_offset_, histogram_, offsets_;
};

// One PE's share of the correctness check: fingerprints of the keys it generated (input) and
// of the block it read back from the output, descents inside that block, and its ends.
struct BlockCheck {
    uint64_t in_sum = 0, in_xor = 0, out_sum = 0, out_xor = 0, descents = 0;
    uint64_t count = 0, first = 0, last = 0;
};
BlockCheck CheckBlock(const Config &config, const apps::Pe &pe, const std::vector<uint64_t> &out);
// The verdict over all PEs' checks (summed fingerprints in `total`, ends per PE in `blocks`):
// prints the CHECK line on PE 0 and returns the exit status on every PE.
int Judge(const Config &config, const apps::Pe &pe, const BlockCheck &total,
          const std::vector<BlockCheck> &blocks);

// Every PE's check, on every PE (shmem_fcollect64), with the fingerprints summed into `total`.
std::vector<BlockCheck> CollectChecks(const BlockCheck &mine, BlockCheck *total);

// The RESULT lines: each phase's and the total time (the slowest PE's) and the rate, printed
// by PE 0. Collective.
void Report(const char *variant, const std::string &model, const Config &config, const apps::Pe &pe,
            const PhaseTimes &times, double total_seconds);

}  // namespace radix

#endif  // FAMPOOL_APPS_RADIX_SORT_RADIX_SORT_H_
