// redundancy_bench: what redundancy costs and what it buys, on one cluster in one run
// (FAMPOOL_CONFIG; scripts/bench-redundancy starts it). Three regions of the same size on the
// same memory servers: NONE (the baseline), RAID1, RAID5.
//
//   redundancy_bench [--total-mib 64] [--trials 5] [--csv PATH]
//       put and get bandwidth of 64 KiB and 1 MiB transfers (blocking, and non-blocking with
//       one quiet per sweep), 256 B blocking get and put latency and fetch_add latency, per
//       level; each figure also as a ratio to NONE's. And NONE's 256 B put latency when each
//       put goes to the next server (put_latency_next_server).
//   redundancy_bench --atomics-only [--total-mib 64] [--csv PATH]
//       only the fetch_add latency of each level (scripts/bench runs it a second time with
//       FAMPOOL_MEMSERVER_FABRIC=0: RAID atomics over gRPC against fabric messages).
//   redundancy_bench --failover PID [--csv PATH]
//       with the three regions written, kills memory server process PID with SIGKILL and
//       measures the time from the kill to the first complete read of each redundant item
//       (every stripe, so the dead server's bytes too), then the get bandwidth of 1 MiB
//       transfers in degraded mode as a ratio to the same item before the kill.
//
// CSV columns: level, measure, size_bytes, value, unit, ratio_to_none (or, for degraded
// reads, to the same item healthy), note.
#include <fam/fam.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fam_sweep.h"

using namespace openfam;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    uint64_t total = 64 << 20;
    int trials = 5;
    long failover_pid = 0;
    bool atomics_only = false;
    std::string csv = "redundancy_bench.csv";
};

struct Row {
    std::string level, measure;
    uint64_t size;
    double value;
    std::string unit;
    double ratio;
    std::string note;
};

const char *Name(Fam_Redundancy_Level level) {
    return level == RAID1 ? "RAID1" : level == RAID5 ? "RAID5" : "NONE";
}

double Median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

double Seconds(Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
}

// GB/s of one sweep over `total` bytes of the item in `size` transfers (fam_sweep.h).
double Sweep(fam &f, Fam_Descriptor *item, std::vector<char> &buffer, uint64_t size, uint64_t total,
             bool put, bool blocking) {
    using fam_sweep::Transfer;
    Transfer t = put ? (blocking ? Transfer::kPut : Transfer::kPutNonBlocking)
                     : (blocking ? Transfer::kGet : Transfer::kGetNonBlocking);
    return fam_sweep::Sweep(f, item, buffer.data(), size, total, t);
}

// Median microseconds of `count` calls of `call`.
template <typename Call>
double Latency(int count, Call &&call) {
    std::vector<double> times;
    for (int i = 0; i < count; ++i) {
        auto start = Clock::now();
        call(i);
        times.push_back(Seconds(start) * 1e6);
    }
    return Median(times);
}

struct Level {
    Fam_Redundancy_Level level;
    std::unique_ptr<Fam_Region_Descriptor> region;
    std::unique_ptr<Fam_Descriptor> item;
};

std::vector<Level> Prepare(fam &f, uint64_t total, std::vector<char> &buffer) {
    std::vector<Level> levels;
    for (Fam_Redundancy_Level level : {NONE, RAID1, RAID5}) {
        Fam_Region_Attributes attributes{};
        attributes.redundancyLevel = level;
        attributes.memoryType = VOLATILE;
        std::string name = std::string("bench-") + Name(level);
        try {
            Fam_Region_Descriptor *old = f.fam_lookup_region(name.c_str());
            f.fam_destroy_region(old);
            delete old;
        } catch (const Fam_Exception &) {
        }
        Level entry;
        entry.level = level;
        entry.region.reset(f.fam_create_region(name.c_str(), 2 * total, 0700, &attributes));
        entry.item.reset(f.fam_allocate("data", total, 0600, entry.region.get()));
        // Written once before anything is timed (first touches cost page faults).
        f.fam_put_blocking(buffer.data(), entry.item.get(), 0, total);
        levels.push_back(std::move(entry));
    }
    return levels;
}

void Costs(fam &f, const Options &options, std::vector<Row> &rows) {
    std::vector<char> buffer(options.total);
    for (uint64_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<char>(i * 7);
    std::vector<Level> levels = Prepare(f, options.total, buffer);
    double none[16] = {};
    for (Level &level : levels) {
        int slot = 0;
        auto add = [&](const std::string &measure, uint64_t size, double value, const char *unit) {
            if (level.level == NONE) none[slot] = value;
            double base = none[slot++];
            // Latencies: NONE / level, so that above 1 is faster, as for bandwidth.
            bool latency = std::string(unit) == "us";
            rows.push_back({Name(level.level), measure, size, value, unit,
                            latency ? base / value : value / base, ""});
            std::printf("%-6s %-24s %8llu B  %10.3f %-5s  %.2fx of NONE\n", Name(level.level),
                        measure.c_str(), static_cast<unsigned long long>(size), value, unit,
                        rows.back().ratio);
            std::fflush(stdout);
        };
        for (uint64_t size : {uint64_t{64} << 10, uint64_t{1} << 20}) {
            if (options.atomics_only) break;
            for (bool put : {true, false}) {
                for (bool blocking : {true, false}) {
                    std::vector<double> trials;
                    for (int t = 0; t < options.trials; ++t) {
                        trials.push_back(
                            Sweep(f, level.item.get(), buffer, size, options.total, put, blocking));
                    }
                    add(std::string(put ? "put" : "get") + (blocking ? "" : "_nonblocking"), size,
                        Median(trials), "GB/s");
                }
            }
        }
        char small[256];
        // 256 B at the start of successive 4 KiB pages, over at most 16 MiB of the item.
        const uint64_t pages = std::min<uint64_t>(4096, options.total / 4096);
        if (!options.atomics_only) {
            add("get_latency", 256,
                Latency(2000,
                        [&](int i) {
                            f.fam_get_blocking(small, level.item.get(), (i % pages) * 4096, 256);
                        }),
                "us");
            add("put_latency", 256,
                Latency(2000,
                        [&](int i) {
                            f.fam_put_blocking(small, level.item.get(), (i % pages) * 4096, 256);
                        }),
                "us");
        }
        add("fetch_add_latency", 8,
            Latency(2000,
                    [&](int i) { f.fam_fetch_add(level.item.get(), (i % 64) * 8, uint64_t{1}); }),
            "us");
    }
    // NONE's 256 B blocking put on the next server each time (the item's interleave blocks in
    // turn): what moving between servers costs one operation (servers that held a core while
    // idle made it 230-370 us). Its ratio is NONE's put_latency (16 puts per block, so mostly
    // on one server) divided by it.
    Fam_Descriptor *plain = levels.front().item.get();
    uint64_t block = plain->get_interleave_size();
    if (block > 0 && plain->get_used_memsrv_cnt() > 1 && !options.atomics_only) {
        double same = 0;
        for (const Row &row : rows) {
            if (row.level == "NONE" && row.measure == "put_latency") same = row.value;
        }
        char small[256];
        const uint64_t blocks = options.total / block;
        double next = Latency(2000, [&](int i) {
            f.fam_put_blocking(small, plain, (i % blocks) * block, sizeof small);
        });
        rows.push_back({"NONE", "put_latency_next_server", 256, next, "us", same / next,
                        "each put on the next server; ratio: put_latency / this"});
        std::printf("NONE   put_latency_next_server  256 B  %10.3f us     %.2fx of put_latency\n",
                    next, same / next);
    }
    for (Level &level : levels) {
        level.item.reset();
        f.fam_destroy_region(level.region.get());
    }
}

void Failover(fam &f, const Options &options, std::vector<Row> &rows) {
    uint64_t total = options.total;
    std::vector<char> buffer(total);
    std::vector<Level> levels = Prepare(f, total, buffer);
    std::vector<double> healthy(levels.size());
    for (size_t i = 1; i < levels.size(); ++i) {
        std::vector<double> trials;
        for (int t = 0; t < 3; ++t) {
            trials.push_back(Sweep(f, levels[i].item.get(), buffer, 1 << 20, total, false, true));
        }
        healthy[i] = Median(trials);
    }
    auto killed = Clock::now();
    if (kill(static_cast<pid_t>(options.failover_pid), SIGKILL) != 0) {
        std::perror("redundancy_bench: kill");
        std::exit(1);
    }
    for (size_t i = 1; i < levels.size(); ++i) {
        // The whole item: every server's stripes, the dead one's too. The first level's read
        // is the first after the kill; the next ones find the failure known already.
        auto start = Clock::now();
        f.fam_get_blocking(buffer.data(), levels[i].item.get(), 0, total);
        double seconds = Seconds(killed), read = Seconds(start);
        rows.push_back({Name(levels[i].level), "kill_to_first_read", total, seconds * 1e3, "ms", 0,
                        "SIGKILL to the end of the item's first complete read"});
        rows.push_back(
            {Name(levels[i].level), "first_read", total, read * 1e3, "ms", 0, "that read alone"});
        std::printf("%-6s first complete read %.0f ms after SIGKILL (the read: %.0f ms)\n",
                    Name(levels[i].level), seconds * 1e3, read * 1e3);
    }
    for (size_t i = 1; i < levels.size(); ++i) {
        std::vector<double> trials;
        for (int t = 0; t < options.trials; ++t) {
            trials.push_back(Sweep(f, levels[i].item.get(), buffer, 1 << 20, total, false, true));
        }
        double degraded = Median(trials);
        rows.push_back({Name(levels[i].level), "degraded_get", 1 << 20, degraded, "GB/s",
                        degraded / healthy[i], "ratio to the same item healthy"});
        std::printf("%-6s degraded get %.3f GB/s, %.2fx of healthy (%.3f)\n", Name(levels[i].level),
                    degraded, degraded / healthy[i], healthy[i]);
    }
    // The regions stay: scripts/bench-redundancy rebuilds them and times it.
}

}  // namespace

int main(int argc, char **argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
        if (arg == "--total-mib") {
            options.total = std::stoull(next()) << 20;
        } else if (arg == "--trials") {
            options.trials = std::stoi(next());
        } else if (arg == "--failover") {
            options.failover_pid = std::stol(next());
        } else if (arg == "--atomics-only") {
            options.atomics_only = true;
        } else if (arg == "--csv") {
            options.csv = next();
        } else {
            std::fprintf(stderr,
                         "usage: redundancy_bench [--total-mib N] [--trials N] [--atomics-only] "
                         "[--failover PID] "
                         "[--csv PATH]\n");
            return 2;
        }
    }
    fam f;
    std::vector<Row> rows;
    try {
        f.fam_initialize("default", nullptr);
        options.failover_pid ? Failover(f, options, rows) : Costs(f, options, rows);
        f.fam_finalize("default");
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "redundancy_bench: %s\n", e.fam_error_msg());
        return 1;
    }
    std::ofstream csv(options.csv);
    csv << "level,measure,size_bytes,value,unit,ratio,note\n";
    for (const Row &row : rows) {
        csv << row.level << ',' << row.measure << ',' << row.size << ',' << row.value << ','
            << row.unit << ',' << row.ratio << ",\"" << row.note << "\"\n";
    }
    return 0;
}
