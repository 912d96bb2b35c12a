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
// each item, and striped / one server. Then small operations: the median latency of 256 B
// blocking gets and puts and 8 B fetch_adds, each call at the next interleave block (so a
// striped item's calls go to each server in turn, the one-server item's to the same offsets),
// and striped / one server (there above 1 means the striped item is slower). Writes PATH
// (default striped_bench.csv) with op,size_bytes,striped,one_server,ratio,interleave_bytes,
// servers,provider: GB/s for get, put and put_nonblocking, microseconds for the *_latency_us
// rows.
#include <fam/fam.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

enum class Small { kGet, kPut, kFetchAdd };

// Appends to `micros` the microseconds of each of `blocks` blocking calls of kind `op`, call i
// at the start of block i plus 64 bytes (no call straddles two blocks).
void SmallCalls(fam &f, Fam_Descriptor *item, Small op, uint64_t block, uint64_t blocks,
                std::vector<double> *micros) {
    char bytes[256] = {};
    for (uint64_t i = 0; i < blocks; ++i) {
        uint64_t offset = i * block + 64;
        auto start = Clock::now();
        switch (op) {
            case Small::kGet:
                f.fam_get_blocking(bytes, item, offset, sizeof bytes);
                break;
            case Small::kPut:
                f.fam_put_blocking(bytes, item, offset, sizeof bytes);
                break;
            case Small::kFetchAdd:
                f.fam_fetch_add(item, offset, uint64_t{1});
                break;
        }
        micros->push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
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
        // OpenFAM's option, a copy the caller frees.
        const void *provider_option = f.fam_get_option("LIBFABRIC_PROVIDER");
        const std::string provider = static_cast<const char *>(provider_option);
        std::free(const_cast<void *>(provider_option));
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
        csv << "op,size_bytes,striped,one_server,ratio,interleave_bytes,servers,provider\n";
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
                    << "," << stat.interleaveSize << "," << stat.num_memservers << "," << provider
                    << "\n";
            }
        }
        // Small operations, each at the next interleave block (64 blocks: every server's turn).
        const uint64_t block = std::max<uint64_t>(stat.interleaveSize, 4096);
        const uint64_t blocks =
            std::max<uint64_t>(1, std::min<uint64_t>(64, options.total / block));
        const int calls = options.total >= (64u << 20) ? 2000 : 200;
        std::printf("\n%-20s %6s %16s %16s %8s\n", "small op", "size", "striped us", "1 server us",
                    "ratio");
        struct SmallRow {
            Small op;
            const char *name;
            uint64_t size;
        };
        for (SmallRow row : {SmallRow{Small::kGet, "get_latency_us", 256},
                             SmallRow{Small::kPut, "put_latency_us", 256},
                             SmallRow{Small::kFetchAdd, "fetch_add_latency_us", 8}}) {
            std::vector<double> on_striped, on_plain;
            // Passes over the blocks, alternated between the items, so that both see the
            // machine as it is at the time (its speed drifts within seconds here).
            for (int pass = 0; pass < options.trials * calls / static_cast<int>(blocks); ++pass) {
                SmallCalls(f, striped, row.op, block, blocks, &on_striped);
                SmallCalls(f, plain, row.op, block, blocks, &on_plain);
            }
            double s = Median(on_striped), p = Median(on_plain);
            std::printf("%-20s %6llu %16.1f %16.1f %8.2f\n", row.name,
                        static_cast<unsigned long long>(row.size), s, p, s / p);
            csv << row.name << "," << row.size << "," << s << "," << p << "," << s / p << ","
                << stat.interleaveSize << "," << stat.num_memservers << "," << provider << "\n";
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
