#include "workflow/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

using namespace openfam;

namespace workflow {
namespace {

// "WFSTATS1" read as a little-endian word.
constexpr uint64_t kStatsMagic = 0x3153544154534657ull;

enum Word : uint64_t { kMagic = 0, kCount, kSum, kMin, kMax, kMean, kBins, kPes, kHistogram };

uint64_t Bits(double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    return bits;
}

double FromBits(uint64_t bits) {
    double value;
    std::memcpy(&value, &bits, 8);
    return value;
}

uint64_t BinOf(double value, double min, double max, uint64_t bins) {
    if (!(max > min)) return 0;
    double place = (value - min) / (max - min) * static_cast<double>(bins);
    if (!(place >= 0)) return 0;
    return std::min(bins - 1, static_cast<uint64_t>(place));
}

bool Close(double a, double b) {
    return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::max(std::fabs(a), std::fabs(b)));
}

}  // namespace

double Reading(uint64_t seed, uint64_t i) {
    uint64_t r = apps::Mix64(apps::Mix64(seed) + i);
    uint64_t phase = i % 86400;
    double cycle = (phase < 43200 ? phase : 86400 - phase) / 43200.0;  // 0 .. 1 .. 0
    double noise =
        static_cast<double>((r & 0xffff) + (r >> 16 & 0xffff) + (r >> 32 & 0xffff) + (r >> 48)) /
            65535.0 -
        2.0;  // -2 .. 2
    return 12.0 + 16.0 * cycle + 1.5 * noise;
}

Stats Compute(fam &f, const apps::Pe &pe, Fam_Descriptor *item, uint64_t values, uint64_t bins,
              const Source &source) {
    if (pe.first()) {
        std::vector<uint64_t> words(kStatsWords, 0);
        words[kMagic] = kStatsMagic;
        words[kMin] = Bits(std::numeric_limits<double>::infinity());
        words[kMax] = Bits(-std::numeric_limits<double>::infinity());
        words[kBins] = bins;
        f.fam_put_blocking(words.data(), item, 0, kStatsWords * 8);
    }
    f.fam_barrier_all();

    // Pass 1: count, sum (compensated, so that the partial sums carry no more error than the
    // meeting of the PEs' sums adds), min and max; they meet through FAM atomics.
    uint64_t begin = pe.BlockBegin(values), end = pe.BlockEnd(values);
    std::vector<double> chunk(kChunkValues);
    double sum = 0, carry = 0;
    double min = std::numeric_limits<double>::infinity(), max = -min;
    for (uint64_t first = begin; first < end; first += kChunkValues) {
        uint64_t n = std::min(kChunkValues, end - first);
        source(first, n, chunk.data(), 1);
        for (uint64_t k = 0; k < n; ++k) {
            double v = chunk[k], y = v - carry, t = sum + y;
            carry = (t - sum) - y;
            sum = t;
            min = std::min(min, v);
            max = std::max(max, v);
        }
    }
    if (end > begin) {
        f.fam_add(item, kCount * 8, end - begin);
        f.fam_add(item, kSum * 8, sum);
        f.fam_min(item, kMin * 8, min);
        f.fam_max(item, kMax * 8, max);
    }
    f.fam_quiet();
    f.fam_barrier_all();

    // Pass 2: the histogram over the global range; the bins meet by memory-side aggregation.
    double range[2];
    f.fam_get_blocking(range, item, kMin * 8, 16);
    std::vector<uint64_t> local(bins, 0);
    for (uint64_t first = begin; first < end; first += kChunkValues) {
        uint64_t n = std::min(kChunkValues, end - first);
        source(first, n, chunk.data(), 2);
        for (uint64_t k = 0; k < n; ++k) ++local[BinOf(chunk[k], range[0], range[1], bins)];
    }
    std::vector<uint64_t> index, counts;
    for (uint64_t b = 0; b < bins; ++b) {
        if (local[b] == 0) continue;
        index.push_back(kHistogram + b);
        counts.push_back(local[b]);
    }
    f.fam_queue_operation(OP_ADD_INDEXED, counts.data(), item, index.size(), index.data(), 8);
    f.fam_aggregate_flush(item);
    f.fam_barrier_all();

    if (pe.first()) {
        uint64_t words[2];
        f.fam_get_blocking(words, item, kCount * 8, 16);
        uint64_t tail[3] = {Bits(words[0] ? FromBits(words[1]) / words[0] : 0.0), bins, pe.count};
        f.fam_put_blocking(tail, item, kMean * 8, sizeof tail);
    }
    f.fam_barrier_all();
    Stats result;
    Load(f, item, &result);
    return result;
}

bool Load(fam &f, Fam_Descriptor *item, Stats *out) {
    std::vector<uint64_t> words(kStatsWords);
    f.fam_get_blocking(words.data(), item, 0, kStatsWords * 8);
    if (words[kMagic] != kStatsMagic || words[kBins] == 0 || words[kBins] > kMaxBins) {
        return false;
    }
    out->count = words[kCount];
    out->sum = FromBits(words[kSum]);
    out->min = FromBits(words[kMin]);
    out->max = FromBits(words[kMax]);
    out->mean = FromBits(words[kMean]);
    out->bins = words[kBins];
    out->pes = words[kPes];
    out->histogram.assign(words.begin() + kHistogram, words.begin() + kHistogram + out->bins);
    return true;
}

std::string Differences(const Stats &a, const Stats &b) {
    std::string diff;
    auto note = [&diff](const char *field) {
        diff += diff.empty() ? std::string(field) : std::string(",") + field;
    };
    if (a.count != b.count) note("count");
    if (!Close(a.sum, b.sum)) note("sum");
    if (a.min != b.min) note("min");
    if (a.max != b.max) note("max");
    if (!Close(a.mean, b.mean)) note("mean");
    if (a.bins != b.bins) note("bins");
    if (a.histogram != b.histogram) note("histogram");
    return diff;
}

std::string Describe(const Stats &s) {
    char text[256];
    std::snprintf(text, sizeof text, "count=%lu sum=%.6f min=%.6f max=%.6f mean=%.6f bins=%lu",
                  static_cast<unsigned long>(s.count), s.sum, s.min, s.max, s.mean,
                  static_cast<unsigned long>(s.bins));
    return text;
}

}  // namespace workflow
