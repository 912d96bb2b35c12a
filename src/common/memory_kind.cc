#include "common/memory_kind.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "common/error.h"

namespace fampool {
namespace {

// The number before a unit: digits with at most one decimal point.
bool SplitNumber(const std::string &text, double *number, std::string *unit) {
    size_t end = 0;
    bool point = false;
    while (end < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[end])) || (text[end] == '.' && !point))) {
        point = point || text[end] == '.';
        ++end;
    }
    if (end == 0 || end > 12) return false;
    *number = std::stod(text.substr(0, end));
    *unit = text.substr(end);
    return true;
}

// The number times its unit's scale; 0 when the text is not a number and a unit of `units`.
double Scaled(const std::string &text, const std::map<std::string, double> &units) {
    double number = 0;
    std::string unit;
    if (!SplitNumber(text, &number, &unit)) return 0;
    auto scale = units.find(unit);
    return scale == units.end() ? 0 : number * scale->second;
}

}  // namespace

bool IsMemoryKind(const std::string &kind) {
    return kind == "dram" || kind == "persistent" || kind == "far";
}

const char *MemoryKindList() { return "dram, persistent, far"; }

std::string DefaultMemoryKind(const std::string &memory_type) {
    return memory_type == "persistent" ? "persistent" : "dram";
}

uint64_t ParseBandwidth(const std::string &what, const std::string &text) {
    static const std::map<std::string, double> kUnits = {
        {"bit", 1.0 / 8}, {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8},
        {"B/s", 1},       {"KB/s", 1e3},     {"MB/s", 1e6},     {"GB/s", 1e9}};
    double bytes = Scaled(text, kUnits);
    if (bytes < 1 || bytes > 1e13) {
        Fail(openfam::FAM_ERR_INVALID,
             "{}: \"{}\" is not a bandwidth (a number with bit, kbit, mbit or gbit per second, "
             "or B/s, KB/s, MB/s, GB/s; e.g. 200mbit or 12.5GB/s)",
             what, text);
    }
    return static_cast<uint64_t>(bytes);
}

uint64_t ParseLatency(const std::string &what, const std::string &text) {
    static const std::map<std::string, double> kUnits = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}};
    double nanoseconds = Scaled(text, kUnits);
    if (nanoseconds < 1 || nanoseconds > 1e10) {
        Fail(openfam::FAM_ERR_INVALID,
             "{}: \"{}\" is not a latency (a number with ns, us or ms, from 1ns to 10000ms; "
             "e.g. 120ns or 2us)",
             what, text);
    }
    return static_cast<uint64_t>(nanoseconds);
}

std::string BandwidthText(uint64_t bytes_per_second) {
    if (bytes_per_second == 0) return "-";
    double value = static_cast<double>(bytes_per_second);
    if (value >= 1e9) return fmt::format("{:.2f} GB/s", value / 1e9);
    if (value >= 1e6) return fmt::format("{:.1f} MB/s", value / 1e6);
    return fmt::format("{:.1f} KB/s", value / 1e3);
}

std::string LatencyText(uint64_t nanoseconds) {
    if (nanoseconds == 0) return "-";
    if (nanoseconds >= 1000000) return fmt::format("{:.2f} ms", nanoseconds / 1e6);
    if (nanoseconds >= 1000) return fmt::format("{:.1f} us", nanoseconds / 1e3);
    return fmt::format("{} ns", nanoseconds);
}

MemorySpeed MeasureMemory(const std::string &dir, uint64_t bytes) {
    // mkstemp's template: it replaces the six X with a unique name.
    std::string path = dir + "/.fampool-measure-XXXXXX";
    std::vector<char> name(path.begin(), path.end());
    name.push_back('\0');
    int fd = mkstemp(name.data());
    if (fd < 0) {
        Fail(openfam::FAM_ERR_MEMORY, "measuring memory in {}: cannot make a file there: {}", dir,
             std::strerror(errno));
    }
    unlink(name.data());
    void *map = MAP_FAILED;
    if (ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
        map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    int error = errno;
    close(fd);
    if (map == MAP_FAILED) {
        Fail(openfam::FAM_ERR_MEMORY, "measuring memory in {}: cannot map {} bytes there: {}", dir,
             bytes, std::strerror(error));
    }
    auto *heap = static_cast<char *>(map);
    std::vector<char> source(bytes, 1);
    using Clock = std::chrono::steady_clock;
    // The first pass faults the pages in; the second is the copy rate.
    std::memcpy(heap, source.data(), bytes);
    auto start = Clock::now();
    std::memcpy(heap, source.data(), bytes);
    double copy_s = std::chrono::duration<double>(Clock::now() - start).count();
    // Dependent loads along a random cycle of cache lines.
    constexpr uint64_t kLine = 64;
    uint64_t lines = bytes / kLine;
    std::vector<uint64_t> order(lines);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
    for (uint64_t i = 0; i < lines; ++i) {
        uint64_t next = order[(i + 1) % lines] * kLine;
        std::memcpy(heap + order[i] * kLine, &next, sizeof next);
    }
    constexpr uint64_t kLoads = 200000;
    uint64_t at = order[0] * kLine;
    start = Clock::now();
    // Volatile loads: the compiler keeps every one, each waiting for the one before.
    for (uint64_t i = 0; i < kLoads; ++i) at = *reinterpret_cast<volatile uint64_t *>(heap + at);
    double load_s = std::chrono::duration<double>(Clock::now() - start).count();
    munmap(map, bytes);
    MemorySpeed speed;
    speed.bandwidth = static_cast<uint64_t>(static_cast<double>(bytes) / std::max(copy_s, 1e-9));
    speed.latency_ns = std::max<uint64_t>(1, static_cast<uint64_t>(load_s * 1e9 / kLoads));
    return speed;
}

}  // namespace fampool
