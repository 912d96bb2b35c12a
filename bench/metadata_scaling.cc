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
//   metadata_scaling [--clients 1,2,4,8,16] [--seconds 2] [--rounds 3] [--csv PATH]
// Runs on whatever model the configuration gives (FAMPOOL_CONFIG for a cluster).
#include <fam/fam.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace openfam;
using Clock = std::chrono::steady_clock;

namespace {

struct Shared {
    std::atomic<int> ready;
    std::atomic<int> go;
    uint64_t allocs[64];
    uint64_t lookups[64];
    int failed;
};

void Client(Shared *shared, int index, double seconds) {
    try {
        fam f;
        f.fam_initialize("default", nullptr);
        std::string region_name = "scaling_" + std::to_string(getpid());
        Fam_Region_Descriptor *region = f.fam_create_region(region_name.c_str(), 64 << 20, 0777, nullptr);
        Fam_Descriptor *named = f.fam_allocate("target", 4096, 0777, region);
        shared->ready.fetch_add(1);
        while (!shared->go.load()) usleep(100);
        uint64_t count = 0;
        auto end = Clock::now() + std::chrono::duration<double>(seconds);
        while (Clock::now() < end) {
            for (int i = 0; i < 16; ++i) {
                Fam_Descriptor *item = f.fam_allocate(4096, 0600, region);
                f.fam_deallocate(item);
                delete item;
            }
            count += 16;
        }
        shared->allocs[index] = count;
        count = 0;
        end = Clock::now() + std::chrono::duration<double>(seconds);
        while (Clock::now() < end) {
            for (int i = 0; i < 16; ++i) delete f.fam_lookup("target", region_name.c_str());
            count += 16;
        }
        shared->lookups[index] = count;
        f.fam_deallocate(named);
        delete named;
        f.fam_destroy_region(region);
        delete region;
        f.fam_finalize("default");
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "client %d: %s\n", index, e.fam_error_msg());
        shared->failed = 1;
        shared->ready.fetch_add(1);
    }
}

// Runs n clients together; false if one failed. Rates are per second over all clients.
bool Run(int n, double seconds, double *alloc_rate, double *lookup_rate) {
    auto *shared = static_cast<Shared *>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                              MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    std::memset(static_cast<void *>(shared), 0, sizeof(Shared));
    std::vector<pid_t> pids;
    for (int c = 0; c < n; ++c) {
        pid_t pid = fork();
        if (pid == 0) {
            Client(shared, c, seconds);
            _exit(shared->failed);
        }
        pids.push_back(pid);
    }
    auto wait_until = Clock::now() + std::chrono::seconds(60);
    while (shared->ready.load() < n && Clock::now() < wait_until) usleep(1000);
    shared->go.store(1);
    for (pid_t pid : pids) waitpid(pid, nullptr, 0);
    uint64_t allocs = 0, lookups = 0;
    for (int c = 0; c < n; ++c) {
        allocs += shared->allocs[c];
        lookups += shared->lookups[c];
    }
    bool ok = !shared->failed;
    munmap(shared, sizeof(Shared));
    *alloc_rate = allocs / seconds;
    *lookup_rate = lookups / seconds;
    return ok;
}

double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<int> counts = {1, 2, 4, 8, 16};
    double seconds = 2;
    int rounds = 3;
    std::string csv_path = "metadata_scaling.csv";
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--clients" && i + 1 < argc) {
            counts.clear();
            std::stringstream list(argv[++i]);
            std::string n;
            while (std::getline(list, n, ',')) counts.push_back(std::min(std::stoi(n), 64));
        } else if (arg == "--seconds" && i + 1 < argc) {
            seconds = std::stod(argv[++i]);
        } else if (arg == "--rounds" && i + 1 < argc) {
            rounds = std::max(1, std::stoi(argv[++i]));
        } else if (arg == "--csv" && i + 1 < argc) {
            csv_path = argv[++i];
        } else {
            std::fprintf(stderr,
                         "usage: %s [--clients 1,2,4,8,16] [--seconds S] [--rounds R] "
                         "[--csv PATH]\n",
                         argv[0]);
            return 2;
        }
    }
    if (counts.empty()) return 2;
    // allocs[i][r], lookups[i][r]: client count counts[i], round r.
    std::vector<std::vector<double>> allocs(counts.size()), lookups(counts.size());
    for (int round = 1; round <= rounds; ++round) {
        std::printf("round %d of %d:", round, rounds);
        for (size_t i = 0; i < counts.size(); ++i) {
            double alloc_rate = 0, lookup_rate = 0;
            if (!Run(counts[i], seconds, &alloc_rate, &lookup_rate)) {
                std::fprintf(stderr, "metadata_scaling: a client failed with %d clients\n",
                             counts[i]);
                return 1;
            }
            allocs[i].push_back(alloc_rate);
            lookups[i].push_back(lookup_rate);
            std::printf(" %d clients %.0f pairs/s %.0f lookups/s;", counts[i], alloc_rate,
                        lookup_rate);
            std::fflush(stdout);
        }
        std::printf("\n");
    }
    std::ofstream csv(csv_path);
    csv << "metric,clients,value,unit,baseline_value,ratio,min,max,rounds\n";
    std::printf("%-8s %22s %14s %8s %22s %14s %8s   (medians of %d rounds)\n", "clients",
                "alloc+dealloc pairs/s", "per client", "vs 1", "lookups/s", "per client", "vs 1",
                rounds);
    double base_alloc = Median(allocs[0]), base_lookup = Median(lookups[0]);
    for (size_t i = 0; i < counts.size(); ++i) {
        int n = counts[i];
        double alloc_rate = Median(allocs[i]), lookup_rate = Median(lookups[i]);
        std::printf("%-8d %22.0f %14.0f %8.2f %22.0f %14.0f %8.2f\n", n, alloc_rate,
                    alloc_rate / n, alloc_rate / base_alloc, lookup_rate, lookup_rate / n,
                    lookup_rate / base_lookup);
        auto row = [&](const char *metric, const std::vector<double> &rates, double base) {
            double rate = Median(rates);
            csv << metric << "," << n << "," << rate << ",per_s," << base << "," << rate / base
                << "," << *std::min_element(rates.begin(), rates.end()) << ","
                << *std::max_element(rates.begin(), rates.end()) << "," << rates.size() << "\n";
        };
        row("alloc_dealloc_pairs", allocs[i], base_alloc);
        row("lookups", lookups[i], base_lookup);
    }
    std::printf("CSV written to %s\n", csv_path.c_str());
    return 0;
}
