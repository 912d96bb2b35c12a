// transfer_bench striped: get/put of an item striped over every memory server of a cluster (an
// interleaved region) next to the same transfers of an item on one server (a region without
// interleaving), on the same cluster in the same run: the baseline is what one server gives.
// Both items are written once before anything is timed (a heap's first touch costs page
// faults, not fabric work).
//
//   transfer_bench striped [--sizes 65536,1048576,4194304] [--total-mib 64] [--trials 5] [--csv
//   PATH]
//
// Runs against the cluster FAMPOOL_CONFIG names (`fampool up --memservers 3 --interleave I`).
// Prints, per size: GB/s for blocking get and put and non-blocking put (quiet at the end) of
// each item, and striped / one server. Writes PATH (default striped_bench.csv) with
// op,size_bytes,striped_gbps,plain_gbps,ratio,interleave_bytes,servers.
#include <fam/fam.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fam_sweep.h"

using namespace openfam;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::vector<uint64_t> sizes = {64 << 10, 1 << 20, 4 << 20};
    uint64_t total = 64 << 20;  // bytes moved per measurement
    int trials = 5;
    std::string csv = "striped_bench.csv";
};

using fam_sweep::Sweep;
using fam_sweep::Transfer;

double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

bool Parse(int argc, char **argv, Options *options) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (i + 1 >= argc) return false;
        std::string value = argv[++i];
        if (arg == "--sizes") {
            options->sizes.clear();
            std::stringstream list(value);
            for (std::string size; std::getline(list, size, ',');) {
                options->sizes.push_back(std::stoull(size));
            }
        } else if (arg == "--total-mib") {
            options->total = std::stoull(value) << 20;
        } else if (arg == "--trials") {
            options->trials = std::max(1, std::stoi(value));
        } else if (arg == "--csv") {
            options->csv = value;
        } else {
            return false;
        }
    }
    return !options->sizes.empty() && options->total > 0;
}

}  // namespace

int StripedMain(int argc, char **argv) {
    Options options;
    if (!Parse(argc, argv, &options)) {
        std::fprintf(stderr,
                     "usage: %s [--sizes a,b,c] [--total-mib M] [--trials N] [--csv PATH]\n",
                     argv[0]);
        return 2;
    }
    try {
        fam f;
        f.fam_initialize("default", nullptr);
        Fam_Region_Attributes striped_attributes{}, plain_attributes{};
        striped_attributes.interleaveEnable = ENABLE;
        plain_attributes.interleaveEnable = DISABLE;
        // A region without interleaving is split evenly over its servers and an item lives on
        // one of them: room for the item on each of up to 16 servers.
        uint64_t region_size = options.total + (64 << 20);
        auto *striped_region =
            f.fam_create_region("striped_bench_striped", region_size, 0700, &striped_attributes);
        auto *plain_region =
            f.fam_create_region("striped_bench_plain", 16 * region_size, 0700, &plain_attributes);
        Fam_Descriptor *striped = f.fam_allocate("x", options.total, 0600, striped_region);
        Fam_Descriptor *plain = f.fam_allocate("x", options.total, 0600, plain_region);
        Fam_Stat stat{};
        f.fam_stat(striped, &stat);
        std::vector<char> buffer(options.total, 7);
        Sweep(f, striped, buffer.data(), 1 << 20, options.total, Transfer::kPut);  // first touch
        Sweep(f, plain, buffer.data(), 1 << 20, options.total, Transfer::kPut);

        std::printf(
            "striped over %llu memory servers, interleave %llu B, against one server; "
            "medians of %d trials of %llu MiB\n",
            static_cast<unsigned long long>(stat.num_memservers),
            static_cast<unsigned long long>(stat.interleaveSize), options.trials,
            static_cast<unsigned long long>(options.total >> 20));
        std::printf("%-16s %10s %14s %14s %8s\n", "op", "size", "striped GB/s", "1 server GB/s",
                    "ratio");
        std::ofstream csv(options.csv);
        csv << "op,size_bytes,striped_gbps,plain_gbps,ratio,interleave_bytes,servers\n";
        for (Transfer op : {Transfer::kGet, Transfer::kPut, Transfer::kPutNonBlocking}) {
            for (uint64_t size : options.sizes) {
                std::vector<double> on_striped, on_plain;
                for (int trial = 0; trial < options.trials; ++trial) {  // alternated
                    on_striped.push_back(Sweep(f, striped, buffer.data(), size, options.total, op));
                    on_plain.push_back(Sweep(f, plain, buffer.data(), size, options.total, op));
                }
                double s = Median(on_striped), p = Median(on_plain);
                std::printf("%-16s %10llu %14.2f %14.2f %8.2f\n", fam_sweep::Name(op),
                            static_cast<unsigned long long>(size), s, p, s / p);
                csv << fam_sweep::Name(op) << "," << size << "," << s << "," << p << "," << s / p
                    << "," << stat.interleaveSize << "," << stat.num_memservers << "\n";
            }
        }
        f.fam_deallocate(striped);
        f.fam_deallocate(plain);
        f.fam_destroy_region(striped_region);
        f.fam_destroy_region(plain_region);
        delete striped;
        delete plain;
        delete striped_region;
        delete plain_region;
        f.fam_finalize("default");
        std::printf("CSV written to %s\n", options.csv.c_str());
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "transfer_bench striped: %s\n", e.fam_error_msg());
        return 1;
    }
    return 0;
}
