// metadata_bench auth: what MUNGE authentication, or TLS, costs. Two clusters started alike but for
// `authentication` (none and munge; scripts/bench-cluster starts them), or for TLS (plaintext
// and --tls; scripts/bench-security), measured in the same run, alternating round by round:
//
//   lookup rate      fam_lookup of a named item for S seconds, over the fabric messages (the
//                    default path) and over gRPC (metadata_fabric off): calls per second
//   alloc rate       fam_allocate + fam_deallocate of 4 KiB, over the fabric: pairs per second
//   fam_initialize   its time, which with munge includes a credential and Authenticate
//   pieces           munge_encode alone (the client's credential) and one Authenticate call
//                    (munge_encode + the service's munge_decode + the gRPC round trip)
//
//   metadata_bench auth --none FILE --munge FILE [--seconds 2] [--rounds 5] [--csv PATH]
//   metadata_bench auth --plain FILE --tls FILE [...]
//
// Each figure is the median over the rounds. Both clusters are measured in each round, one
// right after the other, so a round's ratio (munge / none, tls / plain) compares them under the
// same load of the machine: the ratio column is the median of the rounds' ratios, and low and
// high their least and greatest (how far the machine moved them).
// With TLS the metadata service takes no fabric calls: its "fabric" rows are gRPC over TLS.
#include <fam/fam.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "common/cluster_config.h"
#include "meta/client/metadata_client.h"
#include "rpc/authentication.h"
#include "rpc/munge.h"

using namespace openfam;
using bench_stats::Clock;
using bench_stats::Median;
using bench_stats::Seconds;

namespace {

struct Sample {
    double init_ms, lookups_per_s, pairs_per_s;
};

// One process's session on the cluster `config`: fam_initialize, then the loops.
Sample Measure(const std::string &config, bool over_fabric, double seconds, bool pairs) {
    setenv("FAMPOOL_CONFIG", config.c_str(), 1);
    setenv("FAMPOOL_METADATA_FABRIC", over_fabric ? "1" : "0", 1);
    Sample sample{};
    fam f;
    auto start = Clock::now();
    f.fam_initialize("default", nullptr);
    sample.init_ms = Seconds(start) * 1e3;
    std::string name = "auth_bench_" + std::to_string(getpid());
    Fam_Region_Descriptor *region = f.fam_create_region(name.c_str(), 64 << 20, 0700, nullptr);
    Fam_Descriptor *item = f.fam_allocate("target", 4096, 0600, region);
    for (int i = 0; i < 200; ++i) delete f.fam_lookup("target", name.c_str());  // warm up
    uint64_t count = 0;
    start = Clock::now();
    while (Seconds(start) < seconds) {
        for (int i = 0; i < 32; ++i) delete f.fam_lookup("target", name.c_str());
        count += 32;
    }
    sample.lookups_per_s = count / Seconds(start);
    if (pairs) {
        count = 0;
        start = Clock::now();
        while (Seconds(start) < seconds) {
            for (int i = 0; i < 16; ++i) {
                Fam_Descriptor *scratch = f.fam_allocate(4096, 0600, region);
                f.fam_deallocate(scratch);
                delete scratch;
            }
            count += 16;
        }
        sample.pairs_per_s = count / Seconds(start);
    }
    f.fam_deallocate(item);
    delete item;
    f.fam_destroy_region(region);
    delete region;
    f.fam_finalize("default");
    return sample;
}

// Microseconds per call of `body`, the median of `rounds` batches of `calls`.
template <typename Body>
double MicrosPerCall(int rounds, int calls, Body &&body) {
    std::vector<double> each;
    for (int r = 0; r < rounds; ++r) {
        auto start = Clock::now();
        for (int i = 0; i < calls; ++i) body();
        each.push_back(Seconds(start) * 1e6 / calls);
    }
    return Median(each);
}

}  // namespace

int AuthMain(int argc, char **argv) {
    // The two clusters: `none` and `munge`, or the plaintext and TLS ones under these names.
    std::string none, munge, csv = "auth_bench.csv";
    std::string labels[2] = {"none", "munge"};
    double seconds = 2;
    int rounds = 5;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "metadata_bench auth: %s needs a value\n", arg.c_str());
                std::exit(1);
            }
            return argv[++i];
        };
        if (arg == "--none")
            none = value();
        else if (arg == "--munge")
            munge = value();
        else if (arg == "--plain")
            none = value(), labels[0] = "plain";
        else if (arg == "--tls")
            munge = value(), labels[1] = "tls";
        else if (arg == "--seconds")
            seconds = std::atof(value().c_str());
        else if (arg == "--rounds")
            rounds = std::atoi(value().c_str());
        else if (arg == "--csv")
            csv = value();
        else {
            std::fprintf(stderr,
                         "usage: auth_bench --none FILE --munge FILE | --plain FILE --tls FILE "
                         "[--seconds S] [--rounds R] [--csv PATH]\n");
            return 1;
        }
    }
    if (none.empty() || munge.empty()) {
        std::fprintf(stderr,
                     "metadata_bench auth: --none and --munge (or --plain and --tls) name the two "
                     "clusters' files\n");
        return 1;
    }
    try {
        // metric -> (none samples, munge samples)
        std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> samples;
        for (int round = 0; round < rounds; ++round) {
            for (int which = 0; which < 2; ++which) {
                // Alternate which cluster goes first: neither always meets a warmer machine.
                bool munge_now = (which == 0) == (round % 2 == 1);
                const std::string &config = munge_now ? munge : none;
                Sample fabric = Measure(config, true, seconds, true);
                Sample grpc = Measure(config, false, seconds, false);
                auto add = [&](const std::string &metric, double value) {
                    auto &pair = samples[metric];
                    (munge_now ? pair.second : pair.first).push_back(value);
                };
                add("fam_initialize_ms", fabric.init_ms);
                add("lookup_fabric_per_s", fabric.lookups_per_s);
                add("lookup_grpc_per_s", grpc.lookups_per_s);
                add("alloc_dealloc_fabric_per_s", fabric.pairs_per_s);
            }
        }
        std::ofstream out(csv);
        out << "metric," << labels[0] << "," << labels[1] << ",unit,ratio,ratio_low,ratio_high\n";
        std::printf("%-28s %12s %12s  %s/%s (rounds: low-high)\n", "metric (median)",
                    labels[0].c_str(), labels[1].c_str(), labels[1].c_str(), labels[0].c_str());
        for (const auto &[metric, pair] : samples) {
            double a = Median(pair.first), b = Median(pair.second);
            std::vector<double> ratios;
            for (size_t r = 0; r < pair.first.size() && r < pair.second.size(); ++r) {
                ratios.push_back(pair.second[r] / pair.first[r]);
            }
            double ratio = Median(ratios);
            auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
            std::string unit = metric.ends_with("_ms") ? "ms" : "per_s";
            std::printf("%-28s %12.1f %12.1f  %.3f (%.3f-%.3f)\n", metric.c_str(), a, b, ratio,
                        *low, *high);
            out << metric << "," << a << "," << b << "," << unit << "," << ratio << "," << *low
                << "," << *high << "\n";
        }
        std::fflush(stdout);

        fampool::ClusterConfig cluster = fampool::LoadClusterConfig(munge);
        if (cluster.authentication != "munge") return 0;
        double encode_us = MicrosPerCall(rounds, 200, [&] {
            fampool::MakeCredential(cluster.munge_socket, fampool::kMetadataAudience, "bench");
        });
        fampool::MetadataClient client(cluster.metadata_address, std::chrono::seconds(10),
                                       fampool::ClientTls(cluster));
        client.UseMunge(cluster.munge_socket);
        double authenticate_us = MicrosPerCall(rounds, 200, [&] { client.Authenticate(); });
        std::printf("%-28s %12s %12.1f  (us per credential)\n", "munge_encode_us", "-", encode_us);
        std::printf("%-28s %12s %12.1f  (us per call)\n", "authenticate_us", "-", authenticate_us);
        out << "munge_encode_us,," << encode_us << ",us,\n";
        out << "authenticate_us,," << authenticate_us << ",us,\n";
        return 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "metadata_bench auth: %s\n", e.fam_error_msg());
        return 1;
    }
}
