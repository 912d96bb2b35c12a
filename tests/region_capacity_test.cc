// region_capacity_test.cc: regions hold what OpenFAM programs put in them (docs/semantics.md,
// "Region capacity"). OpenFAM 3.2 gives each server of a region a heap of the next power of
// two of its share, 1 MiB at least; fampool gives at least that, and an item as large as the
// region on any one of its servers. Capacity counts what items hold, not the heaps' spans.
// Runs on the embedded model and, through CTest, on 3 memory servers without interleaving;
// cluster_test.cc has the two-server region and the capacity of a memory server.
#include <fam/fam.h>

#include <random>
#include <string>
#include <vector>

#include "test_support.h"

namespace region_capacity {
namespace {

using namespace openfam;
using fampool_test::Pattern;

constexpr uint64_t kKiB = 1024, kMiB = kKiB * kKiB;

class RegionCapacityTest : public fampool_test::FamTest {
  protected:
    // Items of `size` bytes, each written with its own pattern, read back.
    void FillAndCheck(Fam_Region_Descriptor *region, int count, uint64_t size) {
        std::vector<std::unique_ptr<Fam_Descriptor>> items;
        for (int i = 0; i < count; ++i) {
            std::string name = "item" + std::to_string(i);
            items.push_back(Allocate(name.c_str(), size, region));
            PutBytes(items.back().get(), 0, Pattern(size, i + 1));
        }
        for (int i = 0; i < count; ++i) {
            EXPECT_EQ(GetBytes(items[i].get(), 0, size), Pattern(size, i + 1)) << "item " << i;
        }
    }

    // A GUPS table (OpenFAM's gups creates its region with a few bytes, then allocates the
    // table in it): `words` 64-bit words, initialised to their index, then `updates` random
    // XORs with fam_xor, checked against the same updates made locally.
    void Gups(Fam_Region_Descriptor *region, uint64_t words, int updates) {
        auto table = Allocate("table", words * sizeof(uint64_t), region);
        std::vector<uint64_t> expected(words);
        for (uint64_t i = 0; i < words; ++i) expected[i] = i;
        fam()->fam_put_blocking(expected.data(), table.get(), 0, words * sizeof(uint64_t));
        std::mt19937_64 random(30);
        for (int u = 0; u < updates; ++u) {
            uint64_t value = random(), index = value % words;
            fam()->fam_xor(table.get(), index * sizeof(uint64_t), value);
            expected[index] ^= value;
        }
        fam()->fam_quiet();
        std::vector<uint64_t> got(words);
        fam()->fam_get_blocking(got.data(), table.get(), 0, words * sizeof(uint64_t));
        EXPECT_EQ(got, expected);
    }
};

TEST_F(RegionCapacityTest, TenOneKibItemsInAnEightKibRegion) {
    auto region = CreateRegion("eight_kib", 8 * kKiB);
    FillAndCheck(region.get(), 10, kKiB);
}

TEST_F(RegionCapacityTest, GupsTableInARegionOfAFewBytes) {
    auto region = CreateRegion("gups", sizeof(uint64_t));
    // Half of OpenFAM's smallest heap: the largest item OpenFAM 3.2 places in this region.
    Gups(region.get(), 512 * kKiB / sizeof(uint64_t), 4096);
}

TEST_F(RegionCapacityTest, ItemAsLargeAsTheRegion) {
    auto region = CreateRegion("whole", 3 * kMiB);
    FillAndCheck(region.get(), 1, 3 * kMiB);
}

// Slack stops where OpenFAM's heap for the region ends (4 MiB for a 3 MiB region on one
// server) and the region's own size on each server: past both, fam_allocate refuses.
TEST_F(RegionCapacityTest, SlackEndsAtOpenFamsHeap) {
    auto region = CreateRegion("bounded", 3 * kMiB);
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    if (stat.num_memservers != 1) GTEST_SKIP() << "the region spans " << stat.num_memservers;
    auto most = Allocate("most", 4 * kMiB - 64, region.get());
    auto last = Allocate("last", 64, region.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("more", 64, 0777, region.get()),
                     FAM_ERR_NO_SPACE, "fam_allocate");
}

}  // namespace
}  // namespace region_capacity
