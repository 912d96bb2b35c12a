// Several processes on one FAM: data and names written by one process are seen by the others,
// and atomics from many processes and threads add up exactly (process_lifetime_test.cc: regions
// that outlive their writer, processes starting at once, a process killed while allocating).
//
// Every test forks its children before its own fam object is created (or never creates one),
// so no child inherits an initialized fam; children make their own with ScopedFam.
#include "multiprocess.h"

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

namespace fampool_test {
namespace {

using openfam::Fam_Exception;

// ---------------------------------------------------------------------------------------------
// Sharing a region between two processes

TEST_F(MultiProcessTest, ItemWrittenByChildIsReadByParent) {
    constexpr uint64_t kSize = 1 << 20;
    int rc = RunInChild(
        [] {
            ScopedFam f;
            std::unique_ptr<Fam_Region_Descriptor> region(
                f->fam_create_region("shared", 16 << 20, 0700, nullptr));
            std::unique_ptr<Fam_Descriptor> item(
                f->fam_allocate("item", kSize, 0600, region.get()));
            PutPattern(f.get(), item.get(), kSize, 11);
            f.Finalize();
            return 0;
        },
        60);
    ASSERT_EQ(rc, 0) << "writer child failed";

    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    std::unique_ptr<Fam_Descriptor> item(fam()->fam_lookup("item", "shared"));
    ASSERT_NE(item, nullptr);
    EXPECT_EQ(item->get_size(), kSize);
    EXPECT_TRUE(MatchesPattern(GetBytes(item.get(), 0, kSize), 0, 11));
}

TEST_F(MultiProcessTest, ItemWrittenByParentIsReadByChildWhileParentHoldsIt) {
    constexpr uint64_t kSize = 1 << 20;
    constexpr uint64_t kHalf = kSize / 2;
    StartGate gate;
    ASSERT_TRUE(gate.valid());
    // The child reads the parent's first half and answers in the second half.
    ForkedChild reader([&] {
        gate.Pass();
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("item", "shared"));
        CHILD_EXPECT(item->get_size() == kSize);
        std::vector<uint8_t> got(kHalf);
        f->fam_get_blocking(got.data(), item.get(), 0, kHalf);
        CHILD_EXPECT(FirstPatternMismatch(got, 0, 21) < 0);
        std::vector<uint8_t> answer = PatternAt(kHalf, kHalf, 22);
        f->fam_put_blocking(answer.data(), item.get(), kHalf, kHalf);
        f.Finalize();
        return 0;
    });

    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    auto region = CreateRegion("shared", 16 << 20, 0700);
    ASSERT_NE(region, nullptr);
    auto item = Allocate("item", kSize, region.get(), 0600);
    ASSERT_NE(item, nullptr);
    PutBytes(item.get(), 0, PatternAt(0, kHalf, 21));
    gate.Open();

    ASSERT_EQ(reader.Wait(60), 0) << "reader child failed";
    // The parent's descriptor, taken before the child wrote, sees the child's bytes.
    EXPECT_TRUE(MatchesPattern(GetBytes(item.get(), kHalf, kHalf), kHalf, 22));
    EXPECT_TRUE(MatchesPattern(GetBytes(item.get(), 0, kHalf), 0, 21));
}

TEST_F(MultiProcessTest, ItemDeallocatedByChildIsNotFoundByParent) {
    StartGate gate;
    ASSERT_TRUE(gate.valid());
    ForkedChild deallocator([&] {
        gate.Pass();
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("item", "shared"));
        f->fam_deallocate(item.get());
        f.Finalize();
        return 0;
    });

    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    auto region = CreateRegion("shared", 1 << 20, 0700);
    ASSERT_NE(region, nullptr);
    auto item = Allocate("item", 4096, region.get(), 0600);
    ASSERT_NE(item, nullptr);
    // The parent has looked the item up once, so a cache could remember it.
    std::unique_ptr<Fam_Descriptor> looked_up(fam()->fam_lookup("item", "shared"));
    ASSERT_NE(looked_up, nullptr);
    gate.Open();

    ASSERT_EQ(deallocator.Wait(60), 0) << "deallocating child failed";
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("item", "shared"), openfam::FAM_ERR_NOTFOUND,
                     "fam_lookup");
}

// ---------------------------------------------------------------------------------------------
// Atomics from several processes

constexpr int kAtomicProcs = 4;
constexpr int kAtomicThreads = 2;
constexpr uint64_t kAtomicOpsPerThread = 20000;
constexpr uint64_t kAtomicTotal = kAtomicProcs * kAtomicThreads * kAtomicOpsPerThread;

// What one thread of one child saw.
struct AtomicThreadReport {
    std::atomic<uint64_t> done;          // iterations completed
    std::atomic<uint64_t> not_rising;    // fetch_add results not above the thread's previous one
    std::atomic<uint64_t> out_of_range;  // fetch_add results >= kAtomicTotal
    std::atomic<uint64_t> duplicates;    // fetch_add results some other call also got
    std::atomic<uint64_t> failed;        // a call threw
};

TEST_F(MultiProcessTest, FetchAddAndAddFromFourProcessesOfTwoThreadsAreExact) {
    static_assert(std::atomic<uint64_t>::is_always_lock_free);
    SharedArray<AtomicThreadReport> reports(kAtomicProcs * kAtomicThreads);
    // One bit per possible fetch_add result: each must be handed out exactly once.
    SharedArray<std::atomic<uint64_t>> seen(kAtomicTotal / 64 + 1);
    StartGate gate;
    ASSERT_TRUE(gate.valid());

    std::vector<std::unique_ptr<ForkedChild>> children;
    for (int p = 0; p < kAtomicProcs; p++) {
        children.push_back(std::make_unique<ForkedChild>([&, p] {
            gate.Pass();
            Fam_Options options = ThreadMultipleOptions();
            ScopedFam f(&options);
            std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("counters", "atomics"));
            std::vector<std::thread> threads;
            for (int t = 0; t < kAtomicThreads; t++) {
                threads.emplace_back([&, t] {
                    AtomicThreadReport &r = reports[p * kAtomicThreads + t];
                    try {
                        uint64_t previous = 0;
                        for (uint64_t i = 0; i < kAtomicOpsPerThread; i++) {
                            uint64_t v = f->fam_fetch_add(item.get(), 0, uint64_t{1});
                            if (i > 0 && v <= previous) r.not_rising++;
                            previous = v;
                            if (v >= kAtomicTotal) {
                                r.out_of_range++;
                            } else if (seen[v / 64].fetch_or(1ull << (v % 64)) &
                                       (1ull << (v % 64))) {
                                r.duplicates++;
                            }
                            f->fam_add(item.get(), 8, int64_t{-1});
                            f->fam_add(item.get(), 16, 0.5);
                            r.done++;
                        }
                    } catch (const Fam_Exception &e) {
                        fprintf(stderr, "process %d thread %d: %s\n", p, t, e.what());
                        r.failed++;
                    }
                });
            }
            for (auto &th : threads) th.join();
            f.Finalize();
            return 0;
        }));
    }

    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    auto region = CreateRegion("atomics", 1 << 20, 0700);
    ASSERT_NE(region, nullptr);
    auto item = Allocate("counters", 64, region.get(), 0600);
    ASSERT_NE(item, nullptr);
    auto start = SteadyClock::now();
    gate.Open();
    std::vector<int> results = WaitAll(children, 300);
    printf("%d processes x %d threads x %" PRIu64 " x 3 atomics: %.2f s\n", kAtomicProcs,
           kAtomicThreads, kAtomicOpsPerThread, SecondsSince(start));
    for (int p = 0; p < kAtomicProcs; p++) EXPECT_EQ(results[p], 0) << "process " << p;

    for (int i = 0; i < kAtomicProcs * kAtomicThreads; i++) {
        AtomicThreadReport &r = reports[i];
        EXPECT_EQ(r.failed.load(), 0u) << "thread " << i;
        EXPECT_EQ(r.done.load(), kAtomicOpsPerThread) << "thread " << i;
        EXPECT_EQ(r.not_rising.load(), 0u) << "thread " << i;
        EXPECT_EQ(r.out_of_range.load(), 0u) << "thread " << i;
        EXPECT_EQ(r.duplicates.load(), 0u) << "thread " << i;
    }
    EXPECT_EQ(fam()->fam_fetch_uint64(item.get(), 0), kAtomicTotal);
    EXPECT_EQ(fam()->fam_fetch_int64(item.get(), 8), -static_cast<int64_t>(kAtomicTotal));
    EXPECT_EQ(fam()->fam_fetch_double(item.get(), 16), 0.5 * kAtomicTotal);
}

TEST_F(MultiProcessTest, CompareSwapCounterFromFourProcessesIsExact) {
    constexpr uint64_t kIncrements = 5000;
    SharedArray<std::atomic<uint64_t>> retries(kAtomicProcs);
    StartGate gate;
    ASSERT_TRUE(gate.valid());
    std::vector<std::unique_ptr<ForkedChild>> children;
    for (int p = 0; p < kAtomicProcs; p++) {
        children.push_back(std::make_unique<ForkedChild>([&, p] {
            gate.Pass();
            ScopedFam f;
            std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("word", "cas"));
            for (uint64_t i = 0; i < kIncrements; i++) {
                uint64_t expected = f->fam_fetch_uint64(item.get(), 0);
                for (;;) {
                    uint64_t previous = f->fam_compare_swap(item.get(), 0, expected, expected + 1);
                    if (previous == expected) break;
                    retries[p]++;
                    expected = previous;
                }
            }
            f.Finalize();
            return 0;
        }));
    }

    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    auto region = CreateRegion("cas", 1 << 20, 0700);
    ASSERT_NE(region, nullptr);
    auto item = Allocate("word", 64, region.get(), 0600);
    ASSERT_NE(item, nullptr);
    gate.Open();
    std::vector<int> results = WaitAll(children, 300);
    uint64_t total_retries = 0;
    for (int p = 0; p < kAtomicProcs; p++) {
        EXPECT_EQ(results[p], 0) << "process " << p;
        total_retries += retries[p].load();
    }
    printf("compare_swap counter: %" PRIu64 " retries\n", total_retries);
    EXPECT_EQ(fam()->fam_fetch_uint64(item.get(), 0), kAtomicProcs * kIncrements);
}

// A 128-bit counter whose high half is a function of its low half: a torn read or write
// shows up as a pair that does not match.
constexpr uint64_t kTearMultiplier = 0x9E3779B97F4A7C15ull;
int128_t EncodeCounter128(uint64_t count) {
    unsigned __int128 v = (static_cast<unsigned __int128>(count * kTearMultiplier) << 64) | count;
    return static_cast<int128_t>(v);
}
uint64_t CounterLow(int128_t v) { return static_cast<uint64_t>(static_cast<unsigned __int128>(v)); }
bool CounterIsWhole(int128_t v) {
    auto u = static_cast<unsigned __int128>(v);
    return static_cast<uint64_t>(u >> 64) == static_cast<uint64_t>(u) * kTearMultiplier;
}

TEST_F(MultiProcessTest, CompareSwapInt128CounterFromFourProcessesIsExactAndNeverTorn) {
    constexpr uint64_t kIncrements = 2000;
    SharedArray<std::atomic<uint64_t>> torn(kAtomicProcs);
    StartGate gate;
    ASSERT_TRUE(gate.valid());
    std::vector<std::unique_ptr<ForkedChild>> children;
    for (int p = 0; p < kAtomicProcs; p++) {
        children.push_back(std::make_unique<ForkedChild>([&, p] {
            gate.Pass();
            ScopedFam f;
            std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("word", "cas"));
            for (uint64_t i = 0; i < kIncrements; i++) {
                int128_t expected = f->fam_fetch_int128(item.get(), 0);
                for (;;) {
                    if (!CounterIsWhole(expected)) {
                        torn[p]++;
                        expected = EncodeCounter128(CounterLow(expected));
                    }
                    int128_t next = EncodeCounter128(CounterLow(expected) + 1);
                    int128_t previous = f->fam_compare_swap(item.get(), 0, expected, next);
                    if (previous == expected) break;
                    expected = previous;
                }
            }
            f.Finalize();
            return 0;
        }));
    }

    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    auto region = CreateRegion("cas", 1 << 20, 0700);
    ASSERT_NE(region, nullptr);
    auto item = Allocate("word", 64, region.get(), 0600);
    ASSERT_NE(item, nullptr);
    gate.Open();
    std::vector<int> results = WaitAll(children, 300);
    for (int p = 0; p < kAtomicProcs; p++) {
        EXPECT_EQ(results[p], 0) << "process " << p;
        EXPECT_EQ(torn[p].load(), 0u) << "process " << p << " saw torn 128-bit values";
    }
    int128_t final_value = fam()->fam_fetch_int128(item.get(), 0);
    EXPECT_TRUE(CounterIsWhole(final_value));
    EXPECT_EQ(CounterLow(final_value), kAtomicProcs * kIncrements);
}

TEST_F(MultiProcessTest, CompareSwapLockMakesGetIncrementPutFromFourProcessesExact) {
    // Layout of item "word": lock word (int64, 0 = free, else holder's number) at 0, a counter
    // updated with plain get/put at 64, the holder's number written inside the lock at 128.
    constexpr uint64_t kIncrements = 1000;
    SharedArray<std::atomic<uint64_t>> violations(kAtomicProcs);
    StartGate gate;
    ASSERT_TRUE(gate.valid());
    std::vector<std::unique_ptr<ForkedChild>> children;
    for (int p = 0; p < kAtomicProcs; p++) {
        children.push_back(std::make_unique<ForkedChild>([&, p] {
            gate.Pass();
            ScopedFam f;
            std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("word", "cas"));
            int64_t me = p + 1;
            for (uint64_t i = 0; i < kIncrements; i++) {
                while (f->fam_compare_swap(item.get(), 0, int64_t{0}, me) != 0) sched_yield();
                f->fam_put_blocking(&me, item.get(), 128, sizeof me);
                uint64_t counter = 0;
                f->fam_get_blocking(&counter, item.get(), 64, sizeof counter);
                counter++;
                f->fam_put_blocking(&counter, item.get(), 64, sizeof counter);
                int64_t holder = 0;
                f->fam_get_blocking(&holder, item.get(), 128, sizeof holder);
                if (holder != me) violations[p]++;
                if (f->fam_compare_swap(item.get(), 0, me, int64_t{0}) != me) violations[p]++;
            }
            f.Finalize();
            return 0;
        }));
    }

    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    auto region = CreateRegion("cas", 1 << 20, 0700);
    ASSERT_NE(region, nullptr);
    auto item = Allocate("word", 256, region.get(), 0600);
    ASSERT_NE(item, nullptr);
    gate.Open();
    std::vector<int> results = WaitAll(children, 300);
    for (int p = 0; p < kAtomicProcs; p++) {
        EXPECT_EQ(results[p], 0) << "process " << p;
        EXPECT_EQ(violations[p].load(), 0u) << "process " << p << " shared the lock";
    }
    EXPECT_EQ(fam()->fam_fetch_int64(item.get(), 0), 0) << "lock left held";
    uint64_t counter = 0;
    fam()->fam_get_blocking(&counter, item.get(), 64, sizeof counter);
    EXPECT_EQ(counter, kAtomicProcs * kIncrements);
}

}  // namespace
}  // namespace fampool_test
