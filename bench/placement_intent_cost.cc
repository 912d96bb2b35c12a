// placement_bench intent-cost: what placing a region by intent costs (docs/bench/intent.md).
// Creates and destroys regions in rounds, each round one plain fam_create_region and one
// fam_create_region_intent with the same size and attributes, alternating which goes first
// so that drift on a shared machine falls on both; reports the median of each and their ratio.
// Runs on the embedded model, or on a cluster through FAMPOOL_CONFIG.
//
//   placement_bench intent-cost [--rounds N] [--size BYTES] [--hints bandwidth,latency,...] [--csv
//   FILE]
//
// Columns: model; hints (the intent's); plain_us and intent_us, the median microseconds of a
// create + destroy pair; ratio = intent_us / plain_us (the target: at most 1.10).
#include <fam/fam.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench_args.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

uint32_t HintBits(const std::string &list) {
    static const std::map<std::string, uint32_t> kHints = {{"bandwidth", FAM_HINT_BANDWIDTH},
                                                           {"latency", FAM_HINT_LATENCY},
                                                           {"near-pe", FAM_HINT_NEAR_PE},
                                                           {"capacity", FAM_HINT_CAPACITY},
                                                           {"job", FAM_HINT_JOB},
                                                           {"across-jobs", FAM_HINT_ACROSS_JOBS},
                                                           {"volatile", FAM_HINT_VOLATILE},
                                                           {"persistent", FAM_HINT_PERSISTENT}};
    uint32_t bits = 0;
    for (const std::string &name : bench_args::SplitList(list)) {
        auto hint = kHints.find(name);
        if (hint == kHints.end()) {
            std::fprintf(stderr, "placement_bench intent-cost: unknown hint \"%s\"\n",
                         name.c_str());
            std::exit(2);
        }
        bits |= hint->second;
    }
    return bits;
}

}  // namespace

int IntentCostMain(int argc, char **argv) {
    int rounds = 400;
    uint64_t size = 1 << 20;
    std::string hints = "latency", csv;
    bench_args::ArgReader args(argv[0], argc, argv);
    while (args.Next()) {
        if (args.flag() == "--rounds")
            rounds = std::atoi(args.Value().c_str());
        else if (args.flag() == "--size")
            size = std::strtoull(args.Value().c_str(), nullptr, 0);
        else if (args.flag() == "--hints")
            hints = args.Value();
        else if (args.flag() == "--csv")
            csv = args.Value();
        else {
            std::fprintf(stderr, "placement_bench intent-cost: unknown flag %s\n",
                         args.flag().c_str());
            return 2;
        }
    }
    openfam::fam fam;
    try {
        fam.fam_initialize("default", nullptr);
        const char *model = static_cast<const char *>(fam.fam_get_option("OPENFAM_MODEL"));
        Fam_Region_Intent_Attributes intent{};
        intent.intent.hints = HintBits(hints);
        // The plain region gets the memory type the hints choose, so that both make the same
        // kind of heap.
        Fam_Region_Attributes plain{};
        plain.memoryType = intent.intent.hints & (FAM_HINT_PERSISTENT | FAM_HINT_ACROSS_JOBS)
                               ? PERSISTENT
                               : VOLATILE;
        std::vector<double> plain_us, intent_us;
        uint64_t plain_servers = 0, intent_servers = 0;
        for (int round = 0; round < rounds; ++round) {
            for (int turn = 0; turn < 2; ++turn) {
                bool with_intent = (turn == 0) == (round % 2 == 0);
                std::string name =
                    "intent_bench_" + std::to_string(round) + "_" + std::to_string(with_intent);
                auto start = Clock::now();
                openfam::Fam_Region_Descriptor *region =
                    with_intent ? fam.fam_create_region_intent(name.c_str(), size, 0777, &intent)
                                : fam.fam_create_region(name.c_str(), size, 0777, &plain);
                if (round == 0) {
                    Fam_Stat info{};
                    fam.fam_stat(region, &info);
                    (with_intent ? intent_servers : plain_servers) = info.num_memservers;
                }
                fam.fam_destroy_region(region);
                double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
                delete region;
                (with_intent ? intent_us : plain_us).push_back(us);
            }
        }
        double p = Median(plain_us), i = Median(intent_us);
        std::printf("%-14s %-22s %10s %10s %7s %14s %15s\n", "model", "hints", "plain_us",
                    "intent_us", "ratio", "plain_servers", "intent_servers");
        std::printf("%-14s %-22s %10.1f %10.1f %7.3f %14llu %15llu\n", model, hints.c_str(), p, i,
                    i / p, static_cast<unsigned long long>(plain_servers),
                    static_cast<unsigned long long>(intent_servers));
        if (!csv.empty()) {
            std::string hint_column = hints;  // "a+b": the CSV's columns stay comma-separated
            std::replace(hint_column.begin(), hint_column.end(), ',', '+');
            FILE *out = std::fopen(csv.c_str(), "a");
            if (out) {
                std::fprintf(out, "%s,%s,%d,%.1f,%.1f,%.3f,%llu,%llu\n", model, hint_column.c_str(),
                             rounds, p, i, i / p, static_cast<unsigned long long>(plain_servers),
                             static_cast<unsigned long long>(intent_servers));
                std::fclose(out);
            }
        }
        fam.fam_finalize("default");
    } catch (const openfam::Fam_Exception &e) {
        std::fprintf(stderr, "placement_bench intent-cost: %s\n", e.what());
        return 1;
    }
    return 0;
}
