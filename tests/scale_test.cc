// Scale: a 64 TiB region on a sparse heap, and a million named items in one region. Each test
// prints the time of each phase and bounds it, so a slow implementation fails instead of
// running into the CTest timeout.
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Bytes of memory (or disk) the files under `dir` really use, holes not counted.
uint64_t AllocatedBytes(const std::string &dir) {
    uint64_t total = 0;
    for (const FileEntry &f : ListFiles(dir)) {
        struct stat st {};
        if (stat(f.path.c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_blocks) * 512;
    }
    return total;
}

class ScaleTest : public FamTest {};

// ---------------------------------------------------------------------------------------------
// A 64 TiB region

TEST_F(ScaleTest, SixtyFourTebibyteVolatileRegionHoldsItemsAtBothEnds) {
    constexpr uint64_t kRegionSize = 64ull << 40;
    constexpr uint64_t kItemSize = 1ull << 30;
    constexpr uint64_t kFillerSize = kRegionSize - 2 * kItemSize;

    auto start = Clock::now();
    Fam_Region_Attributes attrs = FamAttributes(VOLATILE);
    auto region = CreateRegion("huge", kRegionSize, 0700, &attrs);
    ASSERT_NE(region, nullptr);
    printf("create 64 TiB region: %.3f s\n", SecondsSince(start));
    Fam_Stat region_stat{};
    fam()->fam_stat(region.get(), &region_stat);
    EXPECT_EQ(region_stat.size, kRegionSize);

    // first takes the start of the region, filler the middle, last what is left: the end.
    start = Clock::now();
    auto first = Allocate("first", kItemSize, region.get(), 0600);
    ASSERT_NE(first, nullptr);
    auto filler = Allocate("filler", kFillerSize, region.get(), 0600);
    ASSERT_NE(filler, nullptr);
    auto last = Allocate("last", kItemSize, region.get(), 0600);
    ASSERT_NE(last, nullptr);
    printf("allocate 1 GiB + (64 TiB - 2 GiB) + 1 GiB: %.3f s\n", SecondsSince(start));
    // Nothing is left, so `last` really ends at the region's end.
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("extra", 64, 0600, region.get()),
                     openfam::FAM_ERR_NO_SPACE, "fam_allocate");

    start = Clock::now();
    const std::vector<uint8_t> zeros(16, 0);
    struct Probe {
        const char *what;
        Fam_Descriptor *item;
        uint64_t offset;
    };
    const Probe probes[] = {
        {"start of first", first.get(), 0},
        {"end of first", first.get(), kItemSize - 16},
        {"start of filler", filler.get(), 0},
        {"end of filler", filler.get(), kFillerSize - 16},
        {"start of last", last.get(), 0},
        {"end of last (end of the region)", last.get(), kItemSize - 16},
    };
    uint32_t seed = 1;
    for (const Probe &p : probes) {
        EXPECT_EQ(GetBytes(p.item, p.offset, 16), zeros) << p.what << " is not zero-filled";
        PutBytes(p.item, p.offset, Pattern(16, seed));
        seed++;
    }
    seed = 1;
    for (const Probe &p : probes) {
        EXPECT_EQ(GetBytes(p.item, p.offset, 16), Pattern(16, seed)) << p.what;
        seed++;
    }
    printf("put/get at both ends of each item: %.3f s\n", SecondsSince(start));
    std::vector<uint8_t> byte(2, 0xAB);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(byte.data(), last.get(), kItemSize - 1, 2),
                     openfam::FAM_ERR_OUTOFRANGE, "fam_put_blocking");

    // The heap is sparse: only what was written (and, at most, the two 1 GiB items) is real.
    uint64_t largest = 0;
    for (const FileEntry &f : ListFiles(shm_dir())) largest = std::max(largest, f.size);
    EXPECT_GE(largest, kRegionSize) << "no 64 TiB heap file in $FAMPOOL_SHM_DIR";
    uint64_t used = AllocatedBytes(shm_dir());
    printf("heap memory in use: %" PRIu64 " KiB\n", used / 1024);
    EXPECT_LT(used, 4ull << 30) << "the 64 TiB heap is not sparse";

    start = Clock::now();
    first.reset();
    filler.reset();
    last.reset();
    fam()->fam_destroy_region(region.get());
    printf("destroy: %.3f s\n", SecondsSince(start));
    EXPECT_FAM_ERROR(delete fam()->fam_lookup_region("huge"), openfam::FAM_ERR_NOTFOUND,
                     "fam_lookup_region");
    EXPECT_EQ(AllocatedBytes(shm_dir()), 0u) << "the heap outlived its region";
}

// ---------------------------------------------------------------------------------------------
// A million named items

constexpr uint64_t kMillion = 1000000;
constexpr uint64_t kSmallItem = 64;
// Slower than this per item fails: a million items would take more than 200 s.
constexpr double kBudgetPerItemSeconds = 200e-6;

std::string ItemName(uint64_t n) { return "i" + std::to_string(n); }
uint64_t ItemValue(uint64_t n) { return n * 0x9E3779B97F4A7C15ull + 1; }

TEST_F(ScaleTest, MillionNamedItemsAllocateLookUpAndDeallocate) {
    constexpr uint64_t kRegionSize = kMillion * kSmallItem;
    const double budget = kBudgetPerItemSeconds * kMillion;
    Fam_Region_Attributes attrs = FamAttributes(VOLATILE);
    auto region = CreateRegion("million", kRegionSize, 0700, &attrs);
    ASSERT_NE(region, nullptr);

    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    items.reserve(kMillion);
    auto start = Clock::now();
    for (uint64_t n = 0; n < kMillion; n++) {
        std::string name = ItemName(n);
        items.emplace_back(fam()->fam_allocate(name.c_str(), kSmallItem, 0600, region.get()));
        uint64_t value = ItemValue(n);
        fam()->fam_put_blocking(&value, items.back().get(), 0, sizeof value);
        if ((n + 1) % 1000 == 0) {
            double elapsed = SecondsSince(start);
            ASSERT_LT(elapsed, budget) << "allocating: only " << (n + 1) << " items in " << elapsed
                                       << " s (" << 1e6 * elapsed / (n + 1) << " us per item)";
            if ((n + 1) % 100000 == 0) {
                printf("  %" PRIu64 " items allocated, %.1f s\n", n + 1, elapsed);
                fflush(stdout);
            }
        }
    }
    double seconds = SecondsSince(start);
    printf("allocate + put 1,000,000 named items: %.1f s (%.1f us per item)\n", seconds,
           1e6 * seconds / kMillion);
    // The region spans OpenFAM's heap for its size, the next power of two (docs/semantics.md,
    // "Region capacity"): one item takes what a million 64-byte items left, then it is full.
    constexpr uint64_t kHeap = uint64_t{1} << 26;
    delete fam()->fam_allocate("rest", kHeap - kRegionSize, 0600, region.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("one_more", kSmallItem, 0600, region.get()),
                     openfam::FAM_ERR_NO_SPACE, "fam_allocate");

    std::mt19937_64 rng(20240601);
    std::set<uint64_t> sample;
    while (sample.size() < 1000) sample.insert(rng() % kMillion);
    start = Clock::now();
    for (uint64_t n : sample) {
        std::string name = ItemName(n);
        std::unique_ptr<Fam_Descriptor> item(fam()->fam_lookup(name.c_str(), "million"));
        ASSERT_NE(item, nullptr) << name;
        EXPECT_EQ(item->get_size(), kSmallItem) << name;
        EXPECT_STREQ(item->get_name(), name.c_str());
        Fam_Stat st{};
        fam()->fam_stat(item.get(), &st);
        EXPECT_EQ(st.size, kSmallItem) << name;
        uint64_t value = 0;
        fam()->fam_get_blocking(&value, item.get(), 0, sizeof value);
        EXPECT_EQ(value, ItemValue(n)) << name;
    }
    seconds = SecondsSince(start);
    printf("look up, stat and read 1,000 of them at random: %.3f s (%.1f us each)\n", seconds,
           1e3 * seconds);
    EXPECT_FAM_ERROR(delete fam()->fam_lookup(ItemName(kMillion).c_str(), "million"),
                     openfam::FAM_ERR_NOTFOUND, "fam_lookup");

    start = Clock::now();
    for (uint64_t n = 0; n < kMillion; n++) {
        fam()->fam_deallocate(items[n].get());
        items[n].reset();
        if ((n + 1) % 1000 == 0) {
            double elapsed = SecondsSince(start);
            ASSERT_LT(elapsed, budget)
                << "deallocating: only " << (n + 1) << " items in " << elapsed << " s";
            if ((n + 1) % 100000 == 0) {
                printf("  %" PRIu64 " items deallocated, %.1f s\n", n + 1, elapsed);
                fflush(stdout);
            }
        }
    }
    seconds = SecondsSince(start);
    printf("deallocate 1,000,000 items: %.1f s (%.1f us per item)\n", seconds,
           1e6 * seconds / kMillion);

    // Empty again: the names are gone and one item can take the whole region.
    EXPECT_FAM_ERROR(delete fam()->fam_lookup(ItemName(*sample.begin()).c_str(), "million"),
                     openfam::FAM_ERR_NOTFOUND, "fam_lookup");
    start = Clock::now();
    auto whole = Allocate("whole", kRegionSize, region.get(), 0600);
    EXPECT_NE(whole, nullptr) << "a full-size allocation failed in the emptied region";
    printf("allocate the whole region: %.3f s\n", SecondsSince(start));
}

}  // namespace
}  // namespace fampool_test
