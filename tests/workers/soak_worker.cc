// soak_worker: one PE of the soak test (scripts/soak), a separate program (exec, not fork: a
// forked child must not share the parent's gRPC and libfabric state). It finds the cluster
// through FAMPOOL_CONFIG.
//
//   soak_worker PE SECONDS PREFIX [--redundant-only]
//     For SECONDS, a random mix of operations (seeded by PE and --redundant-only, so a run
//     can be replayed), each checked: allocate an item (4 KiB - 1 MiB) and write it; rewrite
//     part of an item; read items back byte for byte; deallocate (at most kMaxLive items
//     live); fam_fetch_add on the shared counter; fam_copy between its items; fam_backup,
//     fam_restore into a new item and fam_delete_backup. Puts are blocking or non-blocking
//     then fam_quiet, gets the same.
//     Items go in the PE's own plain region PREFIX "plain" PE (which this program creates at
//     the start and destroys at the end), in PREFIX "raid1" and in PREFIX "raid5".
//     --redundant-only: only the RAID1 and RAID5 regions (the kill phase of scripts/soak: a
//     plain region on a killed volatile server loses its bytes by design).
//     Prints `soak_worker PE: ops=N adds=M (...)` and exits 0; on a mismatch, exception or
//     unexpected error prints what failed and exits 1.
//   soak_worker --setup PREFIX PES
//     Creates the shared regions (before the PEs start: no PE has to race another to create
//     them): PREFIX "raid1" and PREFIX "raid5" for the PEs' items, and PREFIX "counter"
//     (RAID1) with the item "words", 8 uint64 counters at zero.
//   soak_worker --counter PREFIX
//     Prints `counter=SUM` (the sum of the 8 counters) and each word.
//
// The counter region is RAID1 (atomics are exactly once across a failover on both levels; the
// thrasher, tests/thrash, counts on RAID5 ones), and the soak test checks the exact total. Backups
// go from items of the plain and RAID1 regions only: a RAID5 backup is refused while the region is
// degraded, by design. Copies may involve any region (a redundant copy is done through this
// process).
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

namespace {

constexpr uint64_t kMinItem = 4 << 10, kMaxItem = 1 << 20;
constexpr size_t kMaxLive = 8;
constexpr int kWords = 8;
// One counter word per 4 KiB block: with 4 KiB interleaving the words sit on every server, so
// whichever server dies held some of them.
constexpr uint64_t kWordStride = 4096;

// A check that did not hold; its message says what was expected and what came.
struct Mismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

__attribute__((format(printf, 1, 2))) std::string Format(const char *format, ...) {
    char text[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return text;
}

Fam_Region_Attributes Attributes(Fam_Redundancy_Level level) {
    Fam_Region_Attributes attributes{};
    attributes.redundancyLevel = level;
    attributes.memoryType = VOLATILE;
    attributes.interleaveEnable = ENABLE;
    attributes.permissionLevel = PERMISSION_LEVEL_DEFAULT;
    return attributes;
}

// The shared regions' size: every PE may keep kMaxLive items of up to 1 MiB in one of them,
// plus a restore target, with room for fragmentation.
uint64_t SharedRegionSize(uint64_t pes) { return std::max<uint64_t>(64, 16 * pes) << 20; }

int Setup(fam &f, const std::string &prefix, uint64_t pes) {
    Fam_Region_Attributes raid1 = Attributes(RAID1), raid5 = Attributes(RAID5);
    delete f.fam_create_region((prefix + "raid1").c_str(), SharedRegionSize(pes), 0777, &raid1);
    delete f.fam_create_region((prefix + "raid5").c_str(), SharedRegionSize(pes), 0777, &raid5);
    std::unique_ptr<Fam_Region_Descriptor> counter(
        f.fam_create_region((prefix + "counter").c_str(), 1 << 20, 0777, &raid1));
    std::unique_ptr<Fam_Descriptor> words(
        f.fam_allocate("words", kWords * kWordStride, 0777, counter.get()));
    for (int w = 0; w < kWords; ++w) f.fam_set(words.get(), w * kWordStride, uint64_t{0});
    std::printf("soak_worker: created %sraid1, %sraid5 and %scounter\n", prefix.c_str(),
                prefix.c_str(), prefix.c_str());
    return 0;
}

int Counter(fam &f, const std::string &prefix) {
    std::unique_ptr<Fam_Descriptor> words(f.fam_lookup("words", (prefix + "counter").c_str()));
    uint64_t sum = 0;
    std::string each;
    for (int w = 0; w < kWords; ++w) {
        uint64_t value = f.fam_fetch_uint64(words.get(), w * kWordStride);
        sum += value;
        each += " " + std::to_string(value);
    }
    std::printf("counter=%llu words:%s\n", static_cast<unsigned long long>(sum), each.c_str());
    return 0;
}

// A region the PE puts items in.
struct Region {
    std::string name;
    std::unique_ptr<Fam_Region_Descriptor> descriptor;
    bool backups;  // items of this region may be backed up (not RAID5)
    bool own;      // this PE created it and destroys it at the end
};

// A live item and the bytes it must hold.
struct Item {
    uint64_t id;
    Region *region;
    std::unique_ptr<Fam_Descriptor> descriptor;
    std::vector<uint8_t> bytes;
};

// Counts of each operation, for the final line.
struct Counts {
    uint64_t ops = 0, adds = 0, allocates = 0, rewrites = 0, reads = 0, deallocates = 0, copies = 0,
             backups = 0, bytes_put = 0, bytes_got = 0;
};

class Soak {
  public:
    Soak(fam &f, int pe, const std::string &prefix) : f_(f), pe_(pe), prefix_(prefix) {}

    // Creates the PE's plain region (unless redundant_only) and looks up the shared ones.
    void Open(bool redundant_only) {
        // The two phases of scripts/soak run different sequences.
        random_.seed(0x50a4000ull + 2 * static_cast<uint64_t>(pe_) + redundant_only);
        if (!redundant_only) {
            std::string name = prefix_ + "plain" + std::to_string(pe_);
            Fam_Region_Attributes plain = Attributes(NONE);
            Doing("fam_create_region " + name);
            Fam_Region_Descriptor *region =
                f_.fam_create_region(name.c_str(), 32 << 20, 0700, &plain);
            regions_.push_back({name, std::unique_ptr<Fam_Region_Descriptor>(region), true, true});
        }
        for (std::string level : {"raid1", "raid5"}) {
            std::string name = prefix_ + level;
            Doing("fam_lookup_region " + name);
            Fam_Region_Descriptor *region = f_.fam_lookup_region(name.c_str());
            // RAID1 items are backed up across the kill too: a backup or restore under way when
            // a member's server dies or comes back goes on with the other copy.
            regions_.push_back(
                {name, std::unique_ptr<Fam_Region_Descriptor>(region), level == "raid1", false});
        }
        Doing("fam_lookup words in " + prefix_ + "counter");
        words_.reset(f_.fam_lookup("words", (prefix_ + "counter").c_str()));
        last_fetched_.assign(kWords, 0);
        seen_word_.assign(kWords, false);
    }

    const Counts &counts() const { return counts_; }
    const std::string &doing() const { return doing_; }

    void Run(double seconds) {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
        while (std::chrono::steady_clock::now() < deadline) {
            Step();
            ++counts_.ops;
        }
        while (!live_.empty()) Deallocate(live_.size() - 1);
        for (Region &region : regions_) {
            if (!region.own) continue;
            Doing("fam_destroy_region " + region.name);
            f_.fam_destroy_region(region.descriptor.get());
        }
        Doing("finished");
    }

  private:
    uint64_t Below(uint64_t n) { return n ? random_() % n : 0; }
    void Doing(std::string what) { doing_ = std::move(what); }
    std::string Name(const Item &item) const {
        return Format("item %llu (%s, %llu bytes)", static_cast<unsigned long long>(item.id),
                      item.region->name.c_str(),
                      static_cast<unsigned long long>(item.bytes.size()));
    }

    void Step() {
        uint64_t roll = Below(100);
        if (live_.size() < 2 || (roll < 20 && live_.size() < kMaxLive)) return Allocate();
        if (roll < 30 || live_.size() > kMaxLive) return Deallocate(Below(live_.size()));
        if (roll < 50) return Rewrite(*live_[Below(live_.size())]);
        if (roll < 60) return Read(*live_[Below(live_.size())]);
        if (roll < 75) return Adds();
        if (roll < 90) return Copy();
        Backup();
    }

    // Fills bytes[offset, offset + n) with a fresh pattern.
    void Pattern(std::vector<uint8_t> &bytes, uint64_t offset, uint64_t n) {
        uint64_t x = random_();
        for (uint64_t i = 0; i < n; ++i) {
            if (i % 8 == 0) {
                x += 0x9e3779b97f4a7c15ull;
                uint64_t z = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
                z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
                x = z ^ (z >> 31);
            }
            bytes[offset + i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
        }
    }

    // Writes item.bytes[offset, offset + n) in pieces of random size, each blocking or
    // non-blocking (then fam_quiet for all of them).
    void Put(Item &item, uint64_t offset, uint64_t n) {
        bool nonblocking = false;
        for (uint64_t at = offset, end = offset + n; at < end;) {
            uint64_t piece = std::min<uint64_t>(end - at, 1 + Below(256 << 10));
            bool blocking = Below(2);
            Doing(Format("%s %s offset %llu + %llu",
                         blocking ? "fam_put_blocking" : "fam_put_nonblocking", Name(item).c_str(),
                         static_cast<unsigned long long>(at),
                         static_cast<unsigned long long>(piece)));
            if (blocking) {
                f_.fam_put_blocking(item.bytes.data() + at, item.descriptor.get(), at, piece);
            } else {
                f_.fam_put_nonblocking(item.bytes.data() + at, item.descriptor.get(), at, piece);
                nonblocking = true;
            }
            at += piece;
        }
        if (nonblocking) {
            Doing("fam_quiet after the puts to " + Name(item));
            f_.fam_quiet();
        }
        counts_.bytes_put += n;
    }

    // Reads the whole item (one blocking get, or non-blocking pieces then fam_quiet) and
    // compares it with what it must hold.
    void Verify(const Item &item, const char *after) {
        std::vector<uint8_t> got(item.bytes.size());
        uint64_t size = got.size();
        if (Below(2)) {
            Doing("fam_get_blocking " + Name(item) + " after " + after);
            f_.fam_get_blocking(got.data(), item.descriptor.get(), 0, size);
        } else {
            for (uint64_t at = 0; at < size;) {
                uint64_t piece = std::min<uint64_t>(size - at, 1 + Below(256 << 10));
                Doing(Format("fam_get_nonblocking %s offset %llu + %llu after %s",
                             Name(item).c_str(), static_cast<unsigned long long>(at),
                             static_cast<unsigned long long>(piece), after));
                f_.fam_get_nonblocking(got.data() + at, item.descriptor.get(), at, piece);
                at += piece;
            }
            Doing("fam_quiet after the gets of " + Name(item) + " after " + after);
            f_.fam_quiet();
        }
        counts_.bytes_got += size;
        if (got == item.bytes) return;
        uint64_t first = 0, wrong = 0;
        for (uint64_t i = size; i-- > 0;) {
            if (got[i] != item.bytes[i]) first = i, ++wrong;
        }
        throw Mismatch(
            Format("%s after %s: offset %llu holds 0x%02x, expected 0x%02x "
                   "(%llu of %llu bytes differ)",
                   Name(item).c_str(), after, static_cast<unsigned long long>(first), got[first],
                   item.bytes[first], static_cast<unsigned long long>(wrong),
                   static_cast<unsigned long long>(size)));
    }

    // A new item of `size` bytes (random if 0) in `region` (random if null), not yet written.
    Item &NewItem(Region *region, uint64_t size) {
        if (!region) region = &regions_[Below(regions_.size())];
        if (!size) size = kMinItem + Below(kMaxItem - kMinItem + 1);
        auto item = std::make_unique<Item>();
        item->id = next_id_++;
        item->region = region;
        item->bytes.resize(size);
        Doing("fam_allocate " + Name(*item));
        item->descriptor.reset(f_.fam_allocate(size, 0600, region->descriptor.get()));
        live_.push_back(std::move(item));
        return *live_.back();
    }

    void Allocate() {
        Item &item = NewItem(nullptr, 0);
        Pattern(item.bytes, 0, item.bytes.size());
        Put(item, 0, item.bytes.size());
        Verify(item, "allocate and put");
        ++counts_.allocates;
    }

    void Deallocate(size_t index) {
        Doing("fam_deallocate " + Name(*live_[index]));
        f_.fam_deallocate(live_[index]->descriptor.get());
        live_.erase(live_.begin() + static_cast<ptrdiff_t>(index));
        ++counts_.deallocates;
    }

    void Rewrite(Item &item) {
        uint64_t size = item.bytes.size();
        uint64_t offset = Below(size), n = 1 + Below(size - offset);
        Pattern(item.bytes, offset, n);
        Put(item, offset, n);
        Verify(item, "rewrite");
        ++counts_.rewrites;
    }

    void Read(const Item &item) {
        Verify(item, "nothing new");
        ++counts_.reads;
    }

    // fam_fetch_add(1) on random counter words. Adds of one PE to one word are ordered, so
    // each fetches more than the one before (the other PEs only add).
    void Adds() {
        uint64_t n = 1 + Below(32);
        for (uint64_t i = 0; i < n; ++i) {
            int w = static_cast<int>(Below(kWords));
            Doing(Format("fam_fetch_add word %d of %scounter (add %llu of this PE)", w,
                         prefix_.c_str(), static_cast<unsigned long long>(counts_.adds + 1)));
            uint64_t old = f_.fam_fetch_add(words_.get(), w * kWordStride, uint64_t{1});
            ++counts_.adds;
            if (seen_word_[w] && old <= last_fetched_[w]) {
                throw Mismatch(
                    Format("fam_fetch_add word %d fetched %llu after %llu: an add "
                           "was lost or applied twice",
                           w, static_cast<unsigned long long>(old),
                           static_cast<unsigned long long>(last_fetched_[w])));
            }
            seen_word_[w] = true;
            last_fetched_[w] = old;
        }
    }

    void Copy() {
        size_t a = Below(live_.size()), b = Below(live_.size() - 1);
        if (b >= a) ++b;
        Item &from = *live_[a], &to = *live_[b];
        uint64_t most = std::min(from.bytes.size(), to.bytes.size());
        uint64_t n = 1 + Below(most);
        uint64_t src = Below(from.bytes.size() - n + 1), dest = Below(to.bytes.size() - n + 1);
        Doing(Format("fam_copy %s offset %llu to %s offset %llu, %llu bytes", Name(from).c_str(),
                     static_cast<unsigned long long>(src), Name(to).c_str(),
                     static_cast<unsigned long long>(dest), static_cast<unsigned long long>(n)));
        void *wait = f_.fam_copy(from.descriptor.get(), src, to.descriptor.get(), dest, n);
        f_.fam_copy_wait(wait);
        std::memcpy(to.bytes.data() + dest, from.bytes.data() + src, n);
        Verify(to, "fam_copy");
        ++counts_.copies;
    }

    // Backs up an item of a plain or RAID1 region, restores the backup into a new item of the
    // same size, checks it and deletes the backup. The restored item stays live.
    void Backup() {
        std::vector<Item *> candidates;
        for (auto &item : live_) {
            if (item->region->backups) candidates.push_back(item.get());
        }
        if (candidates.empty()) return Allocate();
        Item &from = *candidates[Below(candidates.size())];
        std::string name =
            Format("%spe%d-%ld-%llu", prefix_.c_str(), pe_, static_cast<long>(getpid()),
                   static_cast<unsigned long long>(counts_.backups));
        Doing("fam_backup " + Name(from) + " to \"" + name + "\"");
        f_.fam_backup_wait(f_.fam_backup(from.descriptor.get(), name.c_str(), nullptr));
        // Items live behind unique_ptrs: `from` stays valid as live_ grows.
        Item &to = NewItem(from.region, from.bytes.size());
        Doing("fam_restore \"" + name + "\" into " + Name(to));
        f_.fam_restore_wait(f_.fam_restore(name.c_str(), to.descriptor.get()));
        to.bytes = from.bytes;
        Verify(to, ("fam_restore of \"" + name + "\"").c_str());
        Doing("fam_delete_backup \"" + name + "\"");
        f_.fam_delete_backup_wait(f_.fam_delete_backup(name.c_str()));
        ++counts_.backups;
    }

    fam &f_;
    int pe_;
    std::string prefix_;
    std::mt19937_64 random_;
    std::vector<Region> regions_;
    std::vector<std::unique_ptr<Item>> live_;
    std::unique_ptr<Fam_Descriptor> words_;
    std::vector<uint64_t> last_fetched_;
    std::vector<bool> seen_word_;
    uint64_t next_id_ = 0;
    Counts counts_;
    std::string doing_ = "starting";
};

int Usage() {
    std::fprintf(stderr,
                 "usage: soak_worker PE SECONDS PREFIX [--redundant-only]\n"
                 "       soak_worker --setup PREFIX PES\n"
                 "       soak_worker --counter PREFIX\n");
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 3) return Usage();
    std::string first = argv[1];
    bool redundant_only = argc == 5 && std::string(argv[4]) == "--redundant-only";
    if (first == "--setup"     ? argc != 4
        : first == "--counter" ? argc != 3
                               : argc != 4 && !redundant_only) {
        return Usage();
    }
    fam f;
    std::unique_ptr<Soak> soak;
    const char *who = argv[1];
    try {
        f.fam_initialize("default", nullptr);
        int result = 0;
        if (first == "--setup") {
            result = Setup(f, argv[2], std::strtoull(argv[3], nullptr, 10));
        } else if (first == "--counter") {
            result = Counter(f, argv[2]);
        } else {
            soak = std::make_unique<Soak>(f, std::atoi(argv[1]), argv[3]);
            soak->Open(redundant_only);
            soak->Run(std::strtod(argv[2], nullptr));
            const Counts &c = soak->counts();
            std::printf(
                "soak_worker %s: ops=%llu adds=%llu (allocate %llu, rewrite %llu, read "
                "%llu, deallocate %llu, copy %llu, backup %llu; %.1f MiB put, %.1f MiB "
                "got)\n",
                who, static_cast<unsigned long long>(c.ops),
                static_cast<unsigned long long>(c.adds),
                static_cast<unsigned long long>(c.allocates),
                static_cast<unsigned long long>(c.rewrites),
                static_cast<unsigned long long>(c.reads),
                static_cast<unsigned long long>(c.deallocates),
                static_cast<unsigned long long>(c.copies),
                static_cast<unsigned long long>(c.backups), c.bytes_put / 1048576.0,
                c.bytes_got / 1048576.0);
        }
        f.fam_finalize("default");
        return result;
    } catch (const Fam_Exception &e) {
        std::fprintf(stderr, "soak_worker %s: FAILED in %s: Fam_Exception %d: %s\n", who,
                     soak ? soak->doing().c_str() : first.c_str(), e.fam_error(),
                     e.fam_error_msg());
    } catch (const Mismatch &e) {
        std::fprintf(stderr, "soak_worker %s: FAILED: mismatch: %s\n", who, e.what());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "soak_worker %s: FAILED in %s: %s\n", who,
                     soak ? soak->doing().c_str() : first.c_str(), e.what());
    }
    if (soak) {
        const Counts &c = soak->counts();
        std::fprintf(stderr, "soak_worker %s: after ops=%llu adds=%llu\n", who,
                     static_cast<unsigned long long>(c.ops),
                     static_cast<unsigned long long>(c.adds));
    }
    return 1;
}
