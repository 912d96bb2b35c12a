// fam_microbench: the cost of fampool's basic operations on the embedded model, each next to
// the plain-memory operation it replaces, measured in the same run on the same buffers.
//
//   latency     256 B blocking get/put, median and p99 of single operations, against memcpy
//   atomics     uint64 fam_fetch_add and fam_add, ns/op, against __atomic_fetch_add
//   metadata    allocate+deallocate of a 4 KiB item (us), create+destroy of a 64 MiB region (ms)
//
// Get/put bandwidth is transfer_bench's (`transfer_bench api`, whose embedded run against
// memcpy `scripts/bench embedded` makes beside this one). Every figure is the median of
// several trials.
//
//   fam_microbench [--quick] [--csv PATH] [--strict] [--cluster]
//
// --cluster measures the model the configuration names (FAMPOOL_CONFIG: the memory-server
// model of a cluster started with `fampool up`) instead of the embedded model, metadata
// operations only, against the memory-server targets of issue 3 (the data path over the
// fabric is bench/fabric_bench's, against a raw libfabric loop).
//
// Prints a table, writes PATH (default fam_microbench.csv) with the columns
// metric,size_bytes,value,unit,baseline_value,ratio (ratio = value / baseline_value), and
// checks the project's performance targets (PASS/MISS). Exits 1 on an error, and with
// --strict also 2 when a target is missed.
#include <fam/fam.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "microbench_report.h"

using namespace openfam;
using namespace microbench;

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
constexpr uint64_t kLatencyBytes = 256;
constexpr uint64_t kLatencyWindow = 64 * kKiB;      // latency ops walk this much: in cache
constexpr uint64_t kWorkingBytes = kLatencyWindow;  // FAM item, local buffers

const char *kRegionName = "fam_microbench";
const char *kAllocRegionName = "fam_microbench_alloc";
const char *kCycleRegionName = "fam_microbench_cycle";

// The targets (those of get/put bandwidth: scripts/bench_report/embedded.py).
constexpr double kLatencyTargetNs = 200;       // 256 B blocking get/put, median
constexpr double kFetchAddTargetNs = 100;      // uint64 fam_fetch_add
constexpr double kAllocTargetUs = 20;          // allocate + deallocate
constexpr double kRegionTargetMs = 2;          // create + destroy region
constexpr double kClusterAllocTargetUs = 100;  // the same on the memory-server model
constexpr double kClusterRegionTargetMs = 1;

struct Settings {
    bool quick = false;
    bool strict = false;
    std::string csv = "fam_microbench.csv";
    int trials = 9;  // medians are taken over this many trials
    uint64_t latency_samples = 200000;
    uint64_t atomic_ops = 1000000;
    uint64_t alloc_pairs = 2000;
    uint64_t region_pairs = 200;
    bool cluster = false;  // metadata only, on the configured model
};

struct Target {
    std::string what;
    bool pass;
    std::string detail;
};

double seconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    size_t rank = static_cast<size_t>(std::ceil(q * v.size()));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// The values fetched by the atomics end up here, so that the compiler keeps them.
volatile uint64_t g_sink;

// Keeps the compiler from dropping stores to memory nobody reads afterwards.
inline void clobber_memory() { asm volatile("" ::: "memory"); }

class Bench {
  public:
    Bench(fam &my_fam, const Settings &settings) : fam_(my_fam), s_(settings) {}
    ~Bench() {
        std::free(src_);
        std::free(dst_);
    }

    // `grpc_fam`: on the memory-server model, a second fam object whose metadata calls all go
    // over gRPC (FAMPOOL_METADATA_FABRIC=0), measured in the same run for comparison.
    void run(fam *grpc_fam) {
        setup();
        if (s_.cluster) {
            allocation(fam_, "");
            if (grpc_fam) allocation(*grpc_fam, "_grpc");
            regions();
            teardown();
            return;
        }
        latency();
        atomics();
        allocation(fam_, "");
        regions();
        teardown();
    }

    const std::vector<Row> &rows() const { return rows_; }
    double clock_overhead_ns() const { return clock_overhead_ns_; }

  private:
    static void destroy_if_exists(fam &my_fam, const char *name) {
        try {
            Fam_Region_Descriptor *stale = my_fam.fam_lookup_region(name);
            my_fam.fam_destroy_region(stale);
            delete stale;
        } catch (const Fam_Exception &e) {
            if (e.fam_error() != FAM_ERR_NOTFOUND) throw;
        }
    }

    void setup() {
        for (const char *name : {kRegionName, kAllocRegionName, kCycleRegionName})
            destroy_if_exists(fam_, name);
        region_ = fam_.fam_create_region(kRegionName, kWorkingBytes + 16 * kMiB, 0700, nullptr);
        item_ = fam_.fam_allocate("buffer", kWorkingBytes, 0600, region_);

        src_ = static_cast<char *>(std::aligned_alloc(4096, kWorkingBytes));
        dst_ = static_cast<char *>(std::aligned_alloc(4096, kWorkingBytes));
        if (!src_ || !dst_) throw std::runtime_error("cannot allocate the local buffers");
        // Touch every page now, so that no measurement pays for first-touch faults.
        for (uint64_t i = 0; i < kWorkingBytes; ++i) src_[i] = static_cast<char>(i * 131);
        std::memset(dst_, 0, kWorkingBytes);
        fam_.fam_put_blocking(src_, item_, 0, kWorkingBytes);
        fam_.fam_get_blocking(dst_, item_, 0, kWorkingBytes);
        if (std::memcmp(src_, dst_, kWorkingBytes) != 0)
            throw std::runtime_error("a put + get of the item did not round-trip");
    }

    void teardown() {
        fam_.fam_deallocate(item_);
        delete item_;
        fam_.fam_destroy_region(region_);
        delete region_;
    }

    // Nanoseconds of each of `n` single operations (the clock's own cost included).
    template <typename Op>
    static std::vector<double> single_op_ns(uint64_t n, Op op) {
        std::vector<double> ns(n);
        const uint64_t slots = kLatencyWindow / kLatencyBytes;
        for (uint64_t i = 0; i < n; ++i) {
            uint64_t off = (i % slots) * kLatencyBytes;
            auto start = Clock::now();
            op(off);
            auto end = Clock::now();
            ns[i] = std::chrono::duration<double, std::nano>(end - start).count();
        }
        clobber_memory();
        return ns;
    }

    void latency() {
        const uint64_t n = s_.latency_samples;
        std::vector<double> clock_ns(n);
        for (uint64_t i = 0; i < n; ++i) {
            auto a = Clock::now();
            auto b = Clock::now();
            clock_ns[i] = std::chrono::duration<double, std::nano>(b - a).count();
        }
        clock_overhead_ns_ = median(clock_ns);

        // Warm the window in both buffers and in the item before sampling.
        for (int pass = 0; pass < 2; ++pass) {
            fam_.fam_get_blocking(dst_, item_, 0, kLatencyWindow);
            fam_.fam_put_blocking(src_, item_, 0, kLatencyWindow);
        }
        const uint64_t size = kLatencyBytes;
        auto copy =
            single_op_ns(n, [&](uint64_t off) { std::memcpy(dst_ + off, src_ + off, size); });
        auto get = single_op_ns(
            n, [&](uint64_t off) { fam_.fam_get_blocking(dst_ + off, item_, off, size); });
        auto put = single_op_ns(
            n, [&](uint64_t off) { fam_.fam_put_blocking(src_ + off, item_, off, size); });
        const std::string note = "vs memcpy, in-cache, includes clock";
        double copy50 = median(copy), copy99 = percentile(copy, 0.99);
        rows_.push_back({"memcpy_latency_p50", size, copy50, "ns", NAN, "in-cache"});
        rows_.push_back({"memcpy_latency_p99", size, copy99, "ns", NAN, "in-cache"});
        rows_.push_back({"get_blocking_latency_p50", size, median(get), "ns", copy50, note});
        rows_.push_back(
            {"get_blocking_latency_p99", size, percentile(get, 0.99), "ns", copy99, note});
        rows_.push_back({"put_blocking_latency_p50", size, median(put), "ns", copy50, note});
        rows_.push_back(
            {"put_blocking_latency_p99", size, percentile(put, 0.99), "ns", copy99, note});
        std::fprintf(stderr, "  latency done\n");
    }

    // Nanoseconds per operation over `n` back-to-back operations, median of the trials.
    template <typename Op>
    double ns_per_op(uint64_t n, Op op) {
        std::vector<double> per_op;
        for (int t = 0; t < s_.trials; ++t) {
            auto start = Clock::now();
            for (uint64_t i = 0; i < n; ++i) op();
            clobber_memory();
            per_op.push_back(seconds(start, Clock::now()) * 1e9 / n);
        }
        return median(per_op);
    }

    void atomics() {
        const uint64_t n = s_.atomic_ops;
        alignas(64) uint64_t local = 0;
        uint64_t sink = 0;
        double local_fetch_add =
            ns_per_op(n, [&] { sink += __atomic_fetch_add(&local, 1, __ATOMIC_SEQ_CST); });
        double local_add = ns_per_op(n, [&] { __atomic_add_fetch(&local, 1, __ATOMIC_SEQ_CST); });

        fam_.fam_set(item_, 0, uint64_t{0});
        double fetch_add = ns_per_op(n, [&] { sink += fam_.fam_fetch_add(item_, 0, uint64_t{1}); });
        double add = ns_per_op(n, [&] { fam_.fam_add(item_, 0, uint64_t{1}); });
        fam_.fam_quiet();
        uint64_t total = fam_.fam_fetch_uint64(item_, 0);
        if (total != 2 * s_.trials * n)
            throw std::runtime_error("fam_fetch_add/fam_add lost increments: counter is " +
                                     std::to_string(total) + ", expected " +
                                     std::to_string(2 * s_.trials * n));
        g_sink = sink;  // the fetched values are used

        const std::string plain = "ordinary memory, one location";
        rows_.push_back({"local_atomic_fetch_add_uint64", 8, local_fetch_add, "ns/op", NAN, plain});
        rows_.push_back({"local_atomic_add_uint64", 8, local_add, "ns/op", NAN, plain});
        rows_.push_back({"fetch_add_uint64", 8, fetch_add, "ns/op", local_fetch_add,
                         "vs __atomic_fetch_add, one location"});
        rows_.push_back({"add_uint64", 8, add, "ns/op", local_add,
                         "vs __atomic_add_fetch (result unused), one location"});
        std::fprintf(stderr, "  atomics done\n");
    }

    // Microseconds per allocate+deallocate pair of 4 KiB items, named and anonymous, made by
    // `f`; the rows' names end in `suffix`.
    void allocation(fam &f, const std::string &suffix) {
        Fam_Region_Descriptor *region =
            f.fam_create_region(kAllocRegionName, 64 * kMiB, 0700, nullptr);
        std::vector<double> named, anonymous, lookups;
        for (uint64_t i = 0; i < s_.alloc_pairs; ++i) {
            // The baseline: the cheapest control-path call, one lookup (on the memory-server
            // model, one gRPC round trip to the metadata service).
            auto start = Clock::now();
            delete f.fam_lookup_region(kAllocRegionName);
            lookups.push_back(seconds(start, Clock::now()) * 1e6);

            start = Clock::now();
            Fam_Descriptor *d = f.fam_allocate("bench_item", 4 * kKiB, 0600, region);
            f.fam_deallocate(d);
            named.push_back(seconds(start, Clock::now()) * 1e6);
            delete d;

            start = Clock::now();
            d = f.fam_allocate(4 * kKiB, 0600, region);
            f.fam_deallocate(d);
            anonymous.push_back(seconds(start, Clock::now()) * 1e6);
            delete d;
        }
        f.fam_destroy_region(region);
        delete region;
        // An allocate + deallocate pair is two calls: its baseline is two lookups.
        const double two_lookups = 2 * median(lookups);
        const std::string way = suffix.empty() ? "" : " (gRPC)";
        rows_.push_back({"lookup_region" + suffix + "_p50", 0, median(lookups), "us", NAN,
                         "one control call" + way});
        rows_.push_back({"allocate_deallocate_named" + suffix + "_p50", 4 * kKiB, median(named),
                         "us", two_lookups, "vs 2 lookups" + way});
        rows_.push_back({"allocate_deallocate_named" + suffix + "_p99", 4 * kKiB,
                         percentile(named, 0.99), "us", NAN, ""});
        rows_.push_back({"allocate_deallocate_anonymous" + suffix + "_p50", 4 * kKiB,
                         median(anonymous), "us", two_lookups, "vs 2 lookups" + way});
        rows_.push_back({"allocate_deallocate_anonymous" + suffix + "_p99", 4 * kKiB,
                         percentile(anonymous, 0.99), "us", NAN, ""});
        std::fprintf(stderr, "  allocation done\n");
    }

    void regions() {
        std::vector<double> ms;
        for (uint64_t i = 0; i < s_.region_pairs; ++i) {
            auto start = Clock::now();
            Fam_Region_Descriptor *r =
                fam_.fam_create_region(kCycleRegionName, 64 * kMiB, 0700, nullptr);
            fam_.fam_destroy_region(r);
            ms.push_back(seconds(start, Clock::now()) * 1e3);
            delete r;
        }
        rows_.push_back(
            {"create_destroy_region_p50", 64 * kMiB, median(ms), "ms", NAN, "volatile"});
        rows_.push_back(
            {"create_destroy_region_p99", 64 * kMiB, percentile(ms, 0.99), "ms", NAN, "volatile"});
        std::fprintf(stderr, "  regions done\n");
    }

    fam &fam_;
    Settings s_;
    Fam_Region_Descriptor *region_ = nullptr;
    Fam_Descriptor *item_ = nullptr;
    char *src_ = nullptr;
    char *dst_ = nullptr;
    double clock_overhead_ns_ = 0;
    std::vector<Row> rows_;
};

std::vector<Target> check_targets(const std::vector<Row> &rows, bool cluster) {
    std::vector<Target> targets;
    auto at_most = [&](const Row &r, double limit, const std::string &what) {
        targets.push_back({what, r.value <= limit,
                           readable(r.value) + " " + r.unit + " (target <= " + fixed(limit, 0) +
                               " " + r.unit + ")"});
    };
    if (cluster) {
        at_most(find_row(rows, "allocate_deallocate_named_p50", 4 * kKiB), kClusterAllocTargetUs,
                "allocate+deallocate 4 KiB, named (median)");
        at_most(find_row(rows, "allocate_deallocate_anonymous_p50", 4 * kKiB),
                kClusterAllocTargetUs, "allocate+deallocate 4 KiB, anonymous (median)");
        at_most(find_row(rows, "create_destroy_region_p50", 64 * kMiB), kClusterRegionTargetMs,
                "create+destroy 64 MiB region (median)");
        return targets;
    }
    at_most(find_row(rows, "get_blocking_latency_p50", 256), kLatencyTargetNs,
            "get_blocking 256 B latency (median)");
    at_most(find_row(rows, "put_blocking_latency_p50", 256), kLatencyTargetNs,
            "put_blocking 256 B latency (median)");
    at_most(find_row(rows, "fetch_add_uint64", 8), kFetchAddTargetNs, "fam_fetch_add uint64");
    at_most(find_row(rows, "allocate_deallocate_named_p50", 4 * kKiB), kAllocTargetUs,
            "allocate+deallocate 4 KiB, named (median)");
    at_most(find_row(rows, "allocate_deallocate_anonymous_p50", 4 * kKiB), kAllocTargetUs,
            "allocate+deallocate 4 KiB, anonymous (median)");
    at_most(find_row(rows, "create_destroy_region_p50", 64 * kMiB), kRegionTargetMs,
            "create+destroy 64 MiB region (median)");
    return targets;
}

Settings parse(int argc, char **argv) {
    Settings s;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--quick") {
            s.quick = true;
        } else if (arg == "--strict") {
            s.strict = true;
        } else if (arg == "--csv" && i + 1 < argc) {
            s.csv = argv[++i];
        } else if (arg == "--cluster") {
            s.cluster = true;
        } else {
            throw std::invalid_argument(
                "usage: fam_microbench [--quick] [--csv PATH] [--strict] [--cluster]");
        }
    }
    if (s.quick) {
        s.trials = 3;
        s.latency_samples = 20000;
        s.atomic_ops = 100000;
        s.alloc_pairs = 200;
        s.region_pairs = 20;
    }
    return s;
}

}  // namespace

int main(int argc, char **argv) {
    try {
        Settings settings = parse(argc, argv);
        fam my_fam;
        // Measure the embedded model whatever the configuration file says, unless asked for
        // the configured one.
        char model[] = "shared_memory";
        Fam_Options options{};
        if (!settings.cluster) options.openFamModel = model;
        my_fam.fam_initialize("default", &options);
        char *configured =
            static_cast<char *>(const_cast<void *>(my_fam.fam_get_option("OPENFAM_MODEL")));
        std::printf("fam_microbench: %s model, %s run (medians of %d trials)\n", configured,
                    settings.quick ? "quick" : "full", settings.trials);
        free(configured);
        std::fflush(stdout);

        std::unique_ptr<fam> grpc_fam;
        if (settings.cluster) {
            // Resolved at fam_initialize: only this object's calls avoid the fabric.
            setenv("FAMPOOL_METADATA_FABRIC", "0", 1);
            grpc_fam = std::make_unique<fam>();
            grpc_fam->fam_initialize("default", &options);
            unsetenv("FAMPOOL_METADATA_FABRIC");
        }
        Bench bench(my_fam, settings);
        bench.run(grpc_fam.get());
        if (grpc_fam) grpc_fam->fam_finalize("default");
        my_fam.fam_finalize("default");

        std::printf("latencies include the clock's own cost: %.1f ns per reading pair\n\n",
                    bench.clock_overhead_ns());
        print_table(bench.rows());
        write_csv(bench.rows(), settings.csv);

        std::printf("\ntargets:\n");
        int missed = 0;
        for (const Target &t : check_targets(bench.rows(), settings.cluster)) {
            std::printf("  %-4s %-48s %s\n", t.pass ? "PASS" : "MISS", t.what.c_str(),
                        t.detail.c_str());
            missed += !t.pass;
        }
        std::printf("%d target(s) missed; CSV written to %s\n", missed, settings.csv.c_str());
        return settings.strict && missed ? 2 : 0;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "fam_microbench: FAILED: %s (Fam_Error %d)\n", e.what(),
                     e.fam_error());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fam_microbench: FAILED: %s\n", e.what());
    }
    return 1;
}
