#include "microbench_report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace microbench {

std::string size_label(uint64_t bytes) {
    constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
    if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
    if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
    return std::to_string(bytes) + " B";
}

const Row &find_row(const std::vector<Row> &rows, const std::string &metric, uint64_t size) {
    for (const Row &r : rows)
        if (r.metric == metric && r.size == size) return r;
    throw std::logic_error("no measurement " + metric + " " + std::to_string(size));
}

// Enough digits to tell values apart at any magnitude: 1234.5, 12.35, 0.0123.
std::string readable(double v) {
    char buf[64];
    double mag = std::fabs(v);
    int digits = mag >= 100 ? 1 : mag >= 1 ? 2 : mag >= 0.01 ? 4 : 6;
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

// Six significant digits, for the CSV.
std::string csv_number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void print_table(const std::vector<Row> &rows) {
    std::printf("%-34s %8s %11s %-6s %11s %7s  %s\n", "metric", "size", "value", "unit", "baseline",
                "ratio", "note");
    for (const Row &r : rows) {
        std::string base = std::isnan(r.baseline) ? "-" : readable(r.baseline);
        std::string ratio = std::isnan(r.ratio()) ? "-" : fixed(r.ratio(), 3);
        std::printf("%-34s %8s %11s %-6s %11s %7s  %s\n", r.metric.c_str(),
                    size_label(r.size).c_str(), readable(r.value).c_str(), r.unit.c_str(),
                    base.c_str(), ratio.c_str(), r.note.c_str());
    }
}

void write_csv(const std::vector<Row> &rows, const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    std::fprintf(f, "metric,size_bytes,value,unit,baseline_value,ratio\n");
    for (const Row &r : rows) {
        std::string base = std::isnan(r.baseline) ? "" : csv_number(r.baseline);
        std::string ratio = std::isnan(r.ratio()) ? "" : csv_number(r.ratio());
        std::fprintf(f, "%s,%llu,%s,%s,%s,%s\n", r.metric.c_str(),
                     static_cast<unsigned long long>(r.size), csv_number(r.value).c_str(),
                     r.unit.c_str(), base.c_str(), ratio.c_str());
    }
    if (std::fclose(f) != 0) throw std::runtime_error("cannot write " + path);
}

}  // namespace microbench
