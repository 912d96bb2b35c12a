// metrics_bench: what serving metrics costs (issue 33's benchmark). Two clusters started alike
// but for `fampool up --metrics` (off: no endpoint, nothing counted; on: every server counts
// and times its calls and serves /metrics, and this client counts its data path and reports
// it to metadata shard 0 every second), measured in the same run, alternating which goes
// first round by round. Per round and cluster, one fam session measures for S seconds each:
//
//   put 256 B, get 256 B   fam_put_blocking / fam_get_blocking of 256 B walking a 16 MiB item
//   put 64 KiB             the same of 64 KiB (bytes per second)
//   fetch_add              fam_fetch_add of a uint64
//   lookup (fabric)        fam_lookup of a named item over the metadata service's fabric
//                          endpoint (the default path)
//   lookup (gRPC)          the same over gRPC (metadata_fabric off in this client)
//   allocate+deallocate    fam_allocate and fam_deallocate of 4 KiB (pairs per second)
//
//   metrics_bench --off FILE --on FILE [--seconds 1] [--rounds 5] [--csv PATH]
//
// Each figure is the median over the rounds, with the rounds' lowest and highest; the ratio
// column is on / off of those medians (1.00: no cost; the target is at least 0.98), and the
// paired column the median of the rounds' own on / off (each round's two sessions ran one
// after the other, so the machine's drift between rounds falls out of it).
#include <fam/fam.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_stats.h"

using namespace openfam;
using bench_stats::Clock;
using bench_stats::Median;
using bench_stats::Seconds;

namespace {

constexpr uint64_t kItemBytes = 16 << 20;

struct Figure {
    const char *name;
    const char *unit;
};
const std::vector<Figure> kFigures = {{"put 256 B", "ops/s"},
                                      {"get 256 B", "ops/s"},
                                      {"put 64 KiB", "B/s"},
                                      {"fetch_add", "ops/s"},
                                      {"lookup (fabric)", "calls/s"},
                                      {"lookup (gRPC)", "calls/s"},
                                      {"allocate+deallocate", "pairs/s"}};

// Runs `step` (which does `batch` operations) for `seconds`; operations per second.
double RateOf(double seconds, int batch, const std::function<void()> &step) {
    for (int i = 0; i < 8; ++i) step();  // warm up
    uint64_t count = 0;
    auto start = Clock::now();
    while (Seconds(start) < seconds) {
        step();
        count += batch;
    }
    return count / Seconds(start);
}

// One session on the cluster `config`: every figure, in kFigures' order.
std::vector<double> MeasureCluster(const std::string &config, double seconds, bool over_fabric) {
    setenv("FAMPOOL_CONFIG", config.c_str(), 1);
    setenv("FAMPOOL_METADATA_FABRIC", over_fabric ? "1" : "0", 1);
    std::vector<double> rates;
    fam f;
    f.fam_initialize("default", nullptr);
    std::string name = "metrics_bench_" + std::to_string(getpid());
    Fam_Region_Descriptor *region = f.fam_create_region(name.c_str(), 64 << 20, 0700, nullptr);
    Fam_Descriptor *item = f.fam_allocate("data", kItemBytes, 0600, region);
    std::vector<char> buffer(64 << 10, 'x');
    uint64_t offset = 0;
    auto walk = [&](uint64_t size) {
        offset = offset + size + size > kItemBytes ? 0 : offset + size;
        return offset;
    };
    if (over_fabric) {
        rates.push_back(RateOf(seconds, 64, [&] {
            for (int i = 0; i < 64; ++i) f.fam_put_blocking(buffer.data(), item, walk(256), 256);
        }));
        rates.push_back(RateOf(seconds, 64, [&] {
            for (int i = 0; i < 64; ++i) f.fam_get_blocking(buffer.data(), item, walk(256), 256);
        }));
        rates.push_back(65536 * RateOf(seconds, 8, [&] {
                            for (int i = 0; i < 8; ++i) {
                                f.fam_put_blocking(buffer.data(), item, walk(65536), 65536);
                            }
                        }));
        rates.push_back(RateOf(seconds, 64, [&] {
            for (int i = 0; i < 64; ++i) f.fam_fetch_add(item, 0, uint64_t{1});
        }));
    }
    rates.push_back(RateOf(seconds, 32, [&] {
        for (int i = 0; i < 32; ++i) delete f.fam_lookup("data", name.c_str());
    }));
    if (over_fabric) {
        rates.push_back(RateOf(seconds, 16, [&] {
            for (int i = 0; i < 16; ++i) {
                Fam_Descriptor *scratch = f.fam_allocate(4096, 0600, region);
                f.fam_deallocate(scratch);
                delete scratch;
            }
        }));
    }
    f.fam_deallocate(item);
    delete item;
    f.fam_destroy_region(region);
    delete region;
    f.fam_finalize("default");
    return rates;
}

// Every figure of one cluster: the fabric session's, with the gRPC lookup put in its place.
std::vector<double> Measure(const std::string &config, double seconds) {
    std::vector<double> rates = MeasureCluster(config, seconds, true);
    std::vector<double> grpc = MeasureCluster(config, seconds, false);
    rates.insert(rates.begin() + 5, grpc[0]);
    return rates;
}

[[noreturn]] void Usage(const char *why) {
    std::fprintf(stderr,
                 "metrics_bench: %s\nusage: metrics_bench --off FILE --on FILE [--seconds S] "
                 "[--rounds N] [--csv PATH]\n",
                 why);
    std::exit(2);
}

}  // namespace

int main(int argc, char **argv) {
    std::string off, on, csv;
    double seconds = 1;
    int rounds = 5;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (i + 1 >= argc) Usage(("missing the value of " + arg).c_str());
        std::string value = argv[++i];
        if (arg == "--off")
            off = value;
        else if (arg == "--on")
            on = value;
        else if (arg == "--csv")
            csv = value;
        else if (arg == "--seconds")
            seconds = std::atof(value.c_str());
        else if (arg == "--rounds")
            rounds = std::atoi(value.c_str());
        else
            Usage(("unknown option " + arg).c_str());
    }
    if (off.empty() || on.empty()) Usage("--off and --on are required");
    if (seconds <= 0 || rounds < 1) Usage("--seconds and --rounds must be positive");
    std::map<std::string, std::vector<std::vector<double>>> samples;  // "off"/"on" -> rounds
    for (int round = 0; round < rounds; ++round) {
        // Alternating which goes first: a drift of the machine falls on both.
        const char *order[2] = {"off", "on"};
        if (round % 2) std::swap(order[0], order[1]);
        for (const char *which : order) {
            samples[which].push_back(Measure(which == std::string("off") ? off : on, seconds));
        }
        std::fprintf(stderr, "metrics_bench: round %d of %d done\n", round + 1, rounds);
    }
    std::ofstream out;
    if (!csv.empty()) {
        out.open(csv);
        out << "figure,unit,off,on,ratio,paired,off_min,off_max,on_min,on_max,rounds\n";
    }
    std::printf("%-22s %-8s %14s %14s %7s %7s   %s\n", "FIGURE", "UNIT", "OFF", "ON", "ON/OFF",
                "PAIRED", "RANGE OFF | ON (rounds)");
    for (size_t k = 0; k < kFigures.size(); ++k) {
        std::vector<double> of[2];
        for (int side = 0; side < 2; ++side) {
            for (const auto &round : samples[side ? "on" : "off"]) of[side].push_back(round[k]);
        }
        double a = Median(of[0]), b = Median(of[1]);
        std::vector<double> per_round;
        for (size_t r = 0; r < of[0].size(); ++r) per_round.push_back(of[1][r] / of[0][r]);
        double paired = Median(per_round);
        auto [a_min, a_max] = std::minmax_element(of[0].begin(), of[0].end());
        auto [b_min, b_max] = std::minmax_element(of[1].begin(), of[1].end());
        std::printf("%-22s %-8s %14.0f %14.0f %7.3f %7.3f   %.0f-%.0f | %.0f-%.0f\n",
                    kFigures[k].name, kFigures[k].unit, a, b, b / a, paired, *a_min, *a_max, *b_min,
                    *b_max);
        if (out) {
            out << kFigures[k].name << ',' << kFigures[k].unit << ',' << a << ',' << b << ','
                << b / a << ',' << paired << ',' << *a_min << ',' << *a_max << ',' << *b_min << ','
                << *b_max << ',' << rounds << '\n';
        }
    }
    std::printf(
        "ON/OFF = the median rate with metrics on over the median with them off; PAIRED = the "
        "median of each round's on / off (1.00: no cost)\n");
    return 0;
}
