// transfer_bench same-node: what reaching a same-node memory server's heap through the descriptor
// it hands out (fabric_direct: true, memserver/heap_socket.h) costs against opening the heap file
// by name (fabric_direct: path, what every client did before heap files became private), on
// one cluster over shm (FAMPOOL_CONFIG), in one process: two fam objects, one per path,
// measured alternately round by round.
//
//   transfer_bench same-node [--rounds 21] [--seconds 0.2] [--csv PATH]
//
// Columns: descriptor and path, the median over the rounds; ratio, the median over the rounds
// of descriptor / path within the round (the two sides run back to back, so a slow spell of the
// machine that spans a round cancels out); ratio_q1 and ratio_q3, the quartiles of those
// per-round ratios (the middle half of the rounds lies between them). Rows:
//   get256_per_s, put256_per_s   256 B blocking get / put on a mapped item, calls per second
//   map_us                       fam_map + fam_unmap of the item: one descriptor request over
//                                the socket (or one open) and one mmap, microseconds
//   attach_us                    fam_lookup + the first 8-byte get of the fresh descriptor:
//                                the metadata call, the keys and the mapping, microseconds
// Run it as the cluster user (path needs to open the files).
#include <fam/fam.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_stats.h"

using namespace openfam;
using bench_stats::Clock;
using bench_stats::Median;
using bench_stats::Seconds;

namespace {

// One fam object on one path, with its region and item.
struct Side {
    std::string name;
    std::unique_ptr<fam> f = std::make_unique<fam>();
    Fam_Region_Descriptor *region = nullptr;
    Fam_Descriptor *item = nullptr;
    std::string region_name;
};

void Open(Side &side, const char *direct) {
    setenv("FAMPOOL_FABRIC_DIRECT", direct, 1);  // read at fam_initialize
    side.f->fam_initialize("same_node_bench", nullptr);
    side.region_name = "same_node_bench_" + side.name + "_" + std::to_string(getpid());
    side.region = side.f->fam_create_region(side.region_name.c_str(), 16 << 20, 0700, nullptr);
    side.item = side.f->fam_allocate("item", 64 << 10, 0600, side.region);
}

void Close(Side &side) {
    side.f->fam_deallocate(side.item);
    delete side.item;
    side.f->fam_destroy_region(side.region);
    delete side.region;
    side.f->fam_finalize("same_node_bench");
}

// Calls of `body` per second for about `seconds`, in batches of 256.
template <typename Body>
double PerSecond(double seconds, Body &&body) {
    uint64_t calls = 0;
    auto start = Clock::now();
    while (Seconds(start) < seconds) {
        for (int i = 0; i < 256; ++i) body();
        calls += 256;
    }
    return calls / Seconds(start);
}

// Microseconds per call of `body`, `calls` times.
template <typename Body>
double MicrosEach(int calls, Body &&body) {
    auto start = Clock::now();
    for (int i = 0; i < calls; ++i) body();
    return Seconds(start) * 1e6 / calls;
}

std::map<std::string, double> Round(Side &side, double seconds) {
    std::map<std::string, double> row;
    char buffer[256] = {};
    fam &f = *side.f;
    row["get256_per_s"] =
        PerSecond(seconds, [&] { f.fam_get_blocking(buffer, side.item, 0, 256); });
    row["put256_per_s"] =
        PerSecond(seconds, [&] { f.fam_put_blocking(buffer, side.item, 256, 256); });
    row["map_us"] = MicrosEach(200, [&] { f.fam_unmap(f.fam_map(side.item), side.item); });
    row["attach_us"] = MicrosEach(200, [&] {
        Fam_Descriptor *fresh = f.fam_lookup("item", side.region_name.c_str());
        uint64_t value;
        f.fam_get_blocking(&value, fresh, 0, sizeof value);
        delete fresh;
    });
    return row;
}

}  // namespace

int SameNodeMain(int argc, char **argv) {
    int rounds = 21;
    double seconds = 0.2;
    std::string csv = "same_node_bench.csv";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string arg = argv[i];
        if (arg == "--rounds")
            rounds = std::atoi(argv[i + 1]);
        else if (arg == "--seconds")
            seconds = std::atof(argv[i + 1]);
        else if (arg == "--csv")
            csv = argv[i + 1];
        else {
            std::fprintf(stderr,
                         "usage: same_node_bench [--rounds N] [--seconds S] [--csv PATH]\n");
            return 1;
        }
    }
    if (rounds < 1 || seconds <= 0) {
        std::fprintf(stderr,
                     "transfer_bench same-node: --rounds needs 1 or more, --seconds more than 0\n");
        return 1;
    }
    Side sides[2];
    sides[0].name = "descriptor";
    sides[1].name = "path";
    try {
        Open(sides[0], "true");
        Open(sides[1], "path");
        std::map<std::string, std::vector<double>> samples[2], ratios;
        for (int round = 0; round < rounds; ++round) {
            std::map<std::string, double> row[2];
            for (int k = 0; k < 2; ++k) {
                int which = (k + round) % 2;  // neither always goes first
                row[which] = Round(sides[which], seconds);
            }
            for (const auto &[metric, value] : row[0]) {
                samples[0][metric].push_back(value);
                samples[1][metric].push_back(row[1][metric]);
                ratios[metric].push_back(value / row[1][metric]);
            }
        }
        std::ofstream out(csv);
        out << "metric,descriptor,path,ratio,ratio_q1,ratio_q3\n";
        std::printf("%-14s %14s %14s  %9s %9s %9s\n", "metric", "descriptor", "path", "ratio",
                    "ratio_q1", "ratio_q3");
        for (const auto &[metric, values] : samples[0]) {
            double a = Median(values), b = Median(samples[1][metric]);
            std::vector<double> r = ratios[metric];
            std::sort(r.begin(), r.end());
            double q1 = r[r.size() / 4], q3 = r[(3 * r.size()) / 4];
            double ratio = Median(r);
            std::printf("%-14s %14.1f %14.1f  %9.3f %9.3f %9.3f\n", metric.c_str(), a, b, ratio, q1,
                        q3);
            out << metric << "," << a << "," << b << "," << ratio << "," << q1 << "," << q3 << "\n";
        }
        Close(sides[0]);
        Close(sides[1]);
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "transfer_bench same-node: %s\n", e.fam_error_msg());
        return 1;
    }
}
