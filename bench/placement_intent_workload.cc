// placement_bench intent-workload: one workload on one placement, for the evaluation of
// intent-based placement (scripts/bench-intent, docs/bench/intent.md). The program is the same on
// every topology: it says what it intends, or (for the fixed placements it is compared with) names
// the servers.
//
//   placement_bench intent-workload --workload bandwidth|latency --place intent|S[,S...] [--seconds
//   T]
//                   [--label TEXT]
//
// bandwidth: a 32 MiB item read and written in blocking 4 MiB transfers; prints MB/s.
// latency: blocking 64-byte gets at random offsets of a 16 MiB item, one at a time; prints the
// mean microseconds per get. With --place intent the region is created with FAM_HINT_BANDWIDTH
// or FAM_HINT_LATENCY; with server ids, with those servers as its only constraint.
// Output, one CSV line: label, workload, placement, servers (the region's, '+'-joined), value
// (MB/s or us), and the placement's reason as fam_stat gives it.
#include <fam/fam.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_args.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
}

double Bandwidth(openfam::fam &fam, openfam::Fam_Descriptor *item, uint64_t size, double seconds) {
    const uint64_t chunk = 4 << 20;
    std::vector<char> buffer(chunk, 7);
    for (uint64_t at = 0; at < size; at += chunk) {
        fam.fam_put_blocking(buffer.data(), item, at, chunk);
    }
    uint64_t moved = 0;
    auto start = Clock::now();
    for (uint64_t round = 0; Seconds(start) < seconds; ++round) {
        uint64_t at = (round * chunk) % size;
        if (round % 2) {
            fam.fam_get_blocking(buffer.data(), item, at, chunk);
        } else {
            fam.fam_put_blocking(buffer.data(), item, at, chunk);
        }
        moved += chunk;
    }
    return static_cast<double>(moved) / Seconds(start) / 1e6;
}

double Latency(openfam::fam &fam, openfam::Fam_Descriptor *item, uint64_t size, double seconds) {
    char buffer[64];
    std::mt19937_64 random(1);
    uint64_t gets = 0;
    auto start = Clock::now();
    while (Seconds(start) < seconds) {
        uint64_t at = (random() % (size / 64)) * 64;
        fam.fam_get_blocking(buffer, item, at, sizeof buffer);
        ++gets;
    }
    return Seconds(start) * 1e6 / static_cast<double>(gets);
}

}  // namespace

int IntentWorkloadMain(int argc, char **argv) {
    std::string workload = "bandwidth", place = "intent", label = "-";
    double seconds = 2;
    bench_args::ArgReader args(argv[0], argc, argv);
    while (args.Next()) {
        if (args.flag() == "--workload") {
            workload = args.Value();
        } else if (args.flag() == "--place") {
            place = args.Value();
        } else if (args.flag() == "--seconds") {
            seconds = std::atof(args.Value().c_str());
        } else if (args.flag() == "--label") {
            label = args.Value();
        } else {
            std::fprintf(stderr, "placement_bench intent-workload: unknown flag %s\n",
                         args.flag().c_str());
            return 2;
        }
    }
    if (workload != "bandwidth" && workload != "latency") {
        std::fprintf(stderr,
                     "placement_bench intent-workload: --workload is bandwidth or latency\n");
        return 2;
    }
    Fam_Region_Intent_Attributes attributes{};
    attributes.attributes.memoryType = VOLATILE;
    attributes.attributes.interleaveEnable = ENABLE;
    if (place == "intent") {
        attributes.intent.hints = workload == "bandwidth" ? FAM_HINT_BANDWIDTH : FAM_HINT_LATENCY;
    } else {
        for (const std::string &id : bench_args::SplitList(place)) {
            if (attributes.intent.server_count == FAM_INTENT_MAX_SERVERS) break;
            attributes.intent.servers[attributes.intent.server_count++] = std::stoull(id);
        }
    }
    openfam::fam fam;
    try {
        fam.fam_initialize("default", nullptr);
        std::string name = "intent_workload_" + workload;
        uint64_t size = workload == "bandwidth" ? 32 << 20 : 16 << 20;
        openfam::Fam_Region_Descriptor *region =
            fam.fam_create_region_intent(name.c_str(), 2 * size, 0777, &attributes);
        Fam_Stat info{};
        Fam_Placement placement{};
        fam.fam_stat(region, &info, &placement);
        std::string servers;
        for (uint64_t i = 0; i < info.num_memservers; ++i) {
            servers += (i ? "+" : "") + std::to_string(info.memory_servers[i]);
        }
        openfam::Fam_Descriptor *item = fam.fam_allocate("data", size, 0600, region);
        double value = workload == "bandwidth" ? Bandwidth(fam, item, size, seconds)
                                               : Latency(fam, item, size, seconds);
        std::string reason = placement.reason;
        for (char &c : reason) c = c == ',' ? ';' : c;
        std::printf("%s,%s,%s,%s,%.2f,%s\n", label.c_str(), workload.c_str(),
                    place == "intent" ? "intent" : ("fixed " + servers).c_str(), servers.c_str(),
                    value, reason.c_str());
        fam.fam_deallocate(item);
        fam.fam_destroy_region(region);
        delete item;
        delete region;
        fam.fam_finalize("default");
    } catch (const openfam::Fam_Exception &e) {
        std::fprintf(stderr, "placement_bench intent-workload: %s\n", e.what());
        return 1;
    }
    return 0;
}
