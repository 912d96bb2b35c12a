// transfer_bench: fampool's get and put through the OpenFAM API (seed 001, Fig. 2-6), blocking
// and non-blocking, 256 B to 64 MiB, from 1 to 8 threads each with a context of its own, on
// the model the configuration gives (the embedded model, or the cluster FAMPOOL_CONFIG names),
// next to the baseline of that model measured in the same process:
//   embedded  memcpy: each thread copies between two buffers of its own in the same pattern
//             (the embedded data path is a copy to or from a mapped heap)
//   shm       memcpy as well: a client of a memory server on its own node maps the server's
//             heap file and copies (fabric_direct), so a copy is the strongest baseline; a raw
//             libfabric loop over shm moves 2-10 GB/s where fampool and memcpy move 20-100.
//             With fabric_direct off fampool uses shm's RMA, and the baseline is the raw loop
//   tcp ...   a raw libfabric loop over the cluster's provider (fabric_raw.h): a target thread
//             in this process polling its endpoint without sleeping, and per thread a client
//             endpoint keeping one operation in flight (blocking) or --window of them all the
//             time (non-blocking: the most a user of the API keeps in flight between quiets,
//             never drained in between); writes with FI_DELIVERY_COMPLETE (what fam_put and
//             fam_quiet guarantee), reads with libfabric's defaults
// Every thread works on an item (a buffer) of --item bytes of its own, --size bytes at a time
// at successive offsets, so that the operations in flight touch different bytes; items are
// written once before anything is timed.
//
//   get, put         fam_get_blocking / fam_put_blocking, one at a time
//   get_nb, put_nb   --window fam_get_nonblocking / fam_put_nonblocking (no more than 64 MiB
//                    of them: one at 64 MiB), then fam_quiet (the thread's context), over and
//                    over
// Each figure runs --seconds and is the bytes all threads moved over the time to the last
// thread's last completion; with --trials N, the median of N such runs, fampool's and the
// baseline's taking turns (a drift of the machine's speed hits both alike).
//
//   transfer_bench [--label L] [--sizes 256,1024,...] [--threads 1,2,4,8]
//                  [--ops get,put,get_nb,put_nb] [--seconds S] [--trials N] [--window W]
//                  [--item BYTES] [--baseline memcpy|raw] [--no-baseline] [--csv PATH]
// --baseline picks the baseline instead of the rule above (raw needs a cluster).
// Appends to PATH (header once): label,model,provider,op,size_bytes,threads,fampool_gbps,
// baseline,baseline_gbps,ratio  (GB/s are 1e9 bytes per second; ratio fampool / baseline).
#include <fam/fam.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.h"
#include "bench_modes.h"
#include "bench_stats.h"
#include "common/config.h"
#include "fabric_raw.h"

using namespace openfam;
using Clock = std::chrono::steady_clock;
using bench_stats::Median;

// The other modes (transfer_striped.cc, transfer_channel.cc, transfer_same_node.cc).
int StripedMain(int argc, char **argv);
int ChannelMain(int argc, char **argv);
int SameNodeMain(int argc, char **argv);
int ApiMain(int argc, char **argv);
int LargeMain(int argc, char **argv);

namespace {

struct Options {
    std::string label;
    std::vector<uint64_t> sizes = {256,       1 << 10, 4 << 10, 16 << 10, 64 << 10,
                                   256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
    std::vector<int> threads = {1, 2, 4, 8};
    std::vector<std::string> ops = {"get", "put", "get_nb", "put_nb"};
    double seconds = 0.25;
    int trials = 1;
    int window = 16;
    uint64_t item = 128 << 20;
    bool baseline = true;
    std::string baseline_kind;  // "memcpy", "raw"; empty: by the model and provider
    std::string csv = "transfer_bench.csv";
};

// Transfers in flight between quiets: `window`, but no more than 64 MiB of them (at 64 MiB, one:
// the same rule in every program scripts/bench-all compares).
int Window(int window, uint64_t size) {
    uint64_t most = std::max<uint64_t>(1, (64ull << 20) / size);
    return static_cast<int>(std::min<uint64_t>(window, most));
}

// A comma-separated list of numbers.
template <typename T>
std::vector<T> NumbersOf(const std::string &text) {
    std::vector<T> numbers;
    for (const std::string &part : bench_args::SplitList(text)) {
        numbers.push_back(static_cast<T>(std::stoull(part)));
    }
    return numbers;
}

// Runs `body(thread, deadline)` on `threads` threads together; each returns the bytes it moved.
// GB/s over the time to the last thread's end.
double Together(int threads, double seconds,
                const std::function<uint64_t(int, Clock::time_point)> &body) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<uint64_t> bytes(threads);
    std::vector<double> elapsed(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            ready.fetch_add(1);
            while (!go.load()) std::this_thread::yield();
            auto start = Clock::now();
            bytes[t] = body(t, start + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds)));
            elapsed[t] = std::chrono::duration<double>(Clock::now() - start).count();
        });
    }
    while (ready.load() < threads) std::this_thread::yield();
    go.store(true);
    for (std::thread &thread : pool) thread.join();
    uint64_t total = 0;
    double longest = 0;
    for (int t = 0; t < threads; ++t) {
        total += bytes[t];
        longest = std::max(longest, elapsed[t]);
    }
    return total / longest / 1e9;
}

// The offsets a thread moves through: `size` at a time, wrapping before the end of `item`.
struct Cursor {
    uint64_t size, item, at = 0;
    uint64_t Next() {
        uint64_t offset = at;
        at = at + 2 * size > item ? 0 : at + size;
        return offset;
    }
};

class FampoolSide {
  public:
    explicit FampoolSide(const Options &o) : o_(o) {
        Fam_Options options{};
        options.famThreadModel = const_cast<char *>("FAM_THREAD_MULTIPLE");
        f_.fam_initialize("default", &options);
        int most = *std::max_element(o.threads.begin(), o.threads.end());
        std::string name = "transfer_bench_" + std::to_string(getpid());
        region_ = f_.fam_create_region(name.c_str(), (most + 1) * o.item, 0777, nullptr);
        for (int t = 0; t < most; ++t) {
            items_.push_back(
                f_.fam_allocate(("t" + std::to_string(t)).c_str(), o.item, 0777, region_));
            contexts_.push_back(f_.fam_context_open());
            buffers_.emplace_back(o.item, static_cast<char>(t));
            f_.fam_put_blocking(buffers_.back().data(), items_.back(), 0, o.item);
        }
    }
    ~FampoolSide() {
        for (fam_context *context : contexts_) f_.fam_context_close(context);
        for (Fam_Descriptor *item : items_) {
            f_.fam_deallocate(item);
            delete item;
        }
        f_.fam_destroy_region(region_);
        delete region_;
        f_.fam_finalize("default");
    }

    double Measure(const std::string &op, uint64_t size, int threads) {
        return Together(threads, o_.seconds, [&](int t, Clock::time_point end) {
            fam_context *context = contexts_[t];
            Fam_Descriptor *item = items_[t];
            char *local = buffers_[t].data();
            Cursor cursor{size, o_.item};
            uint64_t moved = 0;
            while (Clock::now() < end) {
                if (op == "get" || op == "put") {
                    uint64_t at = cursor.Next();
                    if (op == "get") {
                        context->fam_get_blocking(local + at, item, at, size);
                    } else {
                        context->fam_put_blocking(local + at, item, at, size);
                    }
                    moved += size;
                    continue;
                }
                for (int w = 0, n = Window(o_.window, size); w < n; ++w) {
                    uint64_t at = cursor.Next();
                    if (op == "get_nb") {
                        context->fam_get_nonblocking(local + at, item, at, size);
                    } else {
                        context->fam_put_nonblocking(local + at, item, at, size);
                    }
                    moved += size;
                }
                context->fam_quiet();
            }
            return moved;
        });
    }

  private:
    const Options &o_;
    fam f_;
    Fam_Region_Descriptor *region_ = nullptr;
    std::vector<Fam_Descriptor *> items_;
    std::vector<fam_context *> contexts_;
    std::vector<std::vector<char>> buffers_;
};

// memcpy in the pattern of the API calls: a get copies from the thread's "heap" buffer into
// its local one, a put the other way; non-blocking calls are copies too.
double Memcpy(const Options &o, const std::string &op, uint64_t size, int threads,
              std::vector<std::vector<char>> &local, std::vector<std::vector<char>> &heap) {
    return Together(threads, o.seconds, [&](int t, Clock::time_point end) {
        Cursor cursor{size, o.item};
        uint64_t moved = 0;
        bool get = op == "get" || op == "get_nb";
        while (Clock::now() < end) {
            uint64_t at = cursor.Next();
            if (get) {
                std::memcpy(local[t].data() + at, heap[t].data() + at, size);
            } else {
                std::memcpy(heap[t].data() + at, local[t].data() + at, size);
            }
            moved += size;
        }
        return moved;
    });
}

// The raw libfabric loop (see the top of the file), one client endpoint per thread.
double Raw(const Options &o, const fabric_raw::Target &target, const std::string &op, uint64_t size,
           int threads, std::vector<std::unique_ptr<fabric_raw::RawClient>> &readers,
           std::vector<std::unique_ptr<fabric_raw::RawClient>> &writers) {
    bool write = op == "put" || op == "put_nb";
    size_t window = op == "get" || op == "put" ? 1 : Window(o.window, size);
    return Together(threads, o.seconds, [&](int t, Clock::time_point end) {
        fabric_raw::RawClient &client = write ? *writers[t] : *readers[t];
        // Chunks of operations until the time is up: enough per chunk that its start costs
        // nothing, few enough to stop near the deadline.
        size_t chunk = std::max<size_t>(window * 4, (64 << 20) / size);
        chunk = std::min<size_t>(chunk, 4096);
        uint64_t moved = 0;
        bool first = true;
        while (Clock::now() < end) {
            client.RunWindowed(target, write ? fabric_raw::Op::kWrite : fabric_raw::Op::kRead, size,
                               chunk, window, first ? 10 : 0);
            first = false;
            moved += chunk * size;
        }
        return moved;
    });
}

}  // namespace

int ApiMain(int argc, char **argv) {
    Options o;
    for (bench_args::ArgReader args(argv[0], argc, argv); args.Next();) {
        const std::string &arg = args.flag();
        auto value = [&args] { return args.Value(); };
        if (arg == "--label")
            o.label = value();
        else if (arg == "--sizes")
            o.sizes = NumbersOf<uint64_t>(value());
        else if (arg == "--threads")
            o.threads = NumbersOf<int>(value());
        else if (arg == "--ops")
            o.ops = bench_args::SplitList(value());
        else if (arg == "--seconds")
            o.seconds = std::stod(value());
        else if (arg == "--trials")
            o.trials = std::stoi(value());
        else if (arg == "--window")
            o.window = std::stoi(value());
        else if (arg == "--item")
            o.item = std::stoull(value());
        else if (arg == "--baseline")
            o.baseline_kind = value();
        else if (arg == "--no-baseline")
            o.baseline = false;
        else if (arg == "--csv")
            o.csv = value();
        else {
            std::fprintf(stderr, "usage: see the comment at the top of bench/transfer_bench.cc\n");
            return 2;
        }
    }
    uint64_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
    if (o.trials < 1) {
        std::fprintf(stderr, "transfer_bench: --trials must be 1 or more, not %d\n", o.trials);
        return 2;
    }
    if (o.item < 2 * largest || o.threads.empty() || o.sizes.empty()) {
        std::fprintf(stderr,
                     "transfer_bench: --item must hold two transfers of the largest "
                     "size, and --threads and --sizes need a value\n");
        return 2;
    }
    const fampool::Config config = fampool::LoadConfig(nullptr);
    const bool embedded = config.model != "memory_server";
    const std::string provider = embedded ? "-" : config.libfabric_provider;
    const std::string model = embedded ? "embedded" : "cluster";
    bool copies = embedded || (provider == "shm" && config.fabric_direct);  // baseline memcpy
    if (o.baseline_kind == "memcpy" || o.baseline_kind == "raw") {
        copies = o.baseline_kind == "memcpy";
    } else if (!o.baseline_kind.empty()) {
        std::fprintf(stderr, "transfer_bench: --baseline is memcpy or raw, not \"%s\"\n",
                     o.baseline_kind.c_str());
        return 2;
    }
    if (embedded && !copies) {
        std::fprintf(stderr, "transfer_bench: --baseline raw needs a cluster (FAMPOOL_CONFIG)\n");
        return 2;
    }
    const std::string baseline = copies ? "memcpy" : "raw-libfabric";
    int most = *std::max_element(o.threads.begin(), o.threads.end());

    bool header = !std::ifstream(o.csv).good();
    std::ofstream csv(o.csv, std::ios::app);
    if (header) {
        csv << "label,model,provider,op,size_bytes,threads,fampool_gbps,baseline,"
               "baseline_gbps,ratio\n";
    }
    std::printf(
        "%s model%s%s: fampool through the API against %s in this process; %.2f s per "
        "figure, median of %d, window %d\n",
        model.c_str(), embedded ? "" : ", provider ", embedded ? "" : provider.c_str(),
        baseline.c_str(), o.seconds, o.trials, o.window);
    std::printf("%-7s %10s %7s %12s %12s %7s\n", "op", "size", "threads", "fampool GB/s",
                (baseline + " GB/s").c_str(), "ratio");

    // Per thread count, operation and trial: fampool's figures over every size, then the
    // baseline's (whose target thread, polling without sleeping, must not run beside
    // fampool's), so that the two are measured within seconds of each other.
    struct Point {
        std::string op;
        uint64_t size;
        int threads;
    };
    std::vector<Point> points;
    std::vector<std::vector<double>> ours, theirs;  // per point, per trial
    FampoolSide side(o);
    std::vector<std::vector<char>> local, heap;     // memcpy's buffers
    std::unique_ptr<fabric_raw::RawTarget> target;  // the raw loop's, opened at first use
    std::vector<std::unique_ptr<fabric_raw::RawClient>> readers, writers;
    if (o.baseline && copies) {
        for (int t = 0; t < most; ++t) {
            local.emplace_back(o.item, 1);
            heap.emplace_back(o.item, 2);
        }
    }
    for (int threads : o.threads) {
        for (const std::string &op : o.ops) {
            size_t first = points.size();
            for (uint64_t size : o.sizes) points.push_back({op, size, threads});
            ours.resize(points.size());
            theirs.resize(points.size());
            for (int trial = 0; trial < o.trials; ++trial) {
                for (size_t p = first; p < points.size(); ++p) {
                    ours[p].push_back(side.Measure(op, points[p].size, threads));
                }
                if (!o.baseline) continue;
                if (copies) {
                    for (size_t p = first; p < points.size(); ++p) {
                        theirs[p].push_back(Memcpy(o, op, points[p].size, threads, local, heap));
                    }
                    continue;
                }
                // One target and one pair of clients per thread for the whole run, each paused
                // while fampool is measured.
                if (!target) {
                    target = std::make_unique<fabric_raw::RawTarget>(
                        provider, "127.0.0.1", std::to_string(20000 + getpid() % 9000), o.item);
                }
                while (static_cast<int>(readers.size()) < threads) {
                    readers.push_back(std::make_unique<fabric_raw::RawClient>(
                        provider, "127.0.0.1", o.item, fabric_raw::Semantics::kDefault));
                    writers.push_back(std::make_unique<fabric_raw::RawClient>(
                        provider, "127.0.0.1", o.item, fabric_raw::Semantics::kDelivery));
                }
                target->Resume();
                for (size_t p = first; p < points.size(); ++p) {
                    theirs[p].push_back(
                        Raw(o, target->target(), op, points[p].size, threads, readers, writers));
                }
                target->Pause();
            }
        }
    }
    for (size_t p = 0; p < points.size(); ++p) {
        double fampool = Median(ours[p]), them_gbps = Median(theirs[p]);
        double ratio = them_gbps > 0 ? fampool / them_gbps : 0;
        char them[32] = "none", times[32] = "-";  // no baseline for this figure
        if (them_gbps > 0) {
            std::snprintf(them, sizeof them, "%.3f", them_gbps);
            std::snprintf(times, sizeof times, "%.2f", ratio);
        }
        std::printf("%-7s %10llu %7d %12.3f %12s %7s\n", points[p].op.c_str(),
                    static_cast<unsigned long long>(points[p].size), points[p].threads, fampool,
                    them, times);
        csv << o.label << "," << model << "," << provider << "," << points[p].op << ","
            << points[p].size << "," << points[p].threads << "," << fampool << ","
            << (them_gbps > 0 ? baseline : "none") << "," << them_gbps << "," << ratio << "\n";
    }
    std::printf("rows appended to %s\n", o.csv.c_str());
    return 0;
}

int main(int argc, char **argv) {
    return bench_modes::Dispatch(
        "transfer_bench",
        {{"api", ApiMain, "get/put through the OpenFAM API against memcpy or raw libfabric"},
         {"striped", StripedMain, "an item striped over every server against one on one server"},
         {"channel", ChannelMain, "the libfabric channel against a raw libfabric loop, in-process"},
         {"same-node", SameNodeMain, "the same-node descriptor path against opening heap files"},
         {"large", LargeMain, "first write, write again and read of large items against raw"}},
        argc, argv);
}
