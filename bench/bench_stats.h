// Timing helpers the benchmarks share: seconds since a time point, and the median of samples.
// Header-only, with the standard library alone.
#ifndef FAMPOOL_BENCH_BENCH_STATS_H_
#define FAMPOOL_BENCH_BENCH_STATS_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace bench_stats {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
}

// The middle sample (the mean of the two middle ones for an even count); 0 for none.
inline double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    size_t n = values.size();
    if (n == 0) return 0;
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace bench_stats

#endif  // FAMPOOL_BENCH_BENCH_STATS_H_
