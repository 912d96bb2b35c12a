// The workflow's dataset and its statistics: what a reading is (a function of the seed and its
// index), and the statistics the PEs compute together over a dataset in FAM, meeting in a
// "stats" item whose layout other jobs read back (README.md).
#ifndef FAMPOOL_APPS_WORKFLOW_STATS_H_
#define FAMPOOL_APPS_WORKFLOW_STATS_H_

#include <fam/fam.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "appkit/app.h"

namespace workflow {

// Reading i of the sensor series of `seed`: a daily cycle (a triangle wave of 86400 readings,
// 12 to 28 degrees) plus noise (four uniform draws, -3 to +3). Plain IEEE arithmetic, so
// every node computes the same bits.
double Reading(uint64_t seed, uint64_t i);

constexpr uint64_t kMaxBins = 256;
constexpr uint64_t kStatsWords = 8 + kMaxBins;  // the "stats" item: 2112 bytes

// Statistics of a dataset, as the "stats" item holds them (word: field): 0 magic "WFSTATS1",
// 1 count, 2 sum, 3 min, 4 max, 5 mean (doubles stored as their bits), 6 bins, 7 the PEs that
// computed them, 8 + b the count of histogram bin b. Bin b holds the values in
// [min + b*w, min + (b+1)*w) with w = (max - min) / bins; the last bin includes max.
struct Stats {
    uint64_t count = 0;
    double sum = 0, min = 0, max = 0, mean = 0;
    uint64_t bins = 0, pes = 0;
    std::vector<uint64_t> histogram;
};

// Values [first, first + count) of a dataset into `out`; `pass` is 1 or 2 (the computation
// reads the data twice: first for count, sum and extremes, then for the histogram).
using Source = std::function<void(uint64_t first, uint64_t count, double *out, int pass)>;

// Values a Source delivers at a time.
constexpr uint64_t kChunkValues = 128 * 1024;

// The statistics of `values` values, computed by all PEs (each its block, read through
// `source`) and collected in `item` (kStatsWords words, which it overwrites). Returns the
// result on every PE. Collective: every PE calls it.
Stats Compute(openfam::fam &f, const apps::Pe &pe, openfam::Fam_Descriptor *item, uint64_t values,
              uint64_t bins, const Source &source);

// Reads the statistics another job stored in `item`; false when it holds none.
bool Load(openfam::fam &f, openfam::Fam_Descriptor *item, Stats *out);

// "" when `a` and `b` agree (count, extremes, bins and histogram exactly; sum and mean to a
// relative 1e-9, since the PEs' partial sums meet in any order), else what differs.
std::string Differences(const Stats &a, const Stats &b);

// "count=... sum=... min=... max=... mean=... bins=..." for RESULT and CHECK lines.
std::string Describe(const Stats &s);

}  // namespace workflow

#endif  // FAMPOOL_APPS_WORKFLOW_STATS_H_
