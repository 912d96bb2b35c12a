// region_test.cc: fam_create_region, fam_lookup_region, fam_stat, fam_resize_region,
// fam_change_permissions and fam_destroy_region on regions.
#include <fam/fam.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kKiB = 1024, kMiB = kKiB * kKiB;

using RegionTest = FamTest;

// ---------------------------------------------------------------------------------------------
// Create and describe

TEST_F(RegionTest, CreateRegionReturnsDescriptorWithNameSizeAndPerm) {
    std::unique_ptr<Fam_Region_Descriptor> region(
        fam()->fam_create_region("r", 4 * kMiB, 0750, nullptr));
    ASSERT_NE(region, nullptr);
    EXPECT_STREQ(region->get_name(), "r");
    EXPECT_EQ(region->get_size(), 4 * kMiB);
    EXPECT_EQ(region->get_perm() & 0777, 0750u);
    EXPECT_EQ(region->get_uid(), getuid());
    EXPECT_EQ(region->get_gid(), getgid());
}

TEST_F(RegionTest, CreateRegionWithNullAttributesUsesDocumentedDefaults) {
    std::unique_ptr<Fam_Region_Descriptor> region(
        fam()->fam_create_region("r", kMiB, 0777, nullptr));
    EXPECT_EQ(region->get_memoryType(), VOLATILE);
    EXPECT_EQ(region->get_permissionLevel(), REGION);
    EXPECT_EQ(region->get_redundancyLevel(), NONE);
}

// A redundancy level is a promise that the region survives a memory server's loss: refused
// where it cannot be kept (FAM_ERR_RESOURCE with fewer memory servers than it needs, as on the
// embedded model; FAM_ERR_UNIMPL on larger clusters until redundant regions exist), naming the
// region and the level, and nothing is created.
// RAID1 needs 2 memory servers and RAID5 3 (and interleaving, its stripe unit): where the
// cluster has them the region keeps its level and its items work; elsewhere (the embedded
// model has one server) the call is refused, naming the region and the level, and nothing is
// created. tests/redundancy_test.cc covers what redundancy survives.
TEST_F(RegionTest, RedundancyIsKeptWhereServersAllowAndRefusedClearlyElsewhere) {
    int servers = cluster() ? cluster()->servers() : 1;
    for (Fam_Redundancy_Level level : {RAID1, RAID5}) {
        Fam_Region_Attributes attrs = FamAttributes();
        attrs.redundancyLevel = level;
        std::unique_ptr<Fam_Region_Descriptor> region;
        CaughtError caught = CatchFamError(
            [&] { region.reset(fam()->fam_create_region("safe", kMiB, 0777, &attrs)); });
        bool enough = servers >= (level == RAID1 ? 2 : 3);
        if (!enough || caught.thrown) {
            if (!enough) {
                EXPECT_EQ(caught.code, FAM_ERR_RESOURCE) << caught.message;
            }
            if (enough) {  // RAID5 on a cluster without interleaving
                EXPECT_EQ(level, RAID5);
                EXPECT_EQ(caught.code, FAM_ERR_INVALID) << caught.message;
                EXPECT_NE(caught.message.find("interleav"), std::string::npos) << caught.message;
            }
            EXPECT_NE(caught.message.find("\"safe\""), std::string::npos) << caught.message;
            EXPECT_NE(caught.message.find(level == RAID1 ? "RAID1" : "RAID5"), std::string::npos)
                << caught.message;
            EXPECT_FAM_ERROR(delete fam()->fam_lookup_region("safe"), FAM_ERR_NOTFOUND,
                             "fam_lookup_region");
            continue;
        }
        EXPECT_EQ(region->get_redundancyLevel(), level);
        std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("safe"));
        EXPECT_EQ(found->get_redundancyLevel(), level);
        auto item = Allocate("i", 64 << 10, region.get());
        std::vector<uint8_t> bytes = Pattern(64 << 10, 5);
        PutBytes(item.get(), 0, bytes);
        EXPECT_EQ(GetBytes(item.get(), 0, 64 << 10), bytes);
        EXPECT_EQ(fam()->fam_fetch_add(item.get(), 8, uint64_t{3}),
                  *reinterpret_cast<uint64_t *>(bytes.data() + 8));
        item.reset();
        fam()->fam_destroy_region(region.get());
    }
}

// A C program may store any int in an attribute: each field outside its enumeration is refused
// by name. (Stored through memcpy: in C++ the out-of-range enumerator is itself undefined, and
// the library once read it as one; tests/fuzz/c_api_fuzz found it.)
TEST_F(RegionTest, AttributesOutsideTheirEnumerationsAreRefusedByName) {
    struct Field {
        size_t offset;
        const char *name;
    } fields[] = {{offsetof(Fam_Region_Attributes, redundancyLevel), "redundancyLevel 9"},
                  {offsetof(Fam_Region_Attributes, memoryType), "memoryType 9"},
                  {offsetof(Fam_Region_Attributes, interleaveEnable), "interleaveEnable 9"},
                  {offsetof(Fam_Region_Attributes, permissionLevel), "permissionLevel 9"}};
    for (const Field &field : fields) {
        Fam_Region_Attributes attrs = FamAttributes();
        int bad = 9;
        std::memcpy(reinterpret_cast<char *>(&attrs) + field.offset, &bad, sizeof bad);
        EXPECT_FAM_ERROR(delete fam()->fam_create_region("odd", kMiB, 0777, &attrs),
                         FAM_ERR_INVALID, field.name);
    }
}

TEST_F(RegionTest, CreateRegionWithDefaultEnumeratorsUsesDocumentedDefaults) {
    Fam_Region_Attributes attrs = FamAttributes();
    std::unique_ptr<Fam_Region_Descriptor> region(
        fam()->fam_create_region("r", kMiB, 0777, &attrs));
    EXPECT_EQ(region->get_memoryType(), VOLATILE);
    EXPECT_EQ(region->get_permissionLevel(), REGION);
    EXPECT_EQ(region->get_redundancyLevel(), NONE);
}

TEST_F(RegionTest, CreateRegionKeepsRequestedAttributes) {
    Fam_Region_Attributes attrs = FamAttributes(PERSISTENT, DATAITEM);
    std::unique_ptr<Fam_Region_Descriptor> region(
        fam()->fam_create_region("r", kMiB, 0777, &attrs));
    EXPECT_EQ(region->get_memoryType(), PERSISTENT);
    EXPECT_EQ(region->get_permissionLevel(), DATAITEM);
}

TEST_F(RegionTest, StatRegionReportsSizePermNameOwnerAndAttributes) {
    Fam_Region_Attributes attrs = FamAttributes(VOLATILE, DATAITEM);
    std::unique_ptr<Fam_Region_Descriptor> region(
        fam()->fam_create_region("stat-me", 2 * kMiB, 0740, &attrs));
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.size, 2 * kMiB);
    EXPECT_EQ(stat.perm & 0777, 0740u);
    ASSERT_NE(stat.name, nullptr);
    EXPECT_STREQ(stat.name, "stat-me");
    EXPECT_EQ(stat.uid, getuid());
    EXPECT_EQ(stat.gid, getgid());
    EXPECT_EQ(stat.region_attributes.memoryType, VOLATILE);
    EXPECT_EQ(stat.region_attributes.permissionLevel, DATAITEM);
    EXPECT_EQ(stat.region_attributes.redundancyLevel, NONE);
    EXPECT_GE(stat.num_memservers, 1u);
    EXPECT_LE(stat.num_memservers, static_cast<uint64_t>(FAM_MAX_MEMORY_SERVERS));
}

TEST_F(RegionTest, StatRegionReportsDefaultsForNullAttributes) {
    std::unique_ptr<Fam_Region_Descriptor> region(
        fam()->fam_create_region("r", kMiB, 0777, nullptr));
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.region_attributes.memoryType, VOLATILE);
    EXPECT_EQ(stat.region_attributes.permissionLevel, REGION);
    EXPECT_EQ(stat.region_attributes.redundancyLevel, NONE);
}

TEST_F(RegionTest, StatRegionWithNullStatThrowsNullptr) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    EXPECT_FAM_ERROR(fam()->fam_stat(region.get(), static_cast<Fam_Stat *>(nullptr)),
                     FAM_ERR_NULLPTR, "fam_stat");
}

TEST_F(RegionTest, StatNullRegionDescriptorThrowsNullptr) {
    Fam_Stat stat{};
    EXPECT_FAM_ERROR(fam()->fam_stat(static_cast<Fam_Region_Descriptor *>(nullptr), &stat),
                     FAM_ERR_NULLPTR, "fam_stat");
}

// ---------------------------------------------------------------------------------------------
// Volatile and persistent heaps live where docs/semantics.md says.

size_t FileCount(const std::vector<std::string> &dirs) {
    size_t count = 0;
    for (const std::string &dir : dirs) count += ListFiles(dir).size();
    return count;
}

TEST_F(RegionTest, VolatileRegionHeapIsInShmDir) {
    size_t before = FileCount(VolatileHeapDirs());
    Fam_Region_Attributes attrs = FamAttributes(VOLATILE);
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("v", 4 * kMiB, 0777, &attrs);
    EXPECT_GT(FileCount(VolatileHeapDirs()), before);
}

TEST_F(RegionTest, PersistentRegionHeapIsUnderHomeNotShmDir) {
    size_t shm_before = FileCount(VolatileHeapDirs());
    Fam_Region_Attributes attrs = FamAttributes(PERSISTENT);
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("p", 4 * kMiB, 0777, &attrs);
    EXPECT_EQ(FileCount(VolatileHeapDirs()), shm_before);
    EXPECT_GE(FileCount(PersistentHeapDirs()), 1u);
}

TEST_F(RegionTest, PersistentRegionDataSurvivesFinalize) {
    Fam_Region_Attributes attrs = FamAttributes(PERSISTENT);
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("p", 4 * kMiB, 0777, &attrs);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 8192, region.get());
    PutBytes(item.get(), 0, Pattern(8192, 5));
    item.reset();
    region.reset();
    ReinitializeFam();
    std::unique_ptr<Fam_Descriptor> again(fam()->fam_lookup("i", "p"));
    EXPECT_EQ(GetBytes(again.get(), 0, 8192), Pattern(8192, 5));
}

TEST_F(RegionTest, VolatileRegionDataSurvivesFinalize) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("v", 4 * kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 8192, region.get());
    PutBytes(item.get(), 0, Pattern(8192, 6));
    ReinitializeFam();
    std::unique_ptr<Fam_Descriptor> again(fam()->fam_lookup("i", "v"));
    EXPECT_EQ(GetBytes(again.get(), 0, 8192), Pattern(8192, 6));
}

// ---------------------------------------------------------------------------------------------
// Bad arguments to fam_create_region

TEST_F(RegionTest, DuplicateRegionNameThrowsAlreadyExist) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("dup", kMiB);
    EXPECT_FAM_ERROR(delete fam()->fam_create_region("dup", kMiB, 0777, nullptr),
                     FAM_ERR_ALREADYEXIST, "fam_create_region");
}

TEST_F(RegionTest, DuplicateRegionNameLeavesFirstRegionUnchanged) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("dup", kMiB, 0750);
    EXPECT_FAM_ERROR(delete fam()->fam_create_region("dup", 2 * kMiB, 0700, nullptr),
                     FAM_ERR_ALREADYEXIST, "fam_create_region");
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("dup"));
    EXPECT_EQ(found->get_size(), kMiB);
    EXPECT_EQ(found->get_perm() & 0777, 0750u);
}

TEST_F(RegionTest, CreateRegionOfSizeZeroThrowsInvalid) {
    EXPECT_FAM_ERROR(delete fam()->fam_create_region("zero", 0, 0777, nullptr), FAM_ERR_INVALID,
                     "fam_create_region");
    EXPECT_FAM_ERROR(delete fam()->fam_lookup_region("zero"), FAM_ERR_NOTFOUND,
                     "fam_lookup_region");
}

TEST_F(RegionTest, RegionNameOf255BytesIsAccepted) {
    std::string name(255, 'n');
    std::unique_ptr<Fam_Region_Descriptor> region(
        fam()->fam_create_region(name.c_str(), kMiB, 0777, nullptr));
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region(name.c_str()));
    EXPECT_EQ(std::string(found->get_name()), name);
}

TEST_F(RegionTest, RegionNameOf256BytesThrowsNameTooLong) {
    std::string name(256, 'n');
    EXPECT_FAM_ERROR(delete fam()->fam_create_region(name.c_str(), kMiB, 0777, nullptr),
                     FAM_ERR_NAME_TOO_LONG, "fam_create_region");
}

TEST_F(RegionTest, EmptyRegionNameThrowsInvalid) {
    EXPECT_FAM_ERROR(delete fam()->fam_create_region("", kMiB, 0777, nullptr), FAM_ERR_INVALID,
                     "fam_create_region");
}

TEST_F(RegionTest, NullRegionNameThrowsNullptr) {
    EXPECT_FAM_ERROR(delete fam()->fam_create_region(nullptr, kMiB, 0777, nullptr), FAM_ERR_NULLPTR,
                     "fam_create_region");
}

// ---------------------------------------------------------------------------------------------
// Lookup

TEST_F(RegionTest, LookupRegionFindsCreatedRegion) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 3 * kMiB, 0751);
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("r"));
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->get_global_descriptor().regionId, region->get_global_descriptor().regionId);
    EXPECT_EQ(found->get_size(), 3 * kMiB);
    EXPECT_EQ(found->get_perm() & 0777, 0751u);
    EXPECT_STREQ(found->get_name(), "r");
}

TEST_F(RegionTest, DistinctRegionsHaveDistinctIds) {
    std::unique_ptr<Fam_Region_Descriptor> a = CreateRegion("a", kMiB);
    std::unique_ptr<Fam_Region_Descriptor> b = CreateRegion("b", kMiB);
    EXPECT_NE(a->get_global_descriptor().regionId, b->get_global_descriptor().regionId);
}

TEST_F(RegionTest, LookupUnknownRegionThrowsNotFound) {
    EXPECT_FAM_ERROR(delete fam()->fam_lookup_region("nowhere"), FAM_ERR_NOTFOUND,
                     "fam_lookup_region");
}

TEST_F(RegionTest, LookupRegionWithNullNameThrowsNullptr) {
    EXPECT_FAM_ERROR(delete fam()->fam_lookup_region(nullptr), FAM_ERR_NULLPTR,
                     "fam_lookup_region");
}

TEST_F(RegionTest, RegionFromGlobalDescriptorIsUsable) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 4 * kMiB);
    Fam_Region_Descriptor rebuilt(region->get_global_descriptor());
    std::unique_ptr<Fam_Descriptor> item(fam()->fam_allocate("i", 4096, 0600, &rebuilt));
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("i", "r"));
    EXPECT_EQ(found->get_size(), 4096u);
}

TEST_F(RegionTest, RegionFromGlobalDescriptorStatsLikeTheOriginal) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 4 * kMiB, 0750);
    Fam_Region_Descriptor rebuilt(region->get_global_descriptor(), 4 * kMiB);
    Fam_Stat stat{};
    fam()->fam_stat(&rebuilt, &stat);
    EXPECT_EQ(stat.size, 4 * kMiB);
    EXPECT_EQ(stat.perm & 0777, 0750u);
    EXPECT_STREQ(stat.name, "r");
}

// ---------------------------------------------------------------------------------------------
// Destroy

TEST_F(RegionTest, DestroyedRegionLookupThrowsNotFound) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("gone", kMiB);
    fam()->fam_destroy_region(region.get());
    EXPECT_FAM_ERROR(delete fam()->fam_lookup_region("gone"), FAM_ERR_NOTFOUND,
                     "fam_lookup_region");
}

TEST_F(RegionTest, DestroyedRegionNameCanBeCreatedAgain) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("again", kMiB);
    fam()->fam_destroy_region(region.get());
    std::unique_ptr<Fam_Region_Descriptor> second(
        fam()->fam_create_region("again", 2 * kMiB, 0777, nullptr));
    EXPECT_EQ(second->get_size(), 2 * kMiB);
}

TEST_F(RegionTest, DestroyRegionRemovesItsItems) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region.get());
    fam()->fam_destroy_region(region.get());
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("i", "r"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(RegionTest, RecreatedRegionDoesNotContainOldItems) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region.get());
    fam()->fam_destroy_region(region.get());
    std::unique_ptr<Fam_Region_Descriptor> second = CreateRegion("r", kMiB);
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("i", "r"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(RegionTest, DestroyVolatileRegionRemovesItsHeap) {
    size_t before = FileCount(VolatileHeapDirs());
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 4 * kMiB);
    ASSERT_GT(FileCount(VolatileHeapDirs()), before);
    fam()->fam_destroy_region(region.get());
    EXPECT_EQ(FileCount(VolatileHeapDirs()), before);
}

TEST_F(RegionTest, DestroyNullRegionThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_destroy_region(nullptr), FAM_ERR_NULLPTR, "fam_destroy_region");
}

TEST_F(RegionTest, AllocateInDestroyedRegionDescriptorThrowsInvalid) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    fam()->fam_destroy_region(region.get());
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("i", 64, 0600, region.get()), FAM_ERR_INVALID,
                     "fam_allocate");
}

TEST_F(RegionTest, DestroyRegionTwiceThrowsInvalid) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    fam()->fam_destroy_region(region.get());
    EXPECT_FAM_ERROR(fam()->fam_destroy_region(region.get()), FAM_ERR_INVALID,
                     "fam_destroy_region");
}

TEST_F(RegionTest, StatDestroyedRegionDescriptorThrowsInvalid) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    fam()->fam_destroy_region(region.get());
    Fam_Stat stat{};
    EXPECT_FAM_ERROR(fam()->fam_stat(region.get(), &stat), FAM_ERR_INVALID, "fam_stat");
}

TEST_F(RegionTest, ResizeDestroyedRegionDescriptorThrowsInvalid) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    fam()->fam_destroy_region(region.get());
    EXPECT_FAM_ERROR(fam()->fam_resize_region(region.get(), 2 * kMiB), FAM_ERR_INVALID,
                     "fam_resize_region");
}

TEST_F(RegionTest, DestroyedRegionDescriptorStaysInvalidAfterNameIsReused) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    fam()->fam_destroy_region(region.get());
    std::unique_ptr<Fam_Region_Descriptor> second = CreateRegion("r", kMiB);
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("i", 64, 0600, region.get()), FAM_ERR_INVALID,
                     "fam_allocate");
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("i", "r"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(RegionTest, ItemDescriptorOfDestroyedRegionThrowsInvalid) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 4096, region.get());
    fam()->fam_destroy_region(region.get());
    char buffer[16] = {1};
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(buffer, item.get(), 0, sizeof(buffer)),
                     FAM_ERR_INVALID, "fam_put_blocking");
}

// ---------------------------------------------------------------------------------------------
// Resize

TEST_F(RegionTest, GrowRegionUpdatesSizeInStatAndLookup) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    fam()->fam_resize_region(region.get(), 8 * kMiB);
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.size, 8 * kMiB);
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("r"));
    EXPECT_EQ(found->get_size(), 8 * kMiB);
}

TEST_F(RegionTest, GrownRegionHoldsAnItemLargerThanItsOldSize) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    fam()->fam_resize_region(region.get(), 8 * kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("big", 4 * kMiB, region.get());
    std::vector<uint8_t> tail = Pattern(4096, 9);
    PutBytes(item.get(), 4 * kMiB - 4096, tail);
    EXPECT_EQ(GetBytes(item.get(), 4 * kMiB - 4096, 4096), tail);
}

// Items of the region were used (on a cluster: keys granted) before it grew: an item in the
// grown part is reachable all the same.
TEST_F(RegionTest, ItemInTheGrownPartIsReachableAfterEarlierItemsWereUsed) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    std::unique_ptr<Fam_Descriptor> first = Allocate("first", kMiB, region.get());
    PutBytes(first.get(), 0, Pattern(4096, 2));
    fam()->fam_resize_region(region.get(), 8 * kMiB);
    std::unique_ptr<Fam_Descriptor> second = Allocate("second", 4 * kMiB, region.get());
    std::vector<uint8_t> tail = Pattern(4096, 3);
    PutBytes(second.get(), 4 * kMiB - 4096, tail);
    EXPECT_EQ(GetBytes(second.get(), 4 * kMiB - 4096, 4096), tail);
    EXPECT_EQ(fam()->fam_fetch_add(second.get(), 0, uint64_t{5}), 0u);
    EXPECT_EQ(GetBytes(first.get(), 0, 4096), Pattern(4096, 2));
}

TEST_F(RegionTest, GrowRegionKeepsExistingItemData) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 65536, region.get());
    PutBytes(item.get(), 0, Pattern(65536, 4));
    fam()->fam_resize_region(region.get(), 16 * kMiB);
    EXPECT_EQ(GetBytes(item.get(), 0, 65536), Pattern(65536, 4));
}

TEST_F(RegionTest, ShrinkEmptyRegionUpdatesSize) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 8 * kMiB);
    fam()->fam_resize_region(region.get(), 2 * kMiB);
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.size, 2 * kMiB);
}

TEST_F(RegionTest, ShrunkRegionRefusesAllocationBeyondNewSize) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 8 * kMiB);
    fam()->fam_resize_region(region.get(), kMiB);
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("big", 4 * kMiB, 0600, region.get()),
                     FAM_ERR_NO_SPACE, "fam_allocate");
}

// At 1 MiB the region holds 1 MiB (embedded) or 3 MiB (3 interleaved servers): less than the
// item (docs/semantics.md, "Region capacity").
TEST_F(RegionTest, ShrinkBelowAnItemThrowsInvalid) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 4 * kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 3 * kMiB + 512 * kKiB, region.get());
    EXPECT_FAM_ERROR(fam()->fam_resize_region(region.get(), kMiB), FAM_ERR_INVALID,
                     "fam_resize_region");
}

TEST_F(RegionTest, FailedShrinkLeavesSizeAndDataUnchanged) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 4 * kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", 3 * kMiB + 512 * kKiB, region.get());
    PutBytes(item.get(), 3 * kMiB - 4096, Pattern(4096, 8));
    EXPECT_FAM_ERROR(fam()->fam_resize_region(region.get(), kMiB), FAM_ERR_INVALID,
                     "fam_resize_region");
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.size, 4 * kMiB);
    EXPECT_EQ(GetBytes(item.get(), 3 * kMiB - 4096, 4096), Pattern(4096, 8));
}

TEST_F(RegionTest, ResizeToZeroThrowsInvalid) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB);
    EXPECT_FAM_ERROR(fam()->fam_resize_region(region.get(), 0), FAM_ERR_INVALID,
                     "fam_resize_region");
}

TEST_F(RegionTest, ResizeNullRegionThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_resize_region(nullptr, kMiB), FAM_ERR_NULLPTR, "fam_resize_region");
}

// ---------------------------------------------------------------------------------------------
// Permissions of the region itself (who may do what is in permission_test.cc)

TEST_F(RegionTest, ChangeRegionPermissionsShowsInStat) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB, 0777);
    fam()->fam_change_permissions(region.get(), 0700);
    Fam_Stat stat{};
    fam()->fam_stat(region.get(), &stat);
    EXPECT_EQ(stat.perm & 0777, 0700u);
}

TEST_F(RegionTest, ChangeRegionPermissionsShowsInNewLookup) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB, 0777);
    fam()->fam_change_permissions(region.get(), 0750);
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("r"));
    EXPECT_EQ(found->get_perm() & 0777, 0750u);
}

TEST_F(RegionTest, ChangePermissionsOfNullRegionThrowsNullptr) {
    EXPECT_FAM_ERROR(
        fam()->fam_change_permissions(static_cast<Fam_Region_Descriptor *>(nullptr), 0700),
        FAM_ERR_NULLPTR, "fam_change_permissions");
}

}  // namespace
}  // namespace fampool_test
