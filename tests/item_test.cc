// item_test.cc: fam_allocate (named, unnamed, default region), fam_lookup, fam_stat,
// fam_close, fam_deallocate, space accounting and descriptors rebuilt from global descriptors.
#include <fam/fam.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;

// A 16 MiB region "r" (REGION level, 0777) for items.
class ItemTest : public FamTest {
  protected:
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        region_ = CreateRegion("r", 16 * kMiB);
    }
    void TearDown() override {
        region_.reset();
        FamTest::TearDown();
    }
    std::unique_ptr<Fam_Region_Descriptor> region_;
};

// ---------------------------------------------------------------------------------------------
// Allocate

TEST_F(ItemTest, AllocateNamedItemReportsNameSizeAndPerm) {
    std::unique_ptr<Fam_Descriptor> item(fam()->fam_allocate("item", 12345, 0640, region_.get()));
    ASSERT_NE(item, nullptr);
    EXPECT_STREQ(item->get_name(), "item");
    EXPECT_EQ(item->get_size(), 12345u);
    EXPECT_EQ(item->get_perm() & 0777, 0640u);
    EXPECT_EQ(item->get_uid(), getuid());
    EXPECT_EQ(item->get_gid(), getgid());
}

TEST_F(ItemTest, AllocateUnnamedItemIsUsable) {
    std::unique_ptr<Fam_Descriptor> item(fam()->fam_allocate(8192, 0600, region_.get()));
    ASSERT_NE(item, nullptr);
    EXPECT_EQ(item->get_size(), 8192u);
    PutBytes(item.get(), 100, Pattern(1000, 1));
    EXPECT_EQ(GetBytes(item.get(), 100, 1000), Pattern(1000, 1));
}

TEST_F(ItemTest, TwoUnnamedItemsAreDistinct) {
    std::unique_ptr<Fam_Descriptor> a(fam()->fam_allocate(4096, 0600, region_.get()));
    std::unique_ptr<Fam_Descriptor> b(fam()->fam_allocate(4096, 0600, region_.get()));
    PutBytes(a.get(), 0, Pattern(4096, 1));
    PutBytes(b.get(), 0, Pattern(4096, 2));
    EXPECT_EQ(GetBytes(a.get(), 0, 4096), Pattern(4096, 1));
    EXPECT_EQ(GetBytes(b.get(), 0, 4096), Pattern(4096, 2));
}

TEST_F(ItemTest, AllocatedMemoryIsZeroFilled) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 256 * kKiB, region_.get());
    EXPECT_EQ(GetBytes(item.get(), 0, 256 * kKiB), std::vector<uint8_t>(256 * kKiB, 0));
}

TEST_F(ItemTest, ReallocatedMemoryIsZeroFilled) {
    // Fill most of a small region, free it, and allocate the same space again.
    std::unique_ptr<Fam_Region_Descriptor> small = CreateRegion("small", kMiB);
    std::unique_ptr<Fam_Descriptor> first = Allocate("a", 768 * kKiB, small.get());
    PutBytes(first.get(), 0, std::vector<uint8_t>(768 * kKiB, 0xA5));
    fam()->fam_deallocate(first.get());
    std::unique_ptr<Fam_Descriptor> second = Allocate("b", 768 * kKiB, small.get());
    EXPECT_EQ(GetBytes(second.get(), 0, 768 * kKiB), std::vector<uint8_t>(768 * kKiB, 0));
}

TEST_F(ItemTest, ItemsOfOneRegionDoNotOverlap) {
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    for (int i = 0; i < 16; ++i) {
        std::string name = "i" + std::to_string(i);
        items.push_back(Allocate(name.c_str(), 1000 + i * 37, region_.get()));
        PutBytes(items.back().get(), 0, Pattern(1000 + i * 37, i));
    }
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(GetBytes(items[i].get(), 0, 1000 + i * 37), Pattern(1000 + i * 37, i)) << i;
    }
}

TEST_F(ItemTest, ItemsAreAlignedTo64Bytes) {
    for (uint64_t size : {1u, 3u, 65u, 100u}) {
        std::unique_ptr<Fam_Descriptor> item(fam()->fam_allocate(size, 0600, region_.get()));
        void *mapped = fam()->fam_map(item.get());
        EXPECT_EQ(reinterpret_cast<uintptr_t>(mapped) % 64, 0u) << "item of " << size;
        fam()->fam_unmap(mapped, item.get());
    }
}

TEST_F(ItemTest, AllocateWithNullRegionUsesDefaultRegion) {
    std::unique_ptr<Fam_Descriptor> item(fam()->fam_allocate("in-default", 4096, 0600, nullptr));
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("in-default", "Default"));
    EXPECT_EQ(found->get_size(), 4096u);
}

TEST_F(ItemTest, DefaultRegionIsCreatedVolatile1GiB0777) {
    std::unique_ptr<Fam_Descriptor> item(fam()->fam_allocate(4096, 0600, nullptr));
    std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region("Default"));
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.size, 1ull << 30);
    EXPECT_EQ(stat.perm & 0777, 0777u);
    EXPECT_EQ(stat.region_attributes.memoryType, VOLATILE);
    EXPECT_EQ(stat.uid, getuid());
}

TEST_F(ItemTest, AllocateWithNullRegionReusesExistingDefaultRegion) {
    std::unique_ptr<Fam_Descriptor> a(fam()->fam_allocate("a", 4096, 0600, nullptr));
    std::unique_ptr<Fam_Descriptor> b(fam()->fam_allocate("b", 4096, 0600, nullptr));
    std::unique_ptr<Fam_Descriptor> found_a(fam()->fam_lookup("a", "Default"));
    std::unique_ptr<Fam_Descriptor> found_b(fam()->fam_lookup("b", "Default"));
    EXPECT_EQ(found_a->get_global_descriptor().regionId, found_b->get_global_descriptor().regionId);
}

TEST_F(ItemTest, DuplicateNameInRegionThrowsAlreadyExist) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("dup", 4096, region_.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("dup", 4096, 0600, region_.get()),
                     FAM_ERR_ALREADYEXIST, "fam_allocate");
}

TEST_F(ItemTest, SameNameInAnotherRegionIsAllowed) {
    std::unique_ptr<Fam_Region_Descriptor> other = CreateRegion("other", kMiB);
    std::unique_ptr<Fam_Descriptor> a = Allocate("same", 4096, region_.get());
    std::unique_ptr<Fam_Descriptor> b = Allocate("same", 8192, other.get());
    std::unique_ptr<Fam_Descriptor> found_a(fam()->fam_lookup("same", "r"));
    std::unique_ptr<Fam_Descriptor> found_b(fam()->fam_lookup("same", "other"));
    EXPECT_EQ(found_a->get_size(), 4096u);
    EXPECT_EQ(found_b->get_size(), 8192u);
}

TEST_F(ItemTest, AllocateZeroBytesThrowsInvalid) {
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("zero", 0, 0600, region_.get()), FAM_ERR_INVALID,
                     "fam_allocate");
}

TEST_F(ItemTest, AllocateUnnamedZeroBytesThrowsInvalid) {
    EXPECT_FAM_ERROR(delete fam()->fam_allocate(0, 0600, region_.get()), FAM_ERR_INVALID,
                     "fam_allocate");
}

TEST_F(ItemTest, ItemNameOf255BytesIsAccepted) {
    std::string name(255, 'i');
    std::unique_ptr<Fam_Descriptor> item = Allocate(name.c_str(), 64, region_.get());
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup(name.c_str(), "r"));
    EXPECT_EQ(std::string(found->get_name()), name);
}

TEST_F(ItemTest, ItemNameOf256BytesThrowsNameTooLong) {
    std::string name(256, 'i');
    EXPECT_FAM_ERROR(delete fam()->fam_allocate(name.c_str(), 64, 0600, region_.get()),
                     FAM_ERR_NAME_TOO_LONG, "fam_allocate");
}

TEST_F(ItemTest, EmptyItemNameAllocatesUnnamedItems) {
    // OpenFAM programs pass "" for an item they never look up by name.
    std::unique_ptr<Fam_Descriptor> first(fam()->fam_allocate("", 64, 0600, region_.get()));
    std::unique_ptr<Fam_Descriptor> second(fam()->fam_allocate("", 64, 0600, region_.get()));
    EXPECT_STREQ(first->get_name(), "");
    EXPECT_NE(first->get_global_descriptor().offset, second->get_global_descriptor().offset);
    PutBytes(first.get(), 0, Pattern(64, 6));
    EXPECT_EQ(GetBytes(first.get(), 0, 64), Pattern(64, 6));
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("", "r"), FAM_ERR_INVALID, "fam_lookup");
}

TEST_F(ItemTest, NullItemNameThrowsNullptr) {
    EXPECT_FAM_ERROR(
        delete fam()->fam_allocate(static_cast<const char *>(nullptr), 64, 0600, region_.get()),
        FAM_ERR_NULLPTR, "fam_allocate");
}

// ---------------------------------------------------------------------------------------------
// Space in a region

TEST_F(ItemTest, AllocationLargerThanRegionThrowsNoSpace) {
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("huge", 32 * kMiB, 0600, region_.get()),
                     FAM_ERR_NO_SPACE, "fam_allocate");
}

// A region holds OpenFAM 3.2's heap on each of its servers (docs/semantics.md, "Region
// capacity"): 1 MiB for a small one, embedded; 3 MiB over 3 interleaved servers.
TEST_F(ItemTest, FullRegionThrowsNoSpace) {
    std::unique_ptr<Fam_Region_Descriptor> small = CreateRegion("small", kMiB);
    uint64_t room = RegionRoom(fam(), small.get());
    std::unique_ptr<Fam_Descriptor> first = Allocate("a", room - 256 * kKiB, small.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("b", 512 * kKiB, 0600, small.get()),
                     FAM_ERR_NO_SPACE, "fam_allocate");
}

TEST_F(ItemTest, FailedAllocationLeavesNoItemBehind) {
    std::unique_ptr<Fam_Region_Descriptor> small = CreateRegion("small", kMiB);
    uint64_t room = RegionRoom(fam(), small.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("b", room + kMiB, 0600, small.get()),
                     FAM_ERR_NO_SPACE, "fam_allocate");
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("b", "small"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(ItemTest, ResizeRegionMakesRefusedAllocationSucceed) {
    std::unique_ptr<Fam_Region_Descriptor> small = CreateRegion("small", kMiB);
    uint64_t room = RegionRoom(fam(), small.get());
    std::unique_ptr<Fam_Descriptor> first = Allocate("a", room - 256 * kKiB, small.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("b", 512 * kKiB, 0600, small.get()),
                     FAM_ERR_NO_SPACE, "fam_allocate");
    fam()->fam_resize_region(small.get(), 4 * kMiB);
    std::unique_ptr<Fam_Descriptor> second(fam()->fam_allocate("b", 512 * kKiB, 0600, small.get()));
    EXPECT_EQ(second->get_size(), 512 * kKiB);
}

TEST_F(ItemTest, DeallocateReturnsSpace) {
    // Only one 600 KiB item fits in 1 MiB; 40 rounds need the space back every time.
    std::unique_ptr<Fam_Region_Descriptor> small = CreateRegion("small", kMiB);
    for (int round = 0; round < 40; ++round) {
        std::unique_ptr<Fam_Descriptor> item;
        ASSERT_NO_THROW(item.reset(fam()->fam_allocate("x", 600 * kKiB, 0600, small.get())))
            << "round " << round;
        ASSERT_NO_THROW(fam()->fam_deallocate(item.get())) << "round " << round;
    }
}

TEST_F(ItemTest, ManySmallAllocationsReuseFreedSpace) {
    // 24 items of 64 KiB leave 512 KiB of 2 MiB free; putting back the 12 freed every round
    // needs 768 KiB, so it works only if freed space is reused.
    std::unique_ptr<Fam_Region_Descriptor> small = CreateRegion("small", 2 * kMiB);
    std::vector<std::unique_ptr<Fam_Descriptor>> items;
    for (int i = 0; i < 24; ++i) {
        items.emplace_back(fam()->fam_allocate(64 * kKiB, 0600, small.get()));
    }
    for (int round = 0; round < 4; ++round) {
        for (size_t i = 0; i < items.size(); i += 2) {
            fam()->fam_deallocate(items[i].get());
            items[i].reset();
        }
        for (size_t i = 0; i < items.size(); i += 2) {
            ASSERT_NO_THROW(items[i].reset(fam()->fam_allocate(64 * kKiB, 0600, small.get())))
                << "round " << round << " item " << i;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lookup and stat

TEST_F(ItemTest, LookupFindsItemWithSameIdentityAndData) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region_.get(), 0640);
    PutBytes(item.get(), 0, Pattern(4096, 3));
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("i", "r"));
    Fam_Global_Descriptor a = item->get_global_descriptor();
    Fam_Global_Descriptor b = found->get_global_descriptor();
    EXPECT_EQ(a.regionId, b.regionId);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(found->get_size(), 4096u);
    EXPECT_EQ(found->get_perm() & 0777, 0640u);
    EXPECT_STREQ(found->get_name(), "i");
    EXPECT_EQ(GetBytes(found.get(), 0, 4096), Pattern(4096, 3));
}

TEST_F(ItemTest, LookupUnknownItemThrowsNotFound) {
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("nothing", "r"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(ItemTest, LookupInUnknownRegionThrowsNotFound) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region_.get());
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("i", "nowhere"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(ItemTest, LookupWithNullItemNameThrowsNullptr) {
    EXPECT_FAM_ERROR(delete fam()->fam_lookup(nullptr, "r"), FAM_ERR_NULLPTR, "fam_lookup");
}

TEST_F(ItemTest, LookupWithNullRegionNameThrowsNullptr) {
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("i", nullptr), FAM_ERR_NULLPTR, "fam_lookup");
}

TEST_F(ItemTest, StatItemReportsSizePermOwnerAndName) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("stat-me", 5000, region_.get(), 0604);
    Fam_Stat stat{};
    fam()->fam_stat(item.get(), &stat);
    EXPECT_EQ(stat.size, 5000u);
    EXPECT_EQ(stat.perm & 0777, 0604u);
    EXPECT_EQ(stat.uid, getuid());
    EXPECT_EQ(stat.gid, getgid());
    ASSERT_NE(stat.name, nullptr);
    EXPECT_STREQ(stat.name, "stat-me");
    EXPECT_GE(stat.num_memservers, 1u);
}

TEST_F(ItemTest, StatItemReportsItsRegionAttributes) {
    Fam_Region_Attributes attrs = FamAttributes(PERSISTENT, DATAITEM);
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("p", kMiB, 0777, &attrs);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 64, region.get());
    Fam_Stat stat{};
    fam()->fam_stat(item.get(), &stat);
    EXPECT_EQ(stat.region_attributes.memoryType, PERSISTENT);
    EXPECT_EQ(stat.region_attributes.permissionLevel, DATAITEM);
}

TEST_F(ItemTest, StatOfLookedUpItemMatchesAllocation) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 777, region_.get(), 0620);
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("i", "r"));
    Fam_Stat stat{};
    fam()->fam_stat(found.get(), &stat);
    EXPECT_EQ(stat.size, 777u);
    EXPECT_EQ(stat.perm & 0777, 0620u);
    EXPECT_STREQ(stat.name, "i");
}

TEST_F(ItemTest, ItemPermIsRecordedInRegionLevelRegion) {
    ASSERT_EQ(region_->get_permissionLevel(), REGION);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 64, region_.get(), 0600);
    Fam_Stat stat{};
    fam()->fam_stat(item.get(), &stat);
    EXPECT_EQ(stat.perm & 0777, 0600u);
}

TEST_F(ItemTest, StatItemWithNullStatThrowsNullptr) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 64, region_.get());
    EXPECT_FAM_ERROR(fam()->fam_stat(item.get(), static_cast<Fam_Stat *>(nullptr)), FAM_ERR_NULLPTR,
                     "fam_stat");
}

TEST_F(ItemTest, StatNullItemThrowsNullptr) {
    Fam_Stat stat{};
    EXPECT_FAM_ERROR(fam()->fam_stat(static_cast<Fam_Descriptor *>(nullptr), &stat),
                     FAM_ERR_NULLPTR, "fam_stat");
}

// ---------------------------------------------------------------------------------------------
// Close and deallocate

TEST_F(ItemTest, CloseLeavesItemReachableByLookup) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("kept", 4096, region_.get());
    PutBytes(item.get(), 0, Pattern(4096, 12));
    fam()->fam_close(item.get());
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("kept", "r"));
    EXPECT_EQ(GetBytes(found.get(), 0, 4096), Pattern(4096, 12));
}

TEST_F(ItemTest, CloseNullItemThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_close(nullptr), FAM_ERR_NULLPTR, "fam_close");
}

TEST_F(ItemTest, DeallocatedItemLookupThrowsNotFound) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("gone", 4096, region_.get());
    fam()->fam_deallocate(item.get());
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("gone", "r"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(ItemTest, DeallocatedNameCanBeAllocatedAgain) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("again", 4096, region_.get());
    fam()->fam_deallocate(item.get());
    std::unique_ptr<Fam_Descriptor> second = Allocate("again", 8192, region_.get());
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("again", "r"));
    EXPECT_EQ(found->get_size(), 8192u);
}

TEST_F(ItemTest, PutToDeallocatedDescriptorThrowsInvalid) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("gone", 4096, region_.get());
    fam()->fam_deallocate(item.get());
    char buffer[8] = {1};
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(buffer, item.get(), 0, sizeof(buffer)),
                     FAM_ERR_INVALID, "fam_put_blocking");
}

TEST_F(ItemTest, DeallocateTwiceThrowsInvalid) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("gone", 4096, region_.get());
    fam()->fam_deallocate(item.get());
    EXPECT_FAM_ERROR(fam()->fam_deallocate(item.get()), FAM_ERR_INVALID, "fam_deallocate");
}

TEST_F(ItemTest, DeallocateNullThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_deallocate(nullptr), FAM_ERR_NULLPTR, "fam_deallocate");
}

// ---------------------------------------------------------------------------------------------
// Descriptors rebuilt from a Fam_Global_Descriptor

TEST_F(ItemTest, DescriptorFromGlobalDescriptorReadsAndWrites) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 8192, region_.get());
    PutBytes(item.get(), 0, Pattern(4096, 21));
    Fam_Descriptor rebuilt(item->get_global_descriptor());
    EXPECT_EQ(GetBytes(&rebuilt, 0, 4096), Pattern(4096, 21));
    PutBytes(&rebuilt, 4096, Pattern(4096, 22));
    EXPECT_EQ(GetBytes(item.get(), 4096, 4096), Pattern(4096, 22));
}

TEST_F(ItemTest, DescriptorFromGlobalDescriptorLearnsSizeOnFirstUse) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 8192, region_.get());
    Fam_Descriptor rebuilt(item->get_global_descriptor());
    GetBytes(&rebuilt, 0, 64);
    EXPECT_EQ(rebuilt.get_size(), 8192u);
    char buffer[16] = {1};
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(buffer, &rebuilt, 8192 - 8, sizeof(buffer)),
                     FAM_ERR_OUTOFRANGE, "fam_put_blocking");
}

TEST_F(ItemTest, DescriptorFromGlobalDescriptorAndSizeReadsAndWrites) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 8192, region_.get());
    PutBytes(item.get(), 0, Pattern(8192, 23));
    Fam_Descriptor rebuilt(item->get_global_descriptor(), 8192);
    EXPECT_EQ(rebuilt.get_size(), 8192u);
    EXPECT_EQ(GetBytes(&rebuilt, 0, 8192), Pattern(8192, 23));
    PutBytes(&rebuilt, 0, Pattern(8192, 24));
    EXPECT_EQ(GetBytes(item.get(), 0, 8192), Pattern(8192, 24));
}

TEST_F(ItemTest, DescriptorFromGlobalDescriptorSupportsAtomics) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region_.get());
    Fam_Descriptor rebuilt(item->get_global_descriptor(), 4096);
    fam()->fam_set(&rebuilt, 64, uint64_t{40});
    EXPECT_EQ(fam()->fam_fetch_add(&rebuilt, 64, uint64_t{2}), 40u);
    EXPECT_EQ(fam()->fam_fetch_uint64(item.get(), 64), 42u);
}

TEST_F(ItemTest, HeapAllocatedRebuiltDescriptorCanBeDeleted) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region_.get());
    PutBytes(item.get(), 0, Pattern(64, 25));
    Fam_Descriptor *rebuilt = new Fam_Descriptor(item->get_global_descriptor(), 4096);
    EXPECT_EQ(GetBytes(rebuilt, 0, 64), Pattern(64, 25));
    delete rebuilt;
    EXPECT_EQ(GetBytes(item.get(), 0, 64), Pattern(64, 25));
}

TEST_F(ItemTest, DescriptorFromGlobalDescriptorOfDeallocatedItemIsRefused) {
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region_.get());
    Fam_Global_Descriptor global = item->get_global_descriptor();
    fam()->fam_deallocate(item.get());
    Fam_Descriptor rebuilt(global);
    char buffer[8];
    CaughtError caught =
        CatchFamError([&] { fam()->fam_get_blocking(buffer, &rebuilt, 0, sizeof(buffer)); });
    EXPECT_TRUE(caught.thrown) << "a get through a rebuilt descriptor of a freed item worked";
    EXPECT_TRUE(caught.code == FAM_ERR_INVALID || caught.code == FAM_ERR_NOTFOUND)
        << FamErrorName(caught.code) << ": " << caught.message;
}

}  // namespace
}  // namespace fampool_test
