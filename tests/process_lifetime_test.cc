// Processes come and go around one FAM: persistent regions outlive the process that wrote them,
// 32 processes can initialize an empty data directory at once, and a process killed in the
// middle of allocating leaves metadata that neither leaks nor double-allocates space
// (multiprocess_test.cc: sharing and atomics).
//
// Every test forks its children before its own fam object is created (or never creates one),
// so no child inherits an initialized fam; children make their own with ScopedFam.
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess.h"

namespace fampool_test {
namespace {

using openfam::Fam_Exception;

// ---------------------------------------------------------------------------------------------
// Regions that outlive the process that wrote them

TEST_F(MultiProcessTest, PersistentRegionWrittenByOneProcessIsVerifiedByTheNext) {
    constexpr uint64_t kRegionSize = 16 << 20;
    constexpr uint64_t kSize = 8 << 20;
    int rc = RunInChild(
        [] {
            ScopedFam f;
            Fam_Region_Attributes attrs = FamAttributes(PERSISTENT);
            std::unique_ptr<Fam_Region_Descriptor> region(
                f->fam_create_region("kept", kRegionSize, 0700, &attrs));
            std::unique_ptr<Fam_Descriptor> item(
                f->fam_allocate("blob", kSize, 0600, region.get()));
            PutPattern(f.get(), item.get(), kSize, 31);
            f.Finalize();
            return 0;
        },
        120);
    ASSERT_EQ(rc, 0) << "writer child failed";

    // Persistent heaps live in the data directory, not with the volatile ones.
    EXPECT_GE(LargestFile(home_dir() + "/heaps"), kSize)
        << "no heap file under $FAMPOOL_HOME/heaps";
    EXPECT_LT(LargestFile(shm_dir()), kSize) << "a persistent heap is in $FAMPOOL_SHM_DIR";

    rc = RunInChild(
        [] {
            ScopedFam f;
            std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("kept"));
            CHILD_EXPECT(region->get_memoryType() == PERSISTENT);
            Fam_Stat region_stat{};
            f->fam_stat(region.get(), &region_stat);
            CHILD_EXPECT(region_stat.region_attributes.memoryType == PERSISTENT);
            CHILD_EXPECT(region_stat.size == kRegionSize);
            std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("blob", "kept"));
            CHILD_EXPECT(item->get_size() == kSize);
            CHILD_EXPECT(CheckPattern(f.get(), item.get(), kSize, 31) < 0);
            f.Finalize();
            return 0;
        },
        120);
    EXPECT_EQ(rc, 0) << "reader child failed";
}

TEST_F(MultiProcessTest, VolatileRegionIsReadableByAnotherProcessWhileItExists) {
    constexpr uint64_t kRegionSize = 4 << 20;
    constexpr uint64_t kSize = 1 << 20;
    SharedArray<std::atomic<int>> written(1);
    StartGate release;
    ASSERT_TRUE(release.valid());
    // The writer keeps its fam open until the parent releases it.
    ForkedChild writer([&] {
        ScopedFam f;
        Fam_Region_Attributes attrs = FamAttributes(VOLATILE);
        std::unique_ptr<Fam_Region_Descriptor> region(
            f->fam_create_region("vol", kRegionSize, 0700, &attrs));
        std::unique_ptr<Fam_Descriptor> item(f->fam_allocate("v", kSize, 0600, region.get()));
        PutPattern(f.get(), item.get(), kSize, 41);
        written[0] = 1;
        release.Pass();
        f.Finalize();
        return 0;
    });
    auto deadline = SteadyClock::now() + std::chrono::seconds(60);
    while (written[0].load() == 0 && writer.running() && SteadyClock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(written[0].load(), 1) << "writer did not write (it ended or timed out)";

    auto read_back = [] {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("vol"));
        CHILD_EXPECT(region->get_memoryType() == VOLATILE);
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("v", "vol"));
        CHILD_EXPECT(item->get_size() == kSize);
        CHILD_EXPECT(CheckPattern(f.get(), item.get(), kSize, 41) < 0);
        f.Finalize();
        return 0;
    };
    EXPECT_EQ(RunInChild(read_back, 60), 0) << "reader failed while the writer was alive";
    EXPECT_TRUE(writer.running()) << "the writer should still hold its fam";
    release.Open();
    ASSERT_EQ(writer.Wait(60), 0) << "writer failed";
    EXPECT_EQ(RunInChild(read_back, 60), 0) << "reader failed after the writer exited";
    // Volatile heaps live in $FAMPOOL_SHM_DIR.
    EXPECT_GE(LargestFile(shm_dir()), kSize) << "no volatile heap file in $FAMPOOL_SHM_DIR";
}

TEST_F(MultiProcessTest, RegionDestroyedByOneProcessIsNotFoundByAnother) {
    auto create = [] {
        ScopedFam f;
        Fam_Region_Attributes attrs = FamAttributes(VOLATILE);
        std::unique_ptr<Fam_Region_Descriptor> region(
            f->fam_create_region("gone", 4 << 20, 0700, &attrs));
        std::unique_ptr<Fam_Descriptor> item(f->fam_allocate("x", 1 << 20, 0600, region.get()));
        PutPattern(f.get(), item.get(), 1 << 20, 51);
        f.Finalize();
        return 0;
    };
    ASSERT_EQ(RunInChild(create, 60), 0) << "creating child failed";
    ASSERT_EQ(RunInChild(
                  [] {
                      ScopedFam f;
                      std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("gone"));
                      f->fam_destroy_region(region.get());
                      f.Finalize();
                      return 0;
                  },
                  60),
              0)
        << "destroying child failed";
    EXPECT_EQ(RunInChild(
                  [] {
                      ScopedFam f;
                      CHILD_EXPECT_FAM_ERROR(delete f->fam_lookup_region("gone"),
                                             openfam::FAM_ERR_NOTFOUND);
                      CHILD_EXPECT_FAM_ERROR(delete f->fam_lookup("x", "gone"),
                                             openfam::FAM_ERR_NOTFOUND);
                      f.Finalize();
                      return 0;
                  },
                  60),
              0)
        << "a third process still found the destroyed region";
    EXPECT_EQ(LargestFile(shm_dir()), 0u) << "the destroyed region's heap file is still there";
    // The name is free again.
    ASSERT_EQ(RunInChild(create, 60), 0) << "recreating the region failed";
}

// ---------------------------------------------------------------------------------------------
// Many processes starting at once on an empty data directory

TEST_F(MultiProcessTest, ThirtyTwoProcessesInitializingTogetherOnEmptyHomeAllSucceed) {
    constexpr int kProcs = 32;
    ASSERT_TRUE(ListFiles(home_dir()).empty()) << "FAMPOOL_HOME is not empty to begin with";
    SharedArray<std::atomic<int>> stage(kProcs);  // 1 initialized, 2 region, 3 item, 4 done
    StartGate gate;
    ASSERT_TRUE(gate.valid());
    std::vector<std::unique_ptr<ForkedChild>> children;
    for (int p = 0; p < kProcs; p++) {
        children.push_back(std::make_unique<ForkedChild>([&, p] {
            gate.Pass();
            ScopedFam f;
            stage[p] = 1;
            std::string name = "p" + std::to_string(p);
            std::unique_ptr<Fam_Region_Descriptor> region(
                f->fam_create_region(name.c_str(), 1 << 20, 0700, nullptr));
            stage[p] = 2;
            std::unique_ptr<Fam_Descriptor> item(f->fam_allocate("item", 64, 0600, region.get()));
            f->fam_set(item.get(), 0, uint64_t(1000 + p));
            stage[p] = 3;
            f.Finalize();
            stage[p] = 4;
            return 0;
        }));
    }
    auto start = SteadyClock::now();
    gate.Open();
    std::vector<int> results = WaitAll(children, 300);
    printf("%d processes initialized, created and allocated in %.2f s\n", kProcs,
           SecondsSince(start));
    for (int p = 0; p < kProcs; p++) {
        EXPECT_EQ(results[p], 0) << "process " << p << " (reached stage " << stage[p].load()
                                 << " of 4)";
    }

    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    for (int p = 0; p < kProcs; p++) {
        std::string name = "p" + std::to_string(p);
        CaughtError caught = CatchFamError([&] {
            std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region(name.c_str()));
            std::unique_ptr<Fam_Descriptor> item(fam()->fam_lookup("item", name.c_str()));
            EXPECT_EQ(fam()->fam_fetch_uint64(item.get(), 0), uint64_t(1000 + p))
                << "region " << name;
        });
        EXPECT_FALSE((caught.code != openfam::FAM_NO_ERROR))
            << "region " << name << ": " << FamErrorName(caught.code) << ": " << caught.message;
    }
}

// ---------------------------------------------------------------------------------------------
// A process killed while allocating

constexpr uint64_t kCrashRegionSize = 2 << 20;  // a power of two, so the checker can fill it
constexpr int kCrashNames = 64;                 // the crashing child uses "c0".."c63"
constexpr uint64_t kCrashMaxItem = 16384;       // 64 items fill at most half the region
constexpr uint64_t kItemAlignment = 64;         // docs/semantics.md: items aligned to 64 bytes

uint64_t RoundToAlignment(uint64_t n) { return (n + kItemAlignment - 1) & ~(kItemAlignment - 1); }

std::string CrashName(int i) { return "c" + std::to_string(i); }

struct CrashProgress {
    std::atomic<int> ready;     // the child is in its loop
    std::atomic<uint64_t> ops;  // allocations and deallocations completed
};

struct CrashCheckReport {
    uint64_t live_items;
    uint64_t live_bytes;  // rounded to the alignment
    uint64_t fill_items;
    uint64_t fill_bytes;
};

// Allocates and deallocates named items of random sizes until it is killed (it gives up after
// 60 s, so that it ends even if nobody kills it). Each new item is filled with 0xC5, so that a
// later allocation of the same space shows whether it was zeroed.
int CrashingAllocator(uint64_t seed, CrashProgress *progress) {
    ScopedFam f;
    std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("crash"));
    std::vector<std::string> names;
    std::vector<std::unique_ptr<Fam_Descriptor>> held(kCrashNames);
    for (int i = 0; i < kCrashNames; i++) {
        names.push_back(CrashName(i));
        CaughtError caught =
            CatchFamError([&] { held[i].reset(f->fam_lookup(names[i].c_str(), "crash")); });
        if ((caught.code != openfam::FAM_NO_ERROR) && caught.code != openfam::FAM_ERR_NOTFOUND) {
            fprintf(stderr, "crashing child: fam_lookup %s: %s\n", names[i].c_str(),
                    caught.message.c_str());
            return 2;
        }
    }
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> junk(kCrashMaxItem, 0xC5);
    auto start = SteadyClock::now();
    progress->ready = 1;
    while (SecondsSince(start) < 60) {
        int i = static_cast<int>(rng() % kCrashNames);
        if (held[i]) {
            f->fam_deallocate(held[i].get());
            held[i].reset();
        } else {
            uint64_t size = 1 + rng() % kCrashMaxItem;
            try {
                held[i].reset(f->fam_allocate(names[i].c_str(), size, 0600, region.get()));
            } catch (const Fam_Exception &e) {
                if (e.fam_error() != openfam::FAM_ERR_NO_SPACE) throw;
                continue;
            }
            f->fam_put_blocking(junk.data(), held[i].get(), 0, size);
        }
        progress->ops++;
    }
    return 3;
}

// In a fresh process: every item the crashed child left must be intact and disjoint from every
// other, and the free space plus the live items must be the whole region. Fills the free space
// with unnamed items (largest first, halving down to the alignment), checks the sum, checks the
// new items read as zeros, writes a distinct pattern over every item and reads each back, then
// frees the fill items again.
int CheckCrashRegion(uint32_t round, CrashCheckReport *report) {
    ScopedFam f;
    std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("crash"));
    CHILD_EXPECT(region->get_size() == kCrashRegionSize);

    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    std::vector<uint64_t> sizes;
    *report = CrashCheckReport{};
    for (int i = 0; i < kCrashNames; i++) {
        std::string name = CrashName(i);
        Fam_Descriptor *d = nullptr;
        CaughtError caught = CatchFamError([&] { d = f->fam_lookup(name.c_str(), "crash"); });
        if (caught.code == openfam::FAM_ERR_NOTFOUND) continue;
        if ((caught.code != openfam::FAM_NO_ERROR)) {
            fprintf(stderr, "checker: fam_lookup %s: %s\n", name.c_str(), caught.message.c_str());
            return 1;
        }
        items.emplace_back(d);
        Fam_Stat st{};
        f->fam_stat(d, &st);
        if (st.size < 1 || st.size > kCrashMaxItem || d->get_size() != st.size) {
            fprintf(stderr, "checker: item %s has size %" PRIu64 " (descriptor %" PRIu64 ")\n",
                    name.c_str(), st.size, d->get_size());
            return 1;
        }
        sizes.push_back(st.size);
        report->live_items++;
        report->live_bytes += RoundToAlignment(st.size);
    }
    size_t live = items.size();

    for (uint64_t chunk = kCrashRegionSize; chunk >= kItemAlignment;) {
        Fam_Descriptor *d = nullptr;
        CaughtError caught = CatchFamError([&] { d = f->fam_allocate(chunk, 0600, region.get()); });
        if (caught.code == openfam::FAM_ERR_NO_SPACE) {
            chunk /= 2;
            continue;
        }
        if ((caught.code != openfam::FAM_NO_ERROR)) {
            fprintf(stderr, "checker: fam_allocate(%" PRIu64 "): %s: %s\n", chunk,
                    FamErrorName(caught.code).c_str(), caught.message.c_str());
            return 1;
        }
        items.emplace_back(d);
        sizes.push_back(chunk);
        report->fill_items++;
        report->fill_bytes += chunk;
        CHILD_EXPECT(report->fill_items < 100000);
    }
    if (report->live_bytes + report->fill_bytes != kCrashRegionSize) {
        fprintf(
            stderr,
            "checker: %" PRIu64 " live items hold %" PRIu64 " bytes, %" PRIu64
            " fill items got %" PRIu64 " bytes: %" PRIu64 " in all, region is %" PRIu64 " (%s)\n",
            report->live_items, report->live_bytes, report->fill_items, report->fill_bytes,
            report->live_bytes + report->fill_bytes, kCrashRegionSize,
            report->live_bytes + report->fill_bytes < kCrashRegionSize ? "space leaked"
                                                                       : "space allocated twice");
        return 1;
    }

    for (size_t k = live; k < items.size(); k++) {
        std::vector<uint8_t> got(sizes[k], 0xFF);
        f->fam_get_blocking(got.data(), items[k].get(), 0, sizes[k]);
        for (uint64_t b = 0; b < sizes[k]; b++) {
            if (got[b] != 0) {
                fprintf(stderr,
                        "checker: new item of %" PRIu64 " bytes not zeroed at %" PRIu64 "\n",
                        sizes[k], b);
                return 1;
            }
        }
    }
    for (size_t k = 0; k < items.size(); k++) {
        std::vector<uint8_t> bytes = PatternAt(0, sizes[k], round * 1000 + k);
        f->fam_put_blocking(bytes.data(), items[k].get(), 0, sizes[k]);
    }
    for (size_t k = 0; k < items.size(); k++) {
        std::vector<uint8_t> got(sizes[k]);
        f->fam_get_blocking(got.data(), items[k].get(), 0, sizes[k]);
        int64_t bad = FirstPatternMismatch(got, 0, round * 1000 + k);
        if (bad >= 0) {
            fprintf(stderr,
                    "checker: item %zu (%s, %" PRIu64 " bytes) overwritten at %" PRId64
                    ": two items overlap\n",
                    k, k < live ? "live" : "fill", sizes[k], bad);
            return 1;
        }
    }
    for (size_t k = live; k < items.size(); k++) f->fam_deallocate(items[k].get());
    f.Finalize();
    return 0;
}

TEST_F(MultiProcessTest, SigkillWhileAllocatingLeavesNoLeakAndNoOverlap) {
    constexpr int kRounds = 10;
    ASSERT_EQ(RunInChild(
                  [] {
                      ScopedFam f;
                      Fam_Region_Attributes attrs = FamAttributes(VOLATILE);
                      delete f->fam_create_region("crash", kCrashRegionSize, 0700, &attrs);
                      f.Finalize();
                      return 0;
                  },
                  60),
              0)
        << "creating the region failed";

    uint64_t seed = std::random_device{}();
    printf("crash test seed %" PRIu64 "\n", seed);
    std::mt19937_64 rng(seed);
    SharedArray<CrashProgress> progress(1);
    SharedArray<CrashCheckReport> report(1);
    for (int round = 0; round < kRounds; round++) {
        progress[0].ready = 0;
        progress[0].ops = 0;
        uint64_t child_seed = rng();
        ForkedChild crasher([&] { return CrashingAllocator(child_seed, &progress[0]); });
        auto deadline = SteadyClock::now() + std::chrono::seconds(60);
        while (progress[0].ready.load() == 0 && crasher.running() &&
               SteadyClock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ASSERT_EQ(progress[0].ready.load(), 1)
            << "round " << round << ": the crashing child never started its loop (status "
            << crasher.Wait(0) << ")";
        int delay_ms = 50 + static_cast<int>(rng() % 251);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        ASSERT_TRUE(crasher.running())
            << "round " << round << ": the crashing child ended by itself with status "
            << crasher.Wait(0);
        crasher.Kill(SIGKILL);
        ASSERT_EQ(crasher.Wait(30), 128 + SIGKILL);
        uint64_t ops = progress[0].ops.load();
        EXPECT_GT(ops, 0u) << "round " << round << ": killed before any allocation completed";

        int rc = RunInChild([&] { return CheckCrashRegion(round, &report[0]); }, 120);
        printf("round %d: killed after %d ms and %" PRIu64 " ops; %" PRIu64 " live items (%" PRIu64
               " bytes), %" PRIu64 " fill items (%" PRIu64 " bytes)\n",
               round, delay_ms, ops, report[0].live_items, report[0].live_bytes,
               report[0].fill_items, report[0].fill_bytes);
        ASSERT_EQ(rc, 0) << "round " << round << ": metadata inconsistent after SIGKILL (see "
                         << "the checker's message above)";
    }
}

}  // namespace
}  // namespace fampool_test
