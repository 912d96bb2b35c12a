// Metadata throughput as clients are added (issue 3; seed paper 004: the FAME librarian lost
// ~80% by 8 nodes). For each client count N in the list, N processes start together; each
// creates its own region and, for a fixed time, (a) allocates and deallocates 4 KiB items,
// then (b) looks up a named item. The aggregate rate (operations per second over all clients)
// is printed per N, with the rate per client and the ratio to N = 1.
//
// The sweep over N runs R times (rounds, default 3) and each figure is the median over the
// rounds: on a shared machine one 2 s sample of one client moved by +-40% from run to run, and
// every ratio is taken against it.
//
//   metadata_bench scaling [--clients 1,2,4,8,16] [--seconds 2] [--rounds 3] [--csv PATH]
//                    [--netns NS0,NS1,...] [--shards N] [--cpu-pids PID,PID,...] [--label L]
// Runs on whatever model the configuration gives (FAMPOOL_CONFIG for a cluster).
//   --netns    client c enters network namespace NS[c mod n] first (a client node of an
//              emulated fabric, each on its own link; needs root)
//   --shards   the metadata service has N shards: client c names its region so that shard
//              c mod N owns it, spreading the clients evenly (by default names are random)
//   --cpu-pids the metadata service's processes: the CPU time they spend (user + system, from
//              /proc) is measured over each run and reported per operation (cpu_us_per_op),
//              with the clients' own (client_cpu_us_per_op), for the model in
//              docs/bench/RESULTS.md
// Writes PATH (default metadata_scaling.csv): metric,clients,value,unit,baseline_value,ratio,
// min,max,rounds,label,cpu_us_per_op,client_cpu_us_per_op (the last two: medians over the
// rounds; 0 when not measured).
#include <fam/fam.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.h"
#include "common/network.h"
#include "common/shards.h"

using namespace openfam;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kMostClients = 64;

struct Options {
    std::vector<int> counts = {1, 2, 4, 8, 16};
    double seconds = 2;
    int rounds = 3;
    std::string csv = "metadata_scaling.csv";
    std::vector<std::string> netns;
    unsigned shards = 0;  // 0: region names at random
    std::vector<int> cpu_pids;
    std::string label;
};

struct Shared {
    std::atomic<int> ready;
    std::atomic<int> go;
    uint64_t allocs[kMostClients];
    uint64_t lookups[kMostClients];
    double alloc_cpu[kMostClients];  // the client's CPU seconds in each phase
    double lookup_cpu[kMostClients];
    int failed;
};

double ProcessCpuSeconds() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

// User + system CPU seconds process `pid` has used (/proc/PID/stat); 0 when it is gone.
double CpuSecondsOf(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::stringstream fields(text.substr(close + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
    }
    return ticks / sysconf(_SC_CLK_TCK);
}

double ServiceCpu(const Options &o) {
    double total = 0;
    for (int pid : o.cpu_pids) total += CpuSecondsOf(pid);
    return total;
}

// Client `index`'s region: with shards, a name shard index mod N owns.
std::string RegionName(const Options &o, int index) {
    std::string stem = "scaling_" + std::to_string(getpid());
    if (o.shards < 2) return stem;
    for (int i = 0;; ++i) {
        std::string name = stem + "_" + std::to_string(i);
        if (fampool::ShardOfName(name, o.shards) == index % o.shards) return name;
    }
}

void Client(Shared *shared, int index, const Options &o) {
    try {
        if (!o.netns.empty()) fampool::EnterNetworkNamespace(o.netns[index % o.netns.size()]);
        fam f;
        f.fam_initialize("default", nullptr);
        std::string region_name = RegionName(o, index);
        Fam_Region_Descriptor *region =
            f.fam_create_region(region_name.c_str(), 64 << 20, 0777, nullptr);
        Fam_Descriptor *named = f.fam_allocate("target", 4096, 0777, region);
        shared->ready.fetch_add(1);
        while (!shared->go.load()) usleep(100);
        uint64_t count = 0;
        double cpu = ProcessCpuSeconds();
        auto end = Clock::now() + std::chrono::duration<double>(o.seconds);
        while (Clock::now() < end) {
            for (int i = 0; i < 16; ++i) {
                Fam_Descriptor *item = f.fam_allocate(4096, 0600, region);
                f.fam_deallocate(item);
                delete item;
            }
            count += 16;
        }
        shared->allocs[index] = count;
        shared->alloc_cpu[index] = ProcessCpuSeconds() - cpu;
        count = 0;
        cpu = ProcessCpuSeconds();
        end = Clock::now() + std::chrono::duration<double>(o.seconds);
        while (Clock::now() < end) {
            for (int i = 0; i < 16; ++i) delete f.fam_lookup("target", region_name.c_str());
            count += 16;
        }
        shared->lookups[index] = count;
        shared->lookup_cpu[index] = ProcessCpuSeconds() - cpu;
        f.fam_deallocate(named);
        delete named;
        f.fam_destroy_region(region);
        delete region;
        f.fam_finalize("default");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "client %d: %s\n", index, e.what());
        shared->failed = 1;
        shared->ready.fetch_add(1);
    }
}

// One run's figures: rates per second over all clients; CPU microseconds per operation of
// the service (0 without --cpu-pids) and of the clients.
struct Figures {
    double alloc_rate = 0, lookup_rate = 0;
    double alloc_cpu_us = 0, lookup_cpu_us = 0;
    double alloc_client_us = 0, lookup_client_us = 0;
};

// Runs n clients together; false if one failed.
bool Run(int n, const Options &o, Figures *figures) {
    auto *shared = static_cast<Shared *>(
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    std::memset(static_cast<void *>(shared), 0, sizeof(Shared));
    std::vector<pid_t> pids;
    for (int c = 0; c < n; ++c) {
        pid_t pid = fork();
        if (pid == 0) {
            Client(shared, c, o);
            _exit(shared->failed);
        }
        pids.push_back(pid);
    }
    auto wait_until = Clock::now() + std::chrono::seconds(60);
    while (shared->ready.load() < n && Clock::now() < wait_until) usleep(1000);
    // The service's CPU at the start, after the allocation phase, at the end of the lookups.
    double cpu[3];
    cpu[0] = ServiceCpu(o);
    auto start = Clock::now();
    shared->go.store(1);
    std::this_thread::sleep_until(start + std::chrono::duration<double>(o.seconds));
    cpu[1] = ServiceCpu(o);
    std::this_thread::sleep_until(start + std::chrono::duration<double>(2 * o.seconds));
    cpu[2] = ServiceCpu(o);
    for (pid_t pid : pids) waitpid(pid, nullptr, 0);
    uint64_t allocs = 0, lookups = 0;
    double alloc_client = 0, lookup_client = 0;
    for (int c = 0; c < n; ++c) {
        allocs += shared->allocs[c];
        lookups += shared->lookups[c];
        alloc_client += shared->alloc_cpu[c];
        lookup_client += shared->lookup_cpu[c];
    }
    bool ok = !shared->failed;
    munmap(shared, sizeof(Shared));
    figures->alloc_rate = allocs / o.seconds;
    figures->lookup_rate = lookups / o.seconds;
    // An allocation and its deallocation are two calls.
    if (allocs) {
        figures->alloc_cpu_us = (cpu[1] - cpu[0]) * 1e6 / (2.0 * allocs);
        figures->alloc_client_us = alloc_client * 1e6 / (2.0 * allocs);
    }
    if (lookups) {
        figures->lookup_cpu_us = (cpu[2] - cpu[1]) * 1e6 / lookups;
        figures->lookup_client_us = lookup_client * 1e6 / lookups;
    }
    return ok;
}

double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

}  // namespace

int ScalingMain(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--clients" && i + 1 < argc) {
            o.counts.clear();
            for (const std::string &n : bench_args::SplitList(argv[++i])) {
                o.counts.push_back(std::min(std::stoi(n), kMostClients));
            }
        } else if (arg == "--seconds" && i + 1 < argc) {
            o.seconds = std::stod(argv[++i]);
        } else if (arg == "--rounds" && i + 1 < argc) {
            o.rounds = std::max(1, std::stoi(argv[++i]));
        } else if (arg == "--csv" && i + 1 < argc) {
            o.csv = argv[++i];
        } else if (arg == "--netns" && i + 1 < argc) {
            o.netns = bench_args::SplitList(argv[++i]);
        } else if (arg == "--shards" && i + 1 < argc) {
            o.shards = static_cast<unsigned>(std::stoul(argv[++i]));
        } else if (arg == "--cpu-pids" && i + 1 < argc) {
            for (const std::string &pid : bench_args::SplitList(argv[++i])) {
                o.cpu_pids.push_back(std::stoi(pid));
            }
        } else if (arg == "--label" && i + 1 < argc) {
            o.label = argv[++i];
        } else {
            std::fprintf(stderr,
                         "usage: %s [--clients 1,2,4,8,16] [--seconds S] [--rounds R] "
                         "[--csv PATH] [--netns NS,...] [--shards N] [--cpu-pids PID,...] "
                         "[--label L]\n",
                         argv[0]);
            return 2;
        }
    }
    if (o.counts.empty()) return 2;
    // figures[i][r]: client count counts[i], round r.
    std::vector<std::vector<Figures>> figures(o.counts.size());
    for (int round = 1; round <= o.rounds; ++round) {
        std::printf("round %d of %d:", round, o.rounds);
        for (size_t i = 0; i < o.counts.size(); ++i) {
            Figures run;
            if (!Run(o.counts[i], o, &run)) {
                std::fprintf(stderr, "metadata_bench scaling: a client failed with %d clients\n",
                             o.counts[i]);
                return 1;
            }
            figures[i].push_back(run);
            std::printf(" %d clients %.0f pairs/s %.0f lookups/s;", o.counts[i], run.alloc_rate,
                        run.lookup_rate);
            std::fflush(stdout);
        }
        std::printf("\n");
    }
    auto median = [&](size_t i, double Figures::*field) {
        std::vector<double> values;
        for (const Figures &run : figures[i]) values.push_back(run.*field);
        return Median(values);
    };
    auto range = [&](size_t i, double Figures::*field, bool low) {
        double best = low ? 1e300 : 0;
        for (const Figures &run : figures[i]) {
            best = low ? std::min(best, run.*field) : std::max(best, run.*field);
        }
        return best;
    };
    std::ofstream csv(o.csv);
    csv << "metric,clients,value,unit,baseline_value,ratio,min,max,rounds,label,cpu_us_per_op,"
           "client_cpu_us_per_op\n";
    std::printf("%-8s %22s %14s %8s %22s %14s %8s   (medians of %d rounds)\n", "clients",
                "alloc+dealloc pairs/s", "per client", "vs 1", "lookups/s", "per client", "vs 1",
                o.rounds);
    double base_alloc = median(0, &Figures::alloc_rate);
    double base_lookup = median(0, &Figures::lookup_rate);
    for (size_t i = 0; i < o.counts.size(); ++i) {
        int n = o.counts[i];
        double alloc_rate = median(i, &Figures::alloc_rate);
        double lookup_rate = median(i, &Figures::lookup_rate);
        std::printf("%-8d %22.0f %14.0f %8.2f %22.0f %14.0f %8.2f\n", n, alloc_rate, alloc_rate / n,
                    alloc_rate / base_alloc, lookup_rate, lookup_rate / n,
                    lookup_rate / base_lookup);
        auto row = [&](const char *metric, double Figures::*rate, double base, double Figures::*cpu,
                       double Figures::*client) {
            double value = median(i, rate);
            csv << metric << "," << n << "," << value << ",per_s," << base << "," << value / base
                << "," << range(i, rate, true) << "," << range(i, rate, false) << ","
                << figures[i].size() << "," << o.label << "," << median(i, cpu) << ","
                << median(i, client) << "\n";
        };
        row("alloc_dealloc_pairs", &Figures::alloc_rate, base_alloc, &Figures::alloc_cpu_us,
            &Figures::alloc_client_us);
        row("lookups", &Figures::lookup_rate, base_lookup, &Figures::lookup_cpu_us,
            &Figures::lookup_client_us);
    }
    std::printf("CSV written to %s\n", o.csv.c_str());
    return 0;
}
