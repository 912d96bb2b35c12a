// thrash_worker: one PE of the thrasher (tests/thrash/thrash.py), a separate program that finds
// the cluster through FAMPOOL_CONFIG. It knows what it was told was done (acknowledged), and
// checks the pool against that.
//
//   thrash_worker setup STATE_FILE PES
//     Creates region "thrash_raid1" (RAID1, volatile) and "thrash_raid5" (RAID5, persistent),
//     each with an item "peN" of slots per PE and an item "counters" shared by all PEs.
//   thrash_worker run PE STATE_FILE SEED EVENTS_FILE
//     Until told to stop: random calls on its own slots (of many sizes, across interleave and
//     stripe boundaries) in both regions, and on the shared counters. Each call is one of:
//     put (blocking, or non-blocking then fam_quiet) of a new version of a slot; get of a slot
//     checked against what was acknowledged; fam_fetch_add(1) on a fetch counter, its result
//     marked in the state file (a result fetched twice is an increment lost); fam_add(1) then
//     fam_quiet on an add counter; fam_copy of a slot onto another of its size (either
//     region) then fam_copy_wait. A call that throws is counted and makes its target
//     uncertain (old or new both accepted from then on, until the next acknowledged write).
//     The driver's commands (thrash_state.h): pause (finish the call in progress and wait),
//     check (read every own slot back and compare; PE 0 also compares every counter with the
//     acknowledged adds), run, stop. Every call is written to EVENTS_FILE with its time
//     (CLOCK_MONOTONIC, as the driver's), so that a failure can be laid beside the faults.
// Exit status 0 when stopped, 2 on a usage or setup error.
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "thrash_state.h"

using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

namespace {

const char *const kRegionNames[thrash::kLevels] = {"thrash_raid1", "thrash_raid5"};
constexpr uint64_t kRegionBytes = 16 << 20;
// Counter words 4 KiB + 8 apart: with 4 KiB interleaving each lies on another server, and on
// RAID5 in another stripe and column.
constexpr uint64_t kCounterStride = 4096 + 8;

double Now() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

uint64_t NowNs() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return uint64_t(t.tv_sec) * 1000000000u + t.tv_nsec;
}

// A slot of a PE's item: `size` bytes at `offset`. The same table for every PE and region.
struct Slot {
    uint64_t offset, size;
};
std::vector<Slot> SlotTable() {
    // Sizes below, within and above a 4 KiB unit and a 12 KiB RAID5 stripe of 4 members,
    // whole stripes and more (written under leases), laid one after another with gaps of
    // several sizes so that they start anywhere in units and stripes.
    const uint64_t sizes[] = {8,     64,    300,   4095,  4096,  4097,  8192,     12288, 12289,
                              20000, 24576, 36864, 49152, 50000, 1,     100,      5000,  8,
                              4096,  12288, 36864, 300,   24576, 65536, 65536 + 5};
    const uint64_t gaps[] = {0, 3, 100, 1000, 4000, 7};
    std::vector<Slot> slots;
    uint64_t at = 0, i = 0;
    for (uint64_t size : sizes) {
        at += gaps[i++ % 6];
        slots.push_back({at, size});
        at += size;
    }
    return slots;
}
uint64_t ItemBytes(const std::vector<Slot> &slots) {
    return (slots.back().offset + slots.back().size + 4095) / 4096 * 4096;
}

// What a slot should hold: the pattern of `key` (a slot's global number and a version; 0:
// zeros, as allocated).
uint8_t PatternByte(uint64_t i, uint64_t key) {
    if (key == 0) return 0;
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ (key * 0xbf58476d1ce4e5b9ull);
    x ^= x >> 31;
    return static_cast<uint8_t>(x * 0x94d049bb133111ebull >> 56);
}

__attribute__((format(printf, 1, 2))) std::string Format(const char *format, ...) {
    char text[2048];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return text;
}

thrash::State MapState(const char *path) {
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        std::perror(path);
        std::exit(2);
    }
    void *base = mmap(nullptr, thrash::kStateBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        std::perror("mmap");
        std::exit(2);
    }
    thrash::State state(base);
    if (state.Magic().load() != thrash::kMagic) {
        std::fprintf(stderr, "thrash_worker: %s is not a thrasher state file\n", path);
        std::exit(2);
    }
    return state;
}

Fam_Region_Attributes Attributes(Fam_Redundancy_Level level, Fam_Memory_Type type) {
    Fam_Region_Attributes attributes{};
    attributes.redundancyLevel = level;
    attributes.memoryType = type;
    attributes.interleaveEnable = ENABLE;
    attributes.permissionLevel = PERMISSION_LEVEL_DEFAULT;
    return attributes;
}

int Setup(fam &f, int pes) {
    Fam_Region_Attributes raid1 = Attributes(RAID1, VOLATILE);
    Fam_Region_Attributes raid5 = Attributes(RAID5, PERSISTENT);
    Fam_Region_Attributes *attributes[thrash::kLevels] = {&raid1, &raid5};
    uint64_t item = ItemBytes(SlotTable());
    for (int level = 0; level < thrash::kLevels; ++level) {
        std::unique_ptr<Fam_Region_Descriptor> region(
            f.fam_create_region(kRegionNames[level], kRegionBytes, 0777, attributes[level]));
        for (int pe = 0; pe < pes; ++pe) {
            delete f.fam_allocate(("pe" + std::to_string(pe)).c_str(), item, 0777, region.get());
        }
        delete f.fam_allocate("counters", thrash::kCounterWords * kCounterStride, 0777,
                              region.get());
    }
    std::printf("thrash_worker: created %s and %s (%d PEs, items of %llu bytes)\n", kRegionNames[0],
                kRegionNames[1], pes, static_cast<unsigned long long>(item));
    return 0;
}

class Worker {
  public:
    Worker(fam &f, int pe, thrash::State state, uint64_t seed, const char *events)
        : f_(f), pe_(pe), state_(state), random_(seed * 1000 + pe), slots_(SlotTable()) {
        events_ = std::fopen(events, "a");
        if (!events_) {
            std::perror(events);
            std::exit(2);
        }
        for (int level = 0; level < thrash::kLevels; ++level) {
            items_[level].reset(
                f_.fam_lookup(("pe" + std::to_string(pe)).c_str(), kRegionNames[level]));
            counters_[level].reset(f_.fam_lookup("counters", kRegionNames[level]));
            expected_[level].assign(slots_.size(), std::vector<uint64_t>{0});
            versions_[level].assign(slots_.size(), 0);
        }
        for (size_t a = 0; a < slots_.size(); ++a) {
            for (size_t b = 0; b < slots_.size(); ++b) {
                if (a != b && slots_[a].size == slots_[b].size) same_size_.emplace_back(a, b);
            }
        }
    }
    ~Worker() { std::fclose(events_); }

    void Run() {
        uint64_t acted = 0;
        for (;;) {
            uint64_t command = state_.Command().load();
            uint64_t sequence = command >> 8, kind = command & 0xff;
            if (sequence != acted) {
                acted = sequence;
                if (kind == thrash::kStop) break;
                if (kind == thrash::kCheck) Check();
                std::fflush(events_);
                Set(thrash::kPhase, kind == thrash::kRun ? 1 : 2);
                state_.Pe(pe_, thrash::kActed).store(sequence);
            }
            if (kind != thrash::kRun) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
                continue;
            }
            OneCall();
        }
        Set(thrash::kPhase, 3);
        std::fflush(events_);
        state_.Pe(pe_, thrash::kActed).store(acted);
    }

  private:
    void Set(thrash::PeWord word, uint64_t value) { state_.Pe(pe_, word).store(value); }
    void Count(thrash::PeWord word) { state_.Pe(pe_, word).fetch_add(1); }
    void Event(const std::string &text) {
        std::fprintf(events_, "%.6f pe%d %s\n", Now(), pe_, text.c_str());
    }
    uint64_t Pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(random_); }
    uint64_t KeyOf(int level, size_t slot, uint64_t version) const {
        if (version == 0) return 0;
        uint64_t global = (uint64_t(level) * thrash::kMostPes + pe_) * 1000 + slot;
        return global << 32 | version;
    }
    static const char *LevelName(int level) { return level == 0 ? "raid1" : "raid5"; }

    void OneCall() {
        uint64_t kind = Pick(100);
        int level = static_cast<int>(Pick(thrash::kLevels));
        state_.Pe(pe_, thrash::kOpStartedNs).store(NowNs());
        Count(thrash::kOps);
        if (kind < 35) {
            Put(level, Pick(slots_.size()), Pick(2) == 0);
        } else if (kind < 55) {
            Get(level, Pick(slots_.size()));
        } else if (kind < 75) {
            FetchAdd(level, Pick(thrash::kFetchWords));
        } else if (kind < 90) {
            Add(level, Pick(thrash::kAddWords));
        } else {
            auto [from, to] = same_size_[Pick(same_size_.size())];
            Copy(level, from, static_cast<int>(Pick(thrash::kLevels)), to);
        }
        state_.Pe(pe_, thrash::kOpStartedNs).store(0);
    }

    // A call that threw: counted, written down with its message.
    void Failed(const std::string &what, const Fam_Exception &error, double started) {
        Count(thrash::kFailed);
        Event(Format("FAILED %s after %.1f ms: error %d: %s", what.c_str(), (Now() - started) * 1e3,
                     error.fam_error(), error.fam_error_msg()));
        std::fflush(events_);
    }

    void Put(int level, size_t slot, bool blocking) {
        const Slot &s = slots_[slot];
        uint64_t version = ++versions_[level][slot];
        uint64_t key = KeyOf(level, slot, version);
        std::vector<uint8_t> bytes(s.size);
        for (uint64_t i = 0; i < s.size; ++i) bytes[i] = PatternByte(i, key);
        std::string what = Format("put %s slot %zu (%llu+%llu) v%llu %s", LevelName(level), slot,
                                  (unsigned long long)s.offset, (unsigned long long)s.size,
                                  (unsigned long long)version, blocking ? "blocking" : "nb+quiet");
        double started = Now();
        try {
            if (blocking) {
                f_.fam_put_blocking(bytes.data(), items_[level].get(), s.offset, s.size);
            } else {
                f_.fam_put_nonblocking(bytes.data(), items_[level].get(), s.offset, s.size);
                f_.fam_quiet();
            }
        } catch (const Fam_Exception &error) {
            expected_[level][slot].push_back(key);  // old or new
            return Failed(what, error, started);
        }
        expected_[level][slot] = {key};
        Count(thrash::kPuts);
        Event(Format("ok %s %.1f ms", what.c_str(), (Now() - started) * 1e3));
    }

    // The key of the first of `candidates` that `bytes` hold, or an explanation.
    bool Matches(const std::vector<uint8_t> &bytes, const std::vector<uint64_t> &candidates,
                 std::string *why) {
        for (uint64_t key : candidates) {
            bool same = true;
            for (uint64_t i = 0; i < bytes.size() && same; ++i)
                same = bytes[i] == PatternByte(i, key);
            if (same) return true;
        }
        uint64_t key = candidates.back(), first = 0, wrong = 0;
        for (uint64_t i = 0; i < bytes.size(); ++i) {
            if (bytes[i] != PatternByte(i, key)) {
                if (wrong++ == 0) first = i;
            }
        }
        *why = Format(
            "%llu of %zu bytes differ from version %llu (slot %llu), the first at byte "
            "%llu (%d, not %d); %zu version(s) accepted",
            (unsigned long long)wrong, bytes.size(), (unsigned long long)(key & 0xffffffff),
            (unsigned long long)((key >> 32) % 1000), (unsigned long long)first, bytes[first],
            PatternByte(first, key), candidates.size());
        return false;
    }

    void Get(int level, size_t slot) {
        const Slot &s = slots_[slot];
        std::vector<uint8_t> bytes(s.size);
        std::string what = Format("get %s slot %zu (%llu+%llu)", LevelName(level), slot,
                                  (unsigned long long)s.offset, (unsigned long long)s.size);
        double started = Now();
        try {
            f_.fam_get_blocking(bytes.data(), items_[level].get(), s.offset, s.size);
        } catch (const Fam_Exception &error) {
            return Failed(what, error, started);
        }
        Count(thrash::kGets);
        std::string why;
        if (!Matches(bytes, expected_[level][slot], &why)) {
            Count(thrash::kWrongReads);
            Event(Format("WRONG %s: %s", what.c_str(), why.c_str()));
            std::fflush(events_);
            return;
        }
        Event(Format("ok %s %.1f ms", what.c_str(), (Now() - started) * 1e3));
    }

    void FetchAdd(int level, uint64_t word) {
        std::string what =
            Format("fetch_add %s word %llu", LevelName(level), (unsigned long long)word);
        double started = Now();
        uint64_t old;
        try {
            old = f_.fam_fetch_add(counters_[level].get(), word * kCounterStride, uint64_t{1});
        } catch (const Fam_Exception &error) {
            state_.Uncertain(level, word).fetch_add(1);
            return Failed(what, error, started);
        }
        state_.Acked(level, word).fetch_add(1);
        Count(thrash::kFetchAdds);
        if (state_.MarkSeen(level, word, old)) {
            Count(thrash::kDuplicates);
            Event(Format("DUPLICATE %s fetched %llu, which an acknowledged call fetched before",
                         what.c_str(), (unsigned long long)old));
            std::fflush(events_);
            return;
        }
        Event(Format("ok %s -> %llu %.1f ms", what.c_str(), (unsigned long long)old,
                     (Now() - started) * 1e3));
    }

    void Add(int level, uint64_t word) {
        uint64_t index = thrash::kFetchWords + word;
        std::string what =
            Format("add+quiet %s word %llu", LevelName(level), (unsigned long long)index);
        double started = Now();
        try {
            f_.fam_add(counters_[level].get(), index * kCounterStride, uint64_t{1});
            f_.fam_quiet();
        } catch (const Fam_Exception &error) {
            state_.Uncertain(level, index).fetch_add(1);
            return Failed(what, error, started);
        }
        state_.Acked(level, index).fetch_add(1);
        Count(thrash::kAdds);
        Event(Format("ok %s %.1f ms", what.c_str(), (Now() - started) * 1e3));
    }

    void Copy(int from_level, size_t from, int to_level, size_t to) {
        const Slot &a = slots_[from], &b = slots_[to];
        std::vector<uint64_t> &source = expected_[from_level][from];
        if (source.size() != 1) return;  // uncertain: nothing to expect of a copy
        uint64_t key = source[0];
        std::string what =
            Format("copy %s slot %zu -> %s slot %zu (%llu bytes)", LevelName(from_level), from,
                   LevelName(to_level), to, (unsigned long long)a.size);
        double started = Now();
        try {
            void *wait = f_.fam_copy(items_[from_level].get(), a.offset, items_[to_level].get(),
                                     b.offset, a.size);
            f_.fam_copy_wait(wait);
        } catch (const Fam_Exception &error) {
            expected_[to_level][to].push_back(key);
            return Failed(what, error, started);
        }
        expected_[to_level][to] = {key};
        Count(thrash::kCopies);
        Event(Format("ok %s (version %llu of slot %llu) %.1f ms", what.c_str(),
                     (unsigned long long)(key & 0xffffffff),
                     (unsigned long long)((key >> 32) % 1000), (Now() - started) * 1e3));
    }

    // Every own slot read back; PE 0 also every counter. Reads that fail count as failed calls.
    void Check() {
        Count(thrash::kChecks);
        Event("check begins");
        for (int level = 0; level < thrash::kLevels; ++level) {
            for (size_t slot = 0; slot < slots_.size(); ++slot) {
                const Slot &s = slots_[slot];
                std::vector<uint8_t> bytes(s.size);
                std::string what = Format("check %s slot %zu (%llu+%llu)", LevelName(level), slot,
                                          (unsigned long long)s.offset, (unsigned long long)s.size);
                double started = Now();
                try {
                    f_.fam_get_blocking(bytes.data(), items_[level].get(), s.offset, s.size);
                } catch (const Fam_Exception &error) {
                    Failed(what, error, started);
                    continue;
                }
                Count(thrash::kSlotsChecked);
                std::string why;
                if (!Matches(bytes, expected_[level][slot], &why)) {
                    Count(thrash::kWrongSlots);
                    Event(Format("WRONG %s: %s", what.c_str(), why.c_str()));
                }
            }
            if (pe_ == 0) CheckCounters(level);
        }
        Event("check ends");
        std::fflush(events_);
    }

    void CheckCounters(int level) {
        for (uint64_t word = 0; word < thrash::kCounterWords; ++word) {
            std::string what =
                Format("check %s counter %llu", LevelName(level), (unsigned long long)word);
            double started = Now();
            uint64_t value;
            try {
                value = f_.fam_fetch_uint64(counters_[level].get(), word * kCounterStride);
            } catch (const Fam_Exception &error) {
                Failed(what, error, started);
                continue;
            }
            uint64_t acked = state_.Acked(level, word).load();
            uint64_t uncertain = state_.Uncertain(level, word).load();
            if (value >= acked && value <= acked + uncertain) continue;
            Count(thrash::kWrongCounters);
            Count(value < acked ? thrash::kCountersBelow : thrash::kCountersAbove);
            Event(Format("WRONG %s: holds %llu; %llu adds acknowledged, %llu failed", what.c_str(),
                         (unsigned long long)value, (unsigned long long)acked,
                         (unsigned long long)uncertain));
        }
    }

    fam &f_;
    int pe_;
    thrash::State state_;
    std::mt19937_64 random_;
    std::vector<Slot> slots_;
    std::vector<std::pair<size_t, size_t>> same_size_;
    std::unique_ptr<Fam_Descriptor> items_[thrash::kLevels], counters_[thrash::kLevels];
    // Per level and slot: the keys a read may find (more than one after a failed write).
    std::vector<std::vector<uint64_t>> expected_[thrash::kLevels];
    std::vector<uint64_t> versions_[thrash::kLevels];
    FILE *events_;
};

int Usage() {
    std::fprintf(stderr,
                 "usage: thrash_worker setup STATE_FILE PES\n"
                 "       thrash_worker run PE STATE_FILE SEED EVENTS_FILE\n");
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) return Usage();
    std::string mode = argv[1];
    if (!(mode == "setup" && argc == 4) && !(mode == "run" && argc == 6)) return Usage();
    fam f;
    try {
        f.fam_initialize("default", nullptr);
        if (mode == "setup") {
            MapState(argv[2]);
            int result = Setup(f, std::atoi(argv[3]));
            f.fam_finalize("default");
            return result;
        }
        int pe = std::atoi(argv[2]);
        if (pe < 0 || pe >= thrash::kMostPes) return Usage();
        {
            Worker worker(f, pe, MapState(argv[3]), std::strtoull(argv[4], nullptr, 10), argv[5]);
            worker.Run();
        }
        f.fam_finalize("default");
    } catch (const Fam_Exception &error) {
        std::fprintf(stderr, "thrash_worker %s: %s (error %d)\n", argv[2], error.fam_error_msg(),
                     error.fam_error());
        return 2;
    }
    return 0;
}
