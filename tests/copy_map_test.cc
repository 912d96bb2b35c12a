// copy_map_test.cc: fam_copy / fam_copy_wait and fam_map / fam_unmap.
#include <fam/fam.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;

// Region "r" (64 MiB) with items "a" and "b" of 1 MiB each.
class CopyMapTest : public FamTest {
  protected:
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        region_ = CreateRegion("r", 64 * kMiB, 0777, RegionAttributes(REGION));
        a_ = Allocate("a", kMiB, region_.get());
        b_ = Allocate("b", kMiB, region_.get());
    }
    void TearDown() override {
        item_only_.reset();
        per_item_region_.reset();
        b_.reset();
        a_.reset();
        region_.reset();
        FamTest::TearDown();
    }

    // The attributes of the test's regions: the configuration's default interleaving here.
    virtual Fam_Region_Attributes *RegionAttributes(Fam_Permission_Level level) {
        attributes_ = FamAttributes(VOLATILE, level);
        return &attributes_;
    }

    // An item with permissions `perm` in a DATAITEM-level region, so its own bits apply.
    Fam_Descriptor *ItemWithPerm(mode_t perm) {
        per_item_region_ = CreateRegion("per-item", 4 * kMiB, 0777, RegionAttributes(DATAITEM));
        item_only_ = Allocate("x", 64 * kKiB, per_item_region_.get(), perm);
        return item_only_.get();
    }

    // The copy error reported by fam_copy or by fam_copy_wait (either is allowed).
    ::testing::AssertionResult CopyFails(Fam_Descriptor *src, uint64_t src_offset,
                                         Fam_Descriptor *dest, uint64_t dest_offset,
                                         uint64_t nbytes, int expected) {
        void *wait = nullptr;
        CaughtError at_call = CatchFamError(
            [&] { wait = fam()->fam_copy(src, src_offset, dest, dest_offset, nbytes); });
        if (at_call.thrown) return IsFamError(at_call, expected, {"fam_copy"});
        return IsFamError(CatchFamError([&] { fam()->fam_copy_wait(wait); }), expected,
                          {"fam_copy"});
    }

    Fam_Region_Attributes attributes_{};
    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> a_;
    std::unique_ptr<Fam_Descriptor> b_;
    std::unique_ptr<Fam_Region_Descriptor> per_item_region_;
    std::unique_ptr<Fam_Descriptor> item_only_;
};

// ---------------------------------------------------------------------------------------------
// fam_copy

TEST_F(CopyMapTest, CopyWithinItemCopiesBytes) {
    PutBytes(a_.get(), 0, Pattern(4096, 1));
    fam()->fam_copy_wait(fam()->fam_copy(a_.get(), 0, a_.get(), 8192, 4096));
    EXPECT_EQ(GetBytes(a_.get(), 8192, 4096), Pattern(4096, 1));
    EXPECT_EQ(GetBytes(a_.get(), 0, 4096), Pattern(4096, 1));
}

TEST_F(CopyMapTest, CopyBetweenItemsCopiesBytesAtOffsets) {
    PutBytes(a_.get(), 100, Pattern(5000, 2));
    fam()->fam_copy_wait(fam()->fam_copy(a_.get(), 100, b_.get(), 333, 5000));
    EXPECT_EQ(GetBytes(b_.get(), 333, 5000), Pattern(5000, 2));
    EXPECT_EQ(GetBytes(b_.get(), 0, 333), std::vector<uint8_t>(333, 0));
    EXPECT_EQ(GetBytes(b_.get(), 5333, 100), std::vector<uint8_t>(100, 0));
}

// A permission change replaces the region's keys (on a cluster); a copy made next, with
// descriptors bound before it, works with the keys granted now.
TEST_F(CopyMapTest, CopyAfterThePermissionsChangedUsesTheKeysGrantedNow) {
    PutBytes(a_.get(), 0, Pattern(8192, 6));
    fam()->fam_change_permissions(region_.get(), 0755);
    fam()->fam_copy_wait(fam()->fam_copy(a_.get(), 0, b_.get(), 4096, 8192));
    EXPECT_EQ(GetBytes(b_.get(), 4096, 8192), Pattern(8192, 6));
}

TEST_F(CopyMapTest, CopyBetweenRegionsOfDifferentMemoryTypes) {
    Fam_Region_Attributes attrs = FamAttributes(PERSISTENT);
    std::unique_ptr<Fam_Region_Descriptor> persistent = CreateRegion("p", 4 * kMiB, 0777, &attrs);
    std::unique_ptr<Fam_Descriptor> p = Allocate("p", kMiB, persistent.get());
    PutBytes(a_.get(), 0, Pattern(kMiB, 3));
    fam()->fam_copy_wait(fam()->fam_copy(a_.get(), 0, p.get(), 0, kMiB));
    EXPECT_EQ(GetBytes(p.get(), 0, kMiB), Pattern(kMiB, 3));
    PutBytes(p.get(), 0, Pattern(kMiB, 4));
    fam()->fam_copy_wait(fam()->fam_copy(p.get(), 0, b_.get(), 0, kMiB));
    EXPECT_EQ(GetBytes(b_.get(), 0, kMiB), Pattern(kMiB, 4));
}

TEST_F(CopyMapTest, CopyOfWholeItemWithManyCopiesInFlight) {
    // Eight copies started before any is waited for.
    std::unique_ptr<Fam_Descriptor> big = Allocate("big", 16 * kMiB, region_.get());
    PutBytes(a_.get(), 0, Pattern(kMiB, 5));
    std::vector<void *> waits;
    for (uint64_t i = 0; i < 8; ++i) {
        waits.push_back(fam()->fam_copy(a_.get(), 0, big.get(), i * 2 * kMiB, kMiB));
    }
    for (void *wait : waits) fam()->fam_copy_wait(wait);
    for (uint64_t i = 0; i < 8; ++i) {
        ASSERT_EQ(GetBytes(big.get(), i * 2 * kMiB, kMiB), Pattern(kMiB, 5)) << "copy " << i;
    }
}

TEST_F(CopyMapTest, CopyPastEndOfSourceThrowsOutOfRange) {
    EXPECT_TRUE(CopyFails(a_.get(), kMiB - 100, b_.get(), 0, 200, FAM_ERR_OUTOFRANGE));
}

TEST_F(CopyMapTest, CopyPastEndOfDestinationThrowsOutOfRangeAndWritesNothing) {
    PutBytes(a_.get(), 0, Pattern(4096, 6));
    EXPECT_TRUE(CopyFails(a_.get(), 0, b_.get(), kMiB - 100, 4096, FAM_ERR_OUTOFRANGE));
    EXPECT_EQ(GetBytes(b_.get(), kMiB - 4096, 4096), std::vector<uint8_t>(4096, 0));
}

TEST_F(CopyMapTest, CopyWithOffsetOverflowThrowsOutOfRange) {
    EXPECT_TRUE(CopyFails(a_.get(), 0, b_.get(), UINT64_MAX - 10, 64, FAM_ERR_OUTOFRANGE));
    EXPECT_EQ(GetBytes(b_.get(), 0, 64), std::vector<uint8_t>(64, 0));
}

TEST_F(CopyMapTest, CopyFromNullSourceThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_copy(nullptr, 0, b_.get(), 0, 64), FAM_ERR_NULLPTR, "fam_copy");
}

TEST_F(CopyMapTest, CopyWaitOnNullThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_copy_wait(nullptr), FAM_ERR_NULLPTR, "fam_copy_wait");
}

TEST_F(CopyMapTest, CopyFromWriteOnlyItemThrowsNoPerm) {
    Fam_Descriptor *write_only = ItemWithPerm(0200);
    EXPECT_TRUE(CopyFails(write_only, 0, b_.get(), 0, 64, FAM_ERR_NOPERM));
}

TEST_F(CopyMapTest, CopyIntoReadOnlyItemThrowsNoPerm) {
    Fam_Descriptor *read_only = ItemWithPerm(0400);
    PutBytes(a_.get(), 0, Pattern(64, 7));
    EXPECT_TRUE(CopyFails(a_.get(), 0, read_only, 0, 64, FAM_ERR_NOPERM));
    EXPECT_EQ(GetBytes(read_only, 0, 64), std::vector<uint8_t>(64, 0));
}

// ---------------------------------------------------------------------------------------------
// fam_map and fam_unmap

// fam_map needs an item's bytes contiguous on one memory server: items of regions without
// interleaving, on every configuration. (An item striped over several servers is refused by
// design: cluster_test's MapOfStripedItemThrowsInvalidOp.)
class MapTest : public CopyMapTest {
  protected:
    Fam_Region_Attributes *RegionAttributes(Fam_Permission_Level level) override {
        Fam_Region_Attributes *attributes = CopyMapTest::RegionAttributes(level);
        attributes->interleaveEnable = DISABLE;
        return attributes;
    }
};

TEST_F(MapTest, StoresThroughMapAreSeenByGet) {
    auto *mapped = static_cast<uint8_t *>(fam()->fam_map(a_.get()));
    ASSERT_NE(mapped, nullptr);
    std::vector<uint8_t> data = Pattern(8192, 8);
    std::memcpy(mapped + 4096, data.data(), data.size());
    EXPECT_EQ(GetBytes(a_.get(), 4096, 8192), data);
    fam()->fam_unmap(mapped, a_.get());
}

TEST_F(MapTest, PutsAreSeenThroughMap) {
    std::vector<uint8_t> data = Pattern(8192, 9);
    PutBytes(a_.get(), kMiB - 8192, data);
    auto *mapped = static_cast<uint8_t *>(fam()->fam_map(a_.get()));
    ASSERT_NE(mapped, nullptr);
    EXPECT_EQ(std::memcmp(mapped + kMiB - 8192, data.data(), data.size()), 0);
    fam()->fam_unmap(mapped, a_.get());
}

TEST_F(MapTest, AtomicsAreSeenThroughMap) {
    auto *mapped = static_cast<uint8_t *>(fam()->fam_map(a_.get()));
    ASSERT_NE(mapped, nullptr);
    fam()->fam_set(a_.get(), 64, uint64_t{0x1122334455667788ull});
    fam()->fam_quiet();  // fam_set is non-blocking: done by the next quiet
    uint64_t seen;
    std::memcpy(&seen, mapped + 64, sizeof(seen));
    EXPECT_EQ(seen, 0x1122334455667788ull);
    fam()->fam_unmap(mapped, a_.get());
}

TEST_F(MapTest, MappingCoversTheWholeItem) {
    auto *mapped = static_cast<uint8_t *>(fam()->fam_map(a_.get()));
    ASSERT_NE(mapped, nullptr);
    mapped[0] = 0x11;
    mapped[kMiB - 1] = 0x22;
    EXPECT_EQ(GetBytes(a_.get(), 0, 1), std::vector<uint8_t>{0x11});
    EXPECT_EQ(GetBytes(a_.get(), kMiB - 1, 1), std::vector<uint8_t>{0x22});
    fam()->fam_unmap(mapped, a_.get());
}

TEST_F(MapTest, TwoItemsMapToDistinctMemory) {
    auto *map_a = static_cast<uint8_t *>(fam()->fam_map(a_.get()));
    auto *map_b = static_cast<uint8_t *>(fam()->fam_map(b_.get()));
    map_a[0] = 0xA1;
    map_b[0] = 0xB2;
    EXPECT_EQ(GetBytes(a_.get(), 0, 1), std::vector<uint8_t>{0xA1});
    EXPECT_EQ(GetBytes(b_.get(), 0, 1), std::vector<uint8_t>{0xB2});
    fam()->fam_unmap(map_a, a_.get());
    fam()->fam_unmap(map_b, b_.get());
}

TEST_F(MapTest, DataWrittenThroughMapOutlivesUnmap) {
    auto *mapped = static_cast<uint8_t *>(fam()->fam_map(a_.get()));
    std::vector<uint8_t> data = Pattern(4096, 10);
    std::memcpy(mapped, data.data(), data.size());
    EXPECT_NO_THROW(fam()->fam_unmap(mapped, a_.get()));
    EXPECT_EQ(GetBytes(a_.get(), 0, 4096), data);
}

TEST_F(MapTest, MapAfterUnmapGivesUsableMemoryAgain) {
    auto *first = static_cast<uint8_t *>(fam()->fam_map(a_.get()));
    first[10] = 0x42;
    fam()->fam_unmap(first, a_.get());
    auto *second = static_cast<uint8_t *>(fam()->fam_map(a_.get()));
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(second[10], 0x42);
    fam()->fam_unmap(second, a_.get());
}

TEST_F(MapTest, MapOfReadOnlyItemReadsData) {
    // A region its owner may only read: the mapping is read-only (on a cluster, of a read-only
    // heap descriptor the memory server hands out).
    std::unique_ptr<Fam_Region_Descriptor> region =
        CreateRegion("ro", 4 * kMiB, 0700, RegionAttributes(REGION));
    std::unique_ptr<Fam_Descriptor> item = Allocate("x", 64 * kKiB, region.get());
    PutBytes(item.get(), 0, Pattern(64, 3));
    fam()->fam_change_permissions(region.get(), 0400);
    std::unique_ptr<Fam_Descriptor> read_only(fam()->fam_lookup("x", "ro"));
    auto *mapped = static_cast<uint8_t *>(fam()->fam_map(read_only.get()));
    ASSERT_NE(mapped, nullptr);
    EXPECT_EQ(std::vector<uint8_t>(mapped, mapped + 64), Pattern(64, 3));
    EXPECT_EQ(mapped[64 * kKiB - 1], 0);
    fam()->fam_unmap(mapped, read_only.get());
}

TEST_F(MapTest, MapOfItemInDataitemRegionWorksEmbeddedAndIsRefusedOnACluster) {
    Fam_Descriptor *item = ItemWithPerm(0600);
    if (!cluster()) {
        void *mapped = fam()->fam_map(item);
        ASSERT_NE(mapped, nullptr);
        fam()->fam_unmap(mapped, item);
        return;
    }
    // The memory server hands out whole heaps; in a DATAITEM region the heap holds items of
    // other permissions, so a mapping would reach further than the item's own access.
    CaughtError caught = CatchFamError([&] { fam()->fam_map(item); });
    EXPECT_TRUE(IsFamError(caught, FAM_ERR_INVALIDOP, {"fam_map"}));
    EXPECT_NE(caught.message.find("DATAITEM"), std::string::npos) << caught.message;
}

TEST_F(MapTest, MapOfWriteOnlyItemThrowsNoPerm) {
    Fam_Descriptor *write_only = ItemWithPerm(0200);
    EXPECT_FAM_ERROR(fam()->fam_map(write_only), FAM_ERR_NOPERM, "fam_map");
}

TEST_F(MapTest, MapOfNullDescriptorThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_map(nullptr), FAM_ERR_NULLPTR, "fam_map");
}

TEST_F(MapTest, MapOfDeallocatedItemThrowsInvalid) {
    fam()->fam_deallocate(b_.get());
    EXPECT_FAM_ERROR(fam()->fam_map(b_.get()), FAM_ERR_INVALID, "fam_map");
}

TEST_F(MapTest, UnmapOfNullAddressThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_unmap(nullptr, a_.get()), FAM_ERR_NULLPTR, "fam_unmap");
}

}  // namespace
}  // namespace fampool_test
