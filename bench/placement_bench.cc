// placement_bench: seed 000's Fig. 3, 4 and 7 on an emulated fabric (`fampool up --emulate`):
// the aggregate throughput of P PEs, each on a client node of its own, reading and writing
// FAM on S memory servers whose links are the bottleneck, for three placements of the PEs'
// data:
//   uniform      PE p's item on memory server p mod S: every server serves P/S PEs (Fig. 3)
//   random       each PE's item on a memory server drawn at random (seeded): some servers
//                serve several PEs and others none, and the busy servers' links are the
//                in-cast that Fig. 4 shows
//   interleaved  the same random draw, but every item striped over all S servers in blocks
//                of the cluster's dataitem_interleave_size (Fig. 7)
// For each placement and operation (blocking get and put, and non-blocking get and put with
// a window of --window transfers before each fam_quiet) every PE moves --size bytes at a
// time through its item, over and over, for --seconds; the figure is the bytes all PEs moved
// divided by the time from the common start to the last PE's last completion. Items are
// written once before anything is timed (first-touch page faults are not the fabric's work).
//
//   placement_bench --netns NS0,NS1,... [--pes P] [--size BYTES] [--item BYTES]
//                   [--seconds S] [--window W] [--seed N] [--ops get,put,get_nb,put_nb]
//                   [--placements uniform,random,interleaved] [--link-bps BPS]
//                   [--label TEXT] [--csv PATH]
//
// Runs against the cluster FAMPOOL_CONFIG names (its memory servers are S; interleaved
// regions need its dataitem_interleave_size). P children are forked; child p enters network
// namespace NS[p mod n] (a client node) before fam_initialize, which needs root. Without
// --netns the PEs stay where the program runs. Appends rows to PATH (header once):
// label,servers,placement,op,pes,size_bytes,seconds,bytes,gbps,link_gbps,ratio_to_links,
// busiest_server_pes
// where link_gbps is S x --link-bps / 8e9 (the servers' links together, GB/s of payload) and
// ratio_to_links is gbps / link_gbps.
#include <fam/fam.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_args.h"
#include "bench_modes.h"
#include "common/cluster_config.h"
#include "common/config.h"
#include "common/hash.h"
#include "common/network.h"

using namespace openfam;
using Clock = std::chrono::steady_clock;

// The other modes (placement_intent_cost.cc, placement_intent_workload.cc).
int IntentCostMain(int argc, char **argv);
int IntentWorkloadMain(int argc, char **argv);
int PlacementMain(int argc, char **argv);

namespace {

constexpr int kMostPes = 64;

struct Options {
    std::vector<std::string> netns;
    int pes = 8;
    uint64_t size = 1 << 20;
    uint64_t item = 8 << 20;
    double seconds = 2;
    int window = 8;
    unsigned seed = 2026;
    std::vector<std::string> ops = {"get", "put", "get_nb", "put_nb"};
    std::vector<std::string> placements = {"uniform", "random", "interleaved"};
    double link_bps = 0;
    std::string label;
    std::string csv = "placement_bench.csv";
};

// What the PEs share: a start line per phase, their byte counts, a failure flag.
struct Shared {
    std::atomic<int> ready;
    std::atomic<int> phase;  // the operation the PEs may run now (its index + 1)
    std::atomic<int> done;
    uint64_t bytes[kMostPes];
    double elapsed[kMostPes];  // from the start line to the PE's last completion
    std::atomic<int> failed;
    char error[512];
};

// A region name that hash placement puts on memory server `server` of `servers` (the first
// server of a region is the name's FNV-1a modulo the servers: meta/metadata_store.cc).
std::string NameOnServer(const std::string &stem, uint64_t server, uint64_t servers) {
    for (int i = 0;; ++i) {
        std::string name = stem + "_" + std::to_string(i);
        if (fampool::Fnv1a(name) % servers == server) return name;
    }
}

void Fail(Shared *shared, const std::string &what) {
    if (shared->failed.exchange(1) == 0) {
        std::snprintf(shared->error, sizeof shared->error, "%s", what.c_str());
    }
}

// One PE: its region and item for `placement`, then each operation when the parent says so.
void Pe(Shared *shared, const Options &o, int pe, const std::string &placement, uint64_t server,
        uint64_t servers) {
    if (!o.netns.empty()) fampool::EnterNetworkNamespace(o.netns[pe % o.netns.size()]);
    fam f;
    f.fam_initialize("default", nullptr);
    Fam_Region_Attributes attributes{};
    attributes.interleaveEnable = placement == "interleaved" ? ENABLE : DISABLE;
    attributes.memoryType = VOLATILE;
    // The parent's pid in the name: a run that failed leaves its regions on the cluster.
    std::string stem =
        "placement_" + placement + "_" + std::to_string(getppid()) + "_pe" + std::to_string(pe);
    std::string name = placement == "interleaved" ? stem : NameOnServer(stem, server, servers);
    Fam_Region_Descriptor *region =
        f.fam_create_region(name.c_str(), 2 * o.item, 0777, &attributes);
    Fam_Descriptor *item = f.fam_allocate("data", o.item, 0777, region);
    std::vector<char> buffer(o.item, static_cast<char>(pe));
    f.fam_put_blocking(buffer.data(), item, 0, o.item);
    shared->ready.fetch_add(1);
    for (size_t op = 0; op < o.ops.size(); ++op) {
        while (shared->phase.load() != static_cast<int>(op) + 1) {
            if (shared->failed.load()) return;
            usleep(200);
        }
        const std::string &kind = o.ops[op];
        uint64_t moved = 0, at = 0;
        auto next = [&] {
            uint64_t offset = at;
            at = at + 2 * o.size > o.item ? 0 : at + o.size;
            moved += o.size;
            return offset;
        };
        auto start = Clock::now();
        auto end = start + std::chrono::duration<double>(o.seconds);
        while (Clock::now() < end) {
            if (kind == "get") {
                uint64_t offset = next();
                f.fam_get_blocking(buffer.data() + offset, item, offset, o.size);
            } else if (kind == "put") {
                uint64_t offset = next();
                f.fam_put_blocking(buffer.data() + offset, item, offset, o.size);
            } else {
                for (int w = 0; w < o.window; ++w) {
                    uint64_t offset = next();
                    if (kind == "get_nb") {
                        f.fam_get_nonblocking(buffer.data() + offset, item, offset, o.size);
                    } else {
                        f.fam_put_nonblocking(buffer.data() + offset, item, offset, o.size);
                    }
                }
                f.fam_quiet();
            }
        }
        shared->bytes[pe] = moved;
        shared->elapsed[pe] = std::chrono::duration<double>(Clock::now() - start).count();
        shared->done.fetch_add(1);
    }
    f.fam_deallocate(item);
    f.fam_destroy_region(region);
    delete item;
    delete region;
    f.fam_finalize("default");
}

}  // namespace

int PlacementMain(int argc, char **argv) {
    Options o;
    for (bench_args::ArgReader args(argv[0], argc, argv); args.Next();) {
        const std::string &arg = args.flag();
        auto value = [&args] { return args.Value(); };
        if (arg == "--netns")
            o.netns = bench_args::SplitList(value());
        else if (arg == "--pes")
            o.pes = std::stoi(value());
        else if (arg == "--size")
            o.size = std::stoull(value());
        else if (arg == "--item")
            o.item = std::stoull(value());
        else if (arg == "--seconds")
            o.seconds = std::stod(value());
        else if (arg == "--window")
            o.window = std::stoi(value());
        else if (arg == "--seed")
            o.seed = static_cast<unsigned>(std::stoul(value()));
        else if (arg == "--ops")
            o.ops = bench_args::SplitList(value());
        else if (arg == "--placements")
            o.placements = bench_args::SplitList(value());
        else if (arg == "--link-bps")
            o.link_bps = std::stod(value());
        else if (arg == "--label")
            o.label = value();
        else if (arg == "--csv")
            o.csv = value();
        else {
            std::fprintf(stderr, "usage: see the comment at the top of bench/placement_bench.cc\n");
            return 2;
        }
    }
    if (o.pes < 1 || o.pes > kMostPes || o.size == 0 || o.item < 2 * o.size) {
        std::fprintf(stderr, "placement_bench: --pes 1..%d, and --item at least 2 x --size\n",
                     kMostPes);
        return 2;
    }
    for (const std::string &op : o.ops) {
        if (op != "get" && op != "put" && op != "get_nb" && op != "put_nb") {
            std::fprintf(stderr, "placement_bench: unknown op %s\n", op.c_str());
            return 2;
        }
    }
    const fampool::Config config = fampool::LoadConfig(nullptr);
    const uint64_t servers = fampool::LoadClusterConfig(config.config_file).memservers.size();
    bool header = !std::ifstream(o.csv).good();
    std::ofstream csv(o.csv, std::ios::app);
    if (header) {
        csv << "label,servers,placement,op,pes,size_bytes,seconds,bytes,gbps,link_gbps,"
               "ratio_to_links,busiest_server_pes\n";
    }
    double link_gbps = servers * o.link_bps / 8e9;
    std::printf(
        "%llu memory servers, %d PEs, %llu-byte transfers, %.0f s per figure; server "
        "links %.3f GB/s together (0: not given)\n",
        static_cast<unsigned long long>(servers), o.pes, static_cast<unsigned long long>(o.size),
        o.seconds, link_gbps);
    std::printf("%-12s %-7s %10s %9s %14s\n", "placement", "op", "GB/s", "of links",
                "busiest server");
    for (const std::string &placement : o.placements) {
        // Where each PE's data goes (interleaved: everywhere; the draw still names the PE's
        // first server, as random placement would).
        std::mt19937 random(o.seed);
        std::vector<uint64_t> server(o.pes);
        std::map<uint64_t, int> load;
        for (int p = 0; p < o.pes; ++p) {
            server[p] = placement == "uniform" ? p % servers : random() % servers;
            ++load[server[p]];
        }
        int busiest = 0;
        for (auto [id, pes] : load) busiest = std::max(busiest, pes);
        if (placement == "interleaved") busiest = 0;
        auto *shared = static_cast<Shared *>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0));
        std::memset(static_cast<void *>(shared), 0, sizeof(Shared));
        std::vector<pid_t> pids;
        for (int p = 0; p < o.pes; ++p) {
            pid_t pid = fork();
            if (pid == 0) {
                try {
                    Pe(shared, o, p, placement, server[p], servers);
                } catch (const Fam_Exception &e) {
                    Fail(shared, "PE " + std::to_string(p) + ": " + e.fam_error_msg());
                } catch (const std::exception &e) {
                    Fail(shared, "PE " + std::to_string(p) + ": " + e.what());
                }
                _exit(shared->failed.load());
            }
            pids.push_back(pid);
        }
        auto deadline = Clock::now() + std::chrono::seconds(120);
        auto wait_for = [&](std::atomic<int> &counter, int count) {
            while (counter.load() < count && !shared->failed.load() && Clock::now() < deadline) {
                usleep(1000);
            }
            if (counter.load() < count && !shared->failed.load()) Fail(shared, "timed out");
        };
        wait_for(shared->ready, o.pes);
        for (size_t op = 0; op < o.ops.size() && !shared->failed.load(); ++op) {
            shared->done.store(0);
            for (int p = 0; p < o.pes; ++p) shared->bytes[p] = 0;
            shared->phase.store(static_cast<int>(op) + 1);
            deadline = Clock::now() + std::chrono::seconds(static_cast<int>(o.seconds) + 120);
            wait_for(shared->done, o.pes);
            if (shared->failed.load()) break;
            // Every byte counted was moved by the time the slowest PE finished (a PE's last
            // transfers end after its --seconds).
            uint64_t bytes = 0;
            double elapsed = 0;
            for (int p = 0; p < o.pes; ++p) {
                bytes += shared->bytes[p];
                elapsed = std::max(elapsed, shared->elapsed[p]);
            }
            double gbps = bytes / elapsed / 1e9;
            double ratio = link_gbps > 0 ? gbps / link_gbps : 0;
            std::string where =
                busiest ? std::to_string(busiest) + " PEs" : std::string("(striped)");
            std::printf("%-12s %-7s %10.4f %9.2f %14s\n", placement.c_str(), o.ops[op].c_str(),
                        gbps, ratio, where.c_str());
            std::fflush(stdout);
            csv << o.label << "," << servers << "," << placement << "," << o.ops[op] << "," << o.pes
                << "," << o.size << "," << elapsed << "," << bytes << "," << gbps << ","
                << link_gbps << "," << ratio << "," << busiest << "\n";
            csv.flush();
        }
        shared->phase.store(static_cast<int>(o.ops.size()) + 1);
        for (pid_t pid : pids) waitpid(pid, nullptr, 0);
        bool failed = shared->failed.load();
        std::string error = shared->error;
        munmap(shared, sizeof(Shared));
        if (failed) {
            std::fprintf(stderr, "placement_bench: %s placement: %s\n", placement.c_str(),
                         error.c_str());
            return 1;
        }
    }
    std::printf("rows appended to %s\n", o.csv.c_str());
    return 0;
}

int main(int argc, char **argv) {
    return bench_modes::Dispatch(
        "placement_bench",
        {{"placement", PlacementMain, "uniform, random, interleaved placement (seed 000)"},
         {"intent-cost", IntentCostMain, "fam_create_region_intent against fam_create_region"},
         {"intent-workload", IntentWorkloadMain,
          "one workload on a region placed by intent or by hand"}},
        argc, argv);
}
