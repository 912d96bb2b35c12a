// `fampool bench`: a short measurement of the data path of the model a program here would use
// (a cluster, or the embedded store): blocking put and get from 256 B to 1 MiB and 64-bit
// atomics on a region of its own, each beside the same operation on local memory in this
// process (memcpy, a CPU atomic), so that its figures read as ratios that carry from machine to
// machine rather than as speeds of this one. bench/fam_microbench is the full benchmark.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "cli.h"
#include "pool.h"

namespace fampool::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How many operations ran, in how long.
struct Timing {
    uint64_t ops = 0;
    double seconds = 0;
};

// Runs op(i) for i = 0, 1, ... until `seconds` have passed, then finish(); the clock is read
// after batches doubling up to 1024 operations, so that it costs little beside fast operations
// and a slow one overshoots by at most the last batch (twice the time asked at the most).
template <typename Op, typename Finish>
Timing Measure(double seconds, Op &&op, Finish &&finish) {
    Timing timing;
    uint64_t batch = 1;
    Clock::time_point start = Clock::now();
    do {
        for (uint64_t k = 0; k < batch; ++k) op(timing.ops++);
        timing.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        batch = std::min<uint64_t>(batch * 2, 1024);
    } while (timing.seconds < seconds);
    finish();
    timing.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return timing;
}

template <typename Op>
Timing Measure(double seconds, Op &&op) {
    return Measure(seconds, std::forward<Op>(op), [] {});
}

// One row of the table: an operation of fampool and its baseline, measured in this process.
struct Row {
    std::string operation;
    uint64_t size;  // bytes per operation
    Timing fam;
    std::string baseline;
    Timing base;
};

std::string TimeText(double seconds) {
    double ns = seconds * 1e9;
    if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
    if (ns < 1e6) return fmt::format("{:.1f} us", ns / 1e3);
    return fmt::format("{:.2f} ms", ns / 1e6);
}

// Bytes per second of transfers, operations per second of atomics (size 0).
double RateOf(const Timing &timing, uint64_t size) {
    double ops = timing.ops / timing.seconds;
    return size ? ops * static_cast<double>(size) : ops;
}

std::string ThroughputText(double rate, bool bytes) {
    if (bytes) {
        return rate >= 1e9 ? fmt::format("{:.2f} GB/s", rate / 1e9)
                           : fmt::format("{:.1f} MB/s", rate / 1e6);
    }
    return rate >= 1e6 ? fmt::format("{:.1f} Mops/s", rate / 1e6)
                       : fmt::format("{:.1f} kops/s", rate / 1e3);
}

void PrintRows(const std::vector<Row> &rows) {
    Table table(
        {"OPERATION", "SIZE", "OPS", "TIME/OP", "RATE", "BASELINE", "BASELINE RATE", "RATIO"});
    for (const Row &row : rows) {
        double rate = RateOf(row.fam, row.size), base = RateOf(row.base, row.size);
        double ratio = rate / base;
        table.Add({row.operation, row.size ? Bytes(row.size) : "8 B", std::to_string(row.fam.ops),
                   TimeText(row.fam.seconds / row.fam.ops), ThroughputText(rate, row.size != 0),
                   row.baseline, ThroughputText(base, row.size != 0),
                   ratio >= 0.1 ? fmt::format("{:.2f}", ratio) : fmt::format("{:.2g}", ratio)});
    }
    table.Print();
}

// Destroys the bench's region however the command ends.
class RegionGuard {
  public:
    RegionGuard(openfam::fam &fam, openfam::Fam_Region_Descriptor *region)
        : fam_(fam), region_(region) {}
    ~RegionGuard() {
        try {
            fam_.fam_destroy_region(region_.get());
        } catch (const Fam_Exception &e) {
            std::fprintf(stderr, "fampool bench: region \"%s\" stays: %s\n", region_->get_name(),
                         e.fam_error_msg());
        }
    }
    openfam::Fam_Region_Descriptor *get() { return region_.get(); }

  private:
    openfam::fam &fam_;
    std::unique_ptr<openfam::Fam_Region_Descriptor> region_;
};

}  // namespace

int Bench(const BenchOptions &options) {
    const std::string command = "bench";
    if (options.seconds < 0.01 || options.seconds > 5) {
        Die(1, "fampool bench: --seconds {} is out of range (0.01 to 5)", options.seconds);
    }
    const uint64_t item_bytes = options.item_bytes;
    if (item_bytes < (1u << 20) || item_bytes > (1ull << 30)) {
        Die(1, "fampool bench: --item-size {} is out of range (1 MiB to 1 GiB)", item_bytes);
    }
    Model model = ChooseModel(command, options.cluster);
    FamOn fam(command, model);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    const std::string name = fmt::format("fampool-bench-{}-{}", host, getpid());
    Fam_Region_Attributes attributes{};
    attributes.memoryType = VOLATILE;
    RegionGuard region(fam.fam(), Ask(command, model, RegionObject(name), [&] {
                           return fam->fam_create_region(name.c_str(), 2 * item_bytes, 0600,
                                                         &attributes);
                       }));
    auto allocate = [&](const char *item, uint64_t bytes) {
        return std::unique_ptr<openfam::Fam_Descriptor>(
            Ask(command, model, ItemObject(item, name),
                [&] { return fam->fam_allocate(item, bytes, 0600, region.get()); }));
    };
    std::unique_ptr<openfam::Fam_Descriptor> data = allocate("data", item_bytes);
    std::unique_ptr<openfam::Fam_Descriptor> counters = allocate("counters", 4096);

    if (model.embedded) {
        std::printf("fampool bench: embedded model (store %s/meta)\n",
                    model.config.data_dir.c_str());
    } else {
        std::printf("fampool bench: cluster %s (%zu memory servers, provider %s)\n",
                    model.cluster.path.c_str(), model.cluster.memservers.size(),
                    model.cluster.provider.c_str());
    }
    std::printf(
        "region \"%s\" (%s, volatile; destroyed at the end), item of %s; each "
        "measurement runs %.2f s\n\n",
        name.c_str(), Bytes(2 * item_bytes).c_str(), Bytes(item_bytes).c_str(), options.seconds);
    std::fflush(stdout);

    std::vector<char> source(item_bytes), target(item_bytes);
    for (uint64_t i = 0; i < item_bytes; ++i) source[i] = static_cast<char>(i * 131 + 7);
    std::memset(target.data(), 1, item_bytes);
    std::vector<Row> rows;
    Ask(command, model, ItemObject("data", name), [&] {
        // Every page of the item and the buffers is touched once before anything is timed.
        for (uint64_t at = 0; at < item_bytes; at += 1u << 20) {
            fam->fam_put_blocking(source.data() + at, data.get(), at, 1u << 20);
        }
        for (uint64_t size : {uint64_t{256}, uint64_t{4096}, uint64_t{65536}, uint64_t{1} << 20}) {
            const uint64_t slots = item_bytes / size;
            auto offset = [&](uint64_t i) { return (i % slots) * size; };
            Timing copy = Measure(options.seconds, [&](uint64_t i) {
                std::memcpy(target.data() + offset(i), source.data() + offset(i), size);
                // The copy's bytes are never read: keep the compiler from dropping it.
                asm volatile("" : : "r"(target.data()) : "memory");
            });
            Timing put = Measure(options.seconds, [&](uint64_t i) {
                fam->fam_put_blocking(source.data() + offset(i), data.get(), offset(i), size);
            });
            Timing get = Measure(options.seconds, [&](uint64_t i) {
                fam->fam_get_blocking(target.data() + offset(i), data.get(), offset(i), size);
            });
            rows.push_back({"put (blocking)", size, put, "memcpy", copy});
            rows.push_back({"get (blocking)", size, get, "memcpy", copy});
        }
        // The item holds the source's bytes: every put wrote them where it got them from.
        fam->fam_get_blocking(target.data(), data.get(), 0, item_bytes);
        if (std::memcmp(target.data(), source.data(), item_bytes) != 0) {
            Die(1, "fampool bench: {}: a get returned other bytes than the puts wrote",
                ItemObject("data", name));
        }
    });
    Ask(command, model, ItemObject("counters", name), [&] {
        std::atomic<uint64_t> local{0};
        Timing cpu = Measure(options.seconds, [&](uint64_t) { local.fetch_add(1); });
        Timing fetch_add = Measure(
            options.seconds, [&](uint64_t) { fam->fam_fetch_add(counters.get(), 0, uint64_t{1}); });
        Timing add = Measure(
            options.seconds, [&](uint64_t) { fam->fam_add(counters.get(), 8, uint64_t{1}); },
            [&] { fam->fam_quiet(); });
        rows.push_back({"fetch_add uint64", 0, fetch_add, "CPU atomic", cpu});
        rows.push_back({"add uint64 (+quiet)", 0, add, "CPU atomic", cpu});
        uint64_t fetched = fam->fam_fetch_uint64(counters.get(), 0);
        uint64_t added = fam->fam_fetch_uint64(counters.get(), 8);
        if (fetched != fetch_add.ops || added != add.ops) {
            Die(1,
                "fampool bench: the counters hold {} and {} after {} fetch_add and {} add "
                "operations",
                fetched, added, fetch_add.ops, add.ops);
        }
    });
    PrintRows(rows);
    std::printf(
        "\nchecked: the item holds what the puts wrote, the counters count every atomic\n"
        "RATIO = RATE / BASELINE RATE, both measured here (1.00: as fast as local memory "
        "in this process)\n");
    return 0;
}

}  // namespace fampool::cli
