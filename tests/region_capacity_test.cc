// region_capacity_test.cc: regions hold what OpenFAM programs put in them (docs/semantics.md,
// "Region capacity"). OpenFAM 3.2 gives each server of a region a heap of the next power of
// two of its share, 1 MiB at least; fampool gives at least that, and an item as large as the
// region on any one of its servers. Capacity counts what items hold, not the heaps' spans.
// Runs on the embedded model and, through CTest, on 3 memory servers without interleaving;
// cluster_test.cc has the two-server region and capacity through the metadata service, and
// MemoryServerCapacityTest below a memory server's own check: the pages its heaps hold, plus
// the share a new or grown extent reserves.
#include <fam/fam.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "memserver/local_memory_server.h"
#include "test_support.h"

namespace region_capacity {
namespace {

using namespace openfam;
using fampool::ExtentRef;
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
    // Under region_span_size_per_memoryserver (1 GiB by default) a 3 MiB region takes one
    // server, embedded and on the test clusters alike.
    ASSERT_EQ(stat.num_memservers, 1u);
    auto most = Allocate("most", 4 * kMiB - 64, region.get());
    auto last = Allocate("last", 64, region.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("more", 64, 0777, region.get()), FAM_ERR_NO_SPACE,
                     "fam_allocate");
}

class MemoryServerCapacityTest : public ::testing::Test {
  protected:
    void SetUp() override {
        server_ = std::make_unique<fampool::LocalMemoryServer>(
            4,
            fampool::HeapLocation{volatile_.path(), persistent_.path(), "t", fampool::FileAccess()},
            archive_.path());
        server_->SetCapacity(8 * kMiB);
    }

    // Writes `nbytes` of the extent from its first byte: pages the heap then holds.
    void Write(ExtentRef extent, uint64_t nbytes) {
        auto mapping = server_->Map(extent, nbytes);
        std::memset(mapping->base(), 0x5a, nbytes);
    }

    fampool_test::TempDir volatile_, persistent_, archive_;
    std::unique_ptr<fampool::LocalMemoryServer> server_;
};

TEST_F(MemoryServerCapacityTest, SpansCostNothingUntilWritten) {
    // Four extents spanning 64 MiB each on an 8 MiB server, each reserving 1 MiB.
    for (uint64_t region = 1; region <= 4; ++region) {
        server_->CreateExtent(ExtentRef{region, false, false}, 64 * kMiB, kMiB);
    }
    EXPECT_LT(server_->WrittenBytes(), kMiB);
    Write(ExtentRef{1, false, false}, 6 * kMiB);
    EXPECT_GE(server_->WrittenBytes(), 6 * kMiB);
    // 6 MiB written: a share of 1 MiB fits, one of 3 MiB does not.
    server_->CreateExtent(ExtentRef{5, false, false}, 64 * kMiB, kMiB);
    EXPECT_FAM_ERROR(server_->CreateExtent(ExtentRef{6, false, false}, 64 * kMiB, 3 * kMiB),
                     openfam::FAM_ERR_NO_SPACE, "memory server 4 holds");
    EXPECT_FAM_ERROR(
        server_->ResizeExtent(ExtentRef{2, false, false}, 64 * kMiB, 128 * kMiB, 3 * kMiB),
        openfam::FAM_ERR_NO_SPACE, "capacity is 8388608 bytes");
    // A destroyed extent's pages count no more.
    server_->DestroyExtent(ExtentRef{1, false, false});
    server_->CreateExtent(ExtentRef{6, false, false}, 64 * kMiB, 3 * kMiB);
}

}  // namespace
}  // namespace region_capacity
