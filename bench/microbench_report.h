// The results of bench/fam_microbench: one measured figure a row, printed as a table and
// written as CSV (metric,size_bytes,value,unit,baseline_value,ratio), and the number formats
// both use.
#ifndef FAMPOOL_BENCH_MICROBENCH_REPORT_H_
#define FAMPOOL_BENCH_MICROBENCH_REPORT_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace microbench {

// One measured figure: a row of the table and of the CSV.
struct Row {
    std::string metric;
    uint64_t size = 0;
    double value = 0;
    std::string unit;
    double baseline = NAN;  // NAN: no baseline
    std::string note;       // printed only (cache state, baseline name)

    double ratio() const { return std::isnan(baseline) ? NAN : value / baseline; }
};

// "256 B", "4 KiB", "64 MiB".
std::string size_label(uint64_t bytes);

// The row of `metric` at `size`; throws std::logic_error when there is none.
const Row &find_row(const std::vector<Row> &rows, const std::string &metric, uint64_t size);

// Enough digits to tell values apart at any magnitude: 1234.5, 12.35, 0.0123.
std::string readable(double v);

// Six significant digits, for the CSV.
std::string csv_number(double v);

// `digits` decimals.
std::string fixed(double v, int digits);

// The table on stdout; the CSV at `path` (throws std::runtime_error when it cannot write).
void print_table(const std::vector<Row> &rows);
void write_csv(const std::vector<Row> &rows, const std::string &path);

}  // namespace microbench

#endif  // FAMPOOL_BENCH_MICROBENCH_REPORT_H_
