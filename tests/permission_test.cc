// permission_test.cc: POSIX owner/group/other permissions on regions and items, for the owner
// (this process, root: fampool has no superuser exception) and for another user (uid/gid
// 65534 in a child process), at REGION and DATAITEM permission levels.
#include <fam/fam.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kItemSize = 4096;

class PermissionTest : public FamTest {
  protected:
    void PrepareEnvironment() override { ShareStoreWithChildren(); }
    void TearDown() override {
        items_.clear();
        regions_.clear();
        FamTest::TearDown();
    }

    // A region (REGION level unless `level` says otherwise) created 0700 so that the owner can
    // fill it, with item "i" (permissions `item_perm`, which must let the owner write) holding
    // Pattern(kItemSize, 1); then the region's permissions are changed to `perm`.
    Fam_Region_Descriptor *RegionWithItem(const char *name, mode_t perm,
                                          Fam_Permission_Level level = REGION,
                                          mode_t item_perm = 0700) {
        Fam_Region_Attributes attrs = FamAttributes(VOLATILE, level);
        regions_.push_back(CreateRegion(name, 4 * kMiB, 0700, &attrs));
        Fam_Region_Descriptor *region = regions_.back().get();
        items_.push_back(Allocate("i", kItemSize, region, item_perm));
        PutBytes(items_.back().get(), 0, Pattern(kItemSize, 1));
        fam()->fam_change_permissions(region, perm);
        return region;
    }

    Fam_Descriptor *Item(size_t i = 0) { return items_.at(i).get(); }

    // A new descriptor for item "i" of `region_name`, looked up now.
    std::unique_ptr<Fam_Descriptor> Lookup(const char *region_name) {
        return std::unique_ptr<Fam_Descriptor>(fam()->fam_lookup("i", region_name));
    }

    std::vector<std::unique_ptr<Fam_Region_Descriptor>> regions_;
    std::vector<std::unique_ptr<Fam_Descriptor>> items_;
};

// ---------------------------------------------------------------------------------------------
// The owner (root, with no superuser exception)

TEST_F(PermissionTest, RegionCreated0400RefusesAllocate) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("ro", kMiB, 0400);
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("i", 64, 0600, region.get()), FAM_ERR_NOPERM,
                     "fam_allocate");
}

TEST_F(PermissionTest, ReadOnlyRegionRefusesPutAndWritesNothing) {
    RegionWithItem("ro", 0400);
    std::unique_ptr<Fam_Descriptor> item = Lookup("ro");
    std::vector<uint8_t> data(64, 0xCD);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), item.get(), 0, data.size()),
                     FAM_ERR_NOPERM, "fam_put_blocking");
    EXPECT_EQ(GetBytes(item.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(PermissionTest, ReadOnlyRegionAllowsGet) {
    RegionWithItem("ro", 0400);
    std::unique_ptr<Fam_Descriptor> item = Lookup("ro");
    EXPECT_EQ(GetBytes(item.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(PermissionTest, ReadOnlyRegionRefusesAtomicsButAllowsFetch) {
    RegionWithItem("ro", 0400);
    std::unique_ptr<Fam_Descriptor> item = Lookup("ro");
    EXPECT_FAM_ERROR_AT_QUIET(fam(), fam()->fam_add(item.get(), 0, uint64_t{1}), FAM_ERR_NOPERM,
                              "fam_add");
    EXPECT_FAM_ERROR(fam()->fam_fetch_add(item.get(), 0, uint64_t{1}), FAM_ERR_NOPERM,
                     "fam_fetch_add");
    EXPECT_NO_THROW(fam()->fam_fetch_uint64(item.get(), 0));
}

TEST_F(PermissionTest, ReadOnlyRegionRefusesScatter) {
    RegionWithItem("ro", 0400);
    std::unique_ptr<Fam_Descriptor> item = Lookup("ro");
    uint64_t data[2] = {1, 2}, index[2] = {0, 3};
    EXPECT_FAM_ERROR(fam()->fam_scatter_blocking(data, item.get(), 2, index, 8), FAM_ERR_NOPERM,
                     "fam_scatter_blocking");
}

TEST_F(PermissionTest, WriteOnlyRegionRefusesGetButAllowsPut) {
    RegionWithItem("wo", 0200);
    std::unique_ptr<Fam_Descriptor> item = Lookup("wo");
    std::vector<uint8_t> buffer(64);
    EXPECT_FAM_ERROR(fam()->fam_get_blocking(buffer.data(), item.get(), 0, buffer.size()),
                     FAM_ERR_NOPERM, "fam_get_blocking");
    EXPECT_NO_THROW(fam()->fam_put_blocking(buffer.data(), item.get(), 0, buffer.size()));
}

TEST_F(PermissionTest, OwnerBitsApplyToOwnerEvenWhenGroupAndOtherAllow) {
    RegionWithItem("others-only", 0077);
    // The owner finds the item (its record is the owner's to see), and may neither read nor
    // write it.
    std::unique_ptr<Fam_Descriptor> item = Lookup("others-only");
    std::vector<uint8_t> buffer(64);
    EXPECT_FAM_ERROR(fam()->fam_get_blocking(buffer.data(), item.get(), 0, buffer.size()),
                     FAM_ERR_NOPERM, "fam_get_blocking");
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(buffer.data(), item.get(), 0, buffer.size()),
                     FAM_ERR_NOPERM, "fam_put_blocking");
}

TEST_F(PermissionTest, OwnerCanStillChangePermissionsOfRegionWithNoOwnerBits) {
    Fam_Region_Descriptor *region = RegionWithItem("locked", 0000);
    fam()->fam_change_permissions(region, 0600);
    std::unique_ptr<Fam_Descriptor> item = Lookup("locked");
    EXPECT_EQ(GetBytes(item.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(PermissionTest, ChangeRegionPermissionsTakesEffectForNewLookup) {
    Fam_Region_Descriptor *region = RegionWithItem("r", 0600);
    std::unique_ptr<Fam_Descriptor> before = Lookup("r");
    PutBytes(before.get(), 0, Pattern(64, 2));
    fam()->fam_change_permissions(region, 0400);
    std::unique_ptr<Fam_Descriptor> after = Lookup("r");
    std::vector<uint8_t> data(64, 0xCD);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), after.get(), 0, data.size()),
                     FAM_ERR_NOPERM, "fam_put_blocking");
}

TEST_F(PermissionTest, RegionLevelRegionAppliesRegionBitsNotItemBits) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB, 0700);
    ASSERT_EQ(region->get_permissionLevel(), REGION);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", kItemSize, region.get(), 0400);
    std::vector<uint8_t> data = Pattern(64, 3);
    EXPECT_NO_THROW(fam()->fam_put_blocking(data.data(), item.get(), 0, data.size()));
    EXPECT_EQ(GetBytes(item.get(), 0, 64), data);
}

TEST_F(PermissionTest, ChangeItemPermissionsInRegionLevelRegionThrowsInvalidOp) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", kMiB, 0700);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", kItemSize, region.get(), 0600);
    EXPECT_FAM_ERROR(fam()->fam_change_permissions(item.get(), 0400), FAM_ERR_INVALIDOP,
                     "fam_change_permissions");
    Fam_Stat stat{};
    fam()->fam_stat(item.get(), &stat);
    EXPECT_EQ(stat.perm & 0777, 0600u);
}

TEST_F(PermissionTest, DataitemRegionAppliesItemBits) {
    Fam_Region_Attributes attrs = FamAttributes(VOLATILE, DATAITEM);
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("d", kMiB, 0777, &attrs);
    std::unique_ptr<Fam_Descriptor> read_only = Allocate("ro", kItemSize, region.get(), 0400);
    std::unique_ptr<Fam_Descriptor> read_write = Allocate("rw", kItemSize, region.get(), 0600);
    std::vector<uint8_t> data = Pattern(64, 4);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), read_only.get(), 0, data.size()),
                     FAM_ERR_NOPERM, "fam_put_blocking");
    EXPECT_NO_THROW(fam()->fam_put_blocking(data.data(), read_write.get(), 0, data.size()));
}

TEST_F(PermissionTest, ChangeItemPermissionsInDataitemRegionShowsInStat) {
    Fam_Region_Attributes attrs = FamAttributes(VOLATILE, DATAITEM);
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("d", kMiB, 0777, &attrs);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", kItemSize, region.get(), 0600);
    fam()->fam_change_permissions(item.get(), 0440);
    Fam_Stat stat{};
    fam()->fam_stat(item.get(), &stat);
    EXPECT_EQ(stat.perm & 0777, 0440u);
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("i", "d"));
    EXPECT_EQ(found->get_perm() & 0777, 0440u);
}

TEST_F(PermissionTest, ChangeItemPermissionsInDataitemRegionTakesEffectForNewLookup) {
    Fam_Region_Attributes attrs = FamAttributes(VOLATILE, DATAITEM);
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("d", kMiB, 0777, &attrs);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", kItemSize, region.get(), 0600);
    fam()->fam_change_permissions(item.get(), 0400);
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("i", "d"));
    std::vector<uint8_t> data = Pattern(64, 5);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), found.get(), 0, data.size()),
                     FAM_ERR_NOPERM, "fam_put_blocking");
}

TEST_F(PermissionTest, ChangePermissionsOfNullItemThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_change_permissions(static_cast<Fam_Descriptor *>(nullptr), 0600),
                     FAM_ERR_NULLPTR, "fam_change_permissions");
}

// ---------------------------------------------------------------------------------------------
// Another user (uid/gid 65534) in a child process

TEST_F(PermissionTest, OtherUserCannotLookUpRegionWithoutOtherBits) {
    RegionWithItem("private", 0700);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        CHILD_EXPECT_FAM_ERROR(delete f->fam_lookup_region("private"), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, OtherUserCannotLookUpItemOfRegionWithoutOtherBits) {
    RegionWithItem("private", 0700);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        CHILD_EXPECT_FAM_ERROR(delete f->fam_lookup("i", "private"), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, OtherUserCannotReadThroughGlobalDescriptorOfPrivateRegion) {
    RegionWithItem("private", 0700);
    Fam_Global_Descriptor global = Item()->get_global_descriptor();
    int status = RunAsUser(kNobodyUid, kNobodyGid, [global]() -> int {
        ScopedFam f;
        Fam_Descriptor item(global, kItemSize);
        std::vector<uint8_t> buffer(kItemSize);
        CHILD_EXPECT_FAM_ERROR(f->fam_get_blocking(buffer.data(), &item, 0, buffer.size()),
                               FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, OtherUserCanReadItemOfRegionWithOtherReadBit) {
    RegionWithItem("shared", 0744);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "shared"));
        std::vector<uint8_t> buffer(kItemSize);
        f->fam_get_blocking(buffer.data(), item.get(), 0, buffer.size());
        CHILD_EXPECT(buffer == Pattern(kItemSize, 1));
        CHILD_EXPECT(f->fam_fetch_uint64(item.get(), 0) != 0);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, OtherUserCannotWriteItemOfRegionWithOnlyOtherReadBit) {
    RegionWithItem("shared", 0744);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "shared"));
        std::vector<uint8_t> data(kItemSize, 0xCD);
        CHILD_EXPECT_FAM_ERROR(f->fam_put_blocking(data.data(), item.get(), 0, data.size()),
                               FAM_ERR_NOPERM);
        CHILD_EXPECT_NO_FAM_ERROR(f->fam_set(item.get(), 0, uint64_t{7}));  // fails at quiet
        CHILD_EXPECT_FAM_ERROR(f->fam_quiet(), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
    EXPECT_EQ(GetBytes(Item(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(PermissionTest, OtherUserCannotAllocateInRegionWithoutOtherWriteBit) {
    RegionWithItem("shared", 0755);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("shared"));
        CHILD_EXPECT_FAM_ERROR(delete f->fam_allocate("mine", 64, 0600, region.get()),
                               FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("mine", "shared"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(PermissionTest, OtherUserAllocatesInOpenRegionAndOwnsTheItem) {
    RegionWithItem("open", 0777);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("open"));
        std::unique_ptr<Fam_Descriptor> item(f->fam_allocate("theirs", 64, 0600, region.get()));
        CHILD_EXPECT(item->get_uid() == kNobodyUid);
        return 0;
    });
    ASSERT_EQ(status, 0);
    std::unique_ptr<Fam_Descriptor> theirs(fam()->fam_lookup("theirs", "open"));
    Fam_Stat stat{};
    fam()->fam_stat(theirs.get(), &stat);
    EXPECT_EQ(stat.uid, kNobodyUid);
    EXPECT_EQ(stat.gid, kNobodyGid);
}

TEST_F(PermissionTest, OtherUserCannotDestroyRootRegionEvenWithAllBits) {
    RegionWithItem("open", 0777);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("open"));
        CHILD_EXPECT_FAM_ERROR(f->fam_destroy_region(region.get()), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
    std::unique_ptr<Fam_Descriptor> item = Lookup("open");
    EXPECT_EQ(GetBytes(item.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(PermissionTest, OtherUserCannotResizeRootRegion) {
    RegionWithItem("open", 0777);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("open"));
        CHILD_EXPECT_FAM_ERROR(f->fam_resize_region(region.get(), 8 * kMiB), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
    std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region("open"));
    EXPECT_EQ(region->get_size(), 4 * kMiB);
}

TEST_F(PermissionTest, OtherUserCannotChangePermissionsOfRootRegion) {
    RegionWithItem("open", 0777);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("open"));
        CHILD_EXPECT_FAM_ERROR(f->fam_change_permissions(region.get(), 0700), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
    std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region("open"));
    EXPECT_EQ(region->get_perm() & 0777, 0777u);
}

TEST_F(PermissionTest, OtherUserCannotDeallocateRootItemInOpenRegion) {
    RegionWithItem("open", 0777);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "open"));
        CHILD_EXPECT_FAM_ERROR(f->fam_deallocate(item.get()), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
    std::unique_ptr<Fam_Descriptor> item = Lookup("open");
    EXPECT_EQ(GetBytes(item.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(PermissionTest, OtherUserCanDeallocateOwnItemInOpenRegion) {
    RegionWithItem("open", 0777);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("open"));
        std::unique_ptr<Fam_Descriptor> item(f->fam_allocate("theirs", 64, 0600, region.get()));
        CHILD_EXPECT_NO_FAM_ERROR(f->fam_deallocate(item.get()));
        return 0;
    });
    EXPECT_EQ(status, 0);
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("theirs", "open"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(PermissionTest, RegionOwnerCanDeallocateOtherUsersItem) {
    RegionWithItem("open", 0777);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("open"));
        delete f->fam_allocate("theirs", 64, 0600, region.get());
        return 0;
    });
    ASSERT_EQ(status, 0);
    std::unique_ptr<Fam_Descriptor> theirs(fam()->fam_lookup("theirs", "open"));
    EXPECT_NO_THROW(fam()->fam_deallocate(theirs.get()));
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("theirs", "open"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(PermissionTest, RootCannotDestroyRegionOwnedByOtherUser) {
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        delete f->fam_create_region("theirs", kMiB, 0777, nullptr);
        return 0;
    });
    ASSERT_EQ(status, 0);
    std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region("theirs"));
    EXPECT_EQ(region->get_uid(), kNobodyUid);
    EXPECT_FAM_ERROR(fam()->fam_destroy_region(region.get()), FAM_ERR_NOPERM, "fam_destroy_region");
}

TEST_F(PermissionTest, RootCannotChangePermissionsOfRegionOwnedByOtherUser) {
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        delete f->fam_create_region("theirs", kMiB, 0777, nullptr);
        return 0;
    });
    ASSERT_EQ(status, 0);
    std::unique_ptr<Fam_Region_Descriptor> region(fam()->fam_lookup_region("theirs"));
    EXPECT_FAM_ERROR(fam()->fam_change_permissions(region.get(), 0700), FAM_ERR_NOPERM,
                     "fam_change_permissions");
}

// A descriptor outlives a change of its region's permissions made by another process (on a
// cluster the change revokes the keys it was bound with): it is bound again and keeps working.
TEST_F(PermissionTest, DescriptorKeepsWorkingAfterAnotherProcessChangesRegionPermissions) {
    RegionWithItem("shared", 0700);
    ASSERT_EQ(GetBytes(Item(), 0, kItemSize), Pattern(kItemSize, 1));
    int status = RunInCleanChild([]() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Region_Descriptor> region(f->fam_lookup_region("shared"));
        f->fam_change_permissions(region.get(), 0744);
        return 0;
    });
    ASSERT_EQ(status, 0);
    EXPECT_EQ(GetBytes(Item(), 0, kItemSize), Pattern(kItemSize, 1));
    PutBytes(Item(), 0, Pattern(kItemSize, 2));
    EXPECT_EQ(GetBytes(Item(), 0, kItemSize), Pattern(kItemSize, 2));
    fam()->fam_set(Item(), 0, uint64_t{5});
    EXPECT_EQ(fam()->fam_fetch_uint64(Item(), 0), 5u);
}

// Another user's descriptor, when the owner withdraws the bits it was granted under. On a
// cluster the change revokes its keys: the next read is checked again and refused with
// FAM_ERR_NOPERM (not a fabric error), reading nothing. The embedded model keeps the access
// checked at lookup with the descriptor (docs/semantics.md).
TEST_F(PermissionTest, OtherUsersDescriptorAfterOwnerWithdrawsTheBits) {
    Fam_Region_Descriptor *region = RegionWithItem("shared", 0744);
    TempDir handshake;  // writable by the other user
    SetEnv("FAMPOOL_TEST_HANDSHAKE", handshake.path());
    int status = -1;
    std::thread other([&] {
        status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
            std::string dir = getenv("FAMPOOL_TEST_HANDSHAKE");
            ScopedFam f;
            std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "shared"));
            std::vector<uint8_t> buffer(kItemSize);
            f->fam_get_blocking(buffer.data(), item.get(), 0, buffer.size());
            CHILD_EXPECT(buffer == Pattern(kItemSize, 1));
            fclose(fopen((dir + "/read").c_str(), "w"));
            for (int i = 0; i < 2000 && access((dir + "/withdrawn").c_str(), F_OK) != 0; ++i) {
                usleep(10000);
            }
            CHILD_EXPECT(access((dir + "/withdrawn").c_str(), F_OK) == 0);
            std::vector<uint8_t> after(kItemSize, 0xEE);
            if (::EmbeddedModel()) {
                f->fam_get_blocking(after.data(), item.get(), 0, after.size());
                CHILD_EXPECT(after == Pattern(kItemSize, 1));
                return 0;
            }
            CHILD_EXPECT_FAM_ERROR(f->fam_get_blocking(after.data(), item.get(), 0, after.size()),
                                   FAM_ERR_NOPERM);
            CHILD_EXPECT(after == std::vector<uint8_t>(kItemSize, 0xEE));
            return 0;
        });
    });
    std::string read = handshake.path() + "/read";
    for (int i = 0; i < 3000 && access(read.c_str(), F_OK) != 0; ++i) usleep(10000);
    EXPECT_EQ(access(read.c_str(), F_OK), 0) << "the other user's first read did not happen";
    fam()->fam_change_permissions(region, 0700);
    fclose(fopen((handshake.path() + "/withdrawn").c_str(), "w"));
    other.join();
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, ChangeRegionPermissionsByOwnerTakesEffectForOtherUsersNewLookup) {
    Fam_Region_Descriptor *region = RegionWithItem("shared", 0755);
    auto can_read = []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "shared"));
        std::vector<uint8_t> buffer(kItemSize);
        f->fam_get_blocking(buffer.data(), item.get(), 0, buffer.size());
        CHILD_EXPECT(buffer == Pattern(kItemSize, 1));
        return 0;
    };
    auto refused = []() -> int {
        ScopedFam f;
        CHILD_EXPECT_FAM_ERROR(delete f->fam_lookup("i", "shared"), FAM_ERR_NOPERM);
        return 0;
    };
    ASSERT_EQ(RunAsUser(kNobodyUid, kNobodyGid, can_read), 0);
    fam()->fam_change_permissions(region, 0700);
    EXPECT_EQ(RunAsUser(kNobodyUid, kNobodyGid, refused), 0);
}

// ---------------------------------------------------------------------------------------------
// Group bits: a child with uid 65534 in this process's group, or not

TEST_F(PermissionTest, GroupMemberCanReadAndWriteThroughGroupBits) {
    RegionWithItem("group", 0770);
    gid_t group = getgid();
    int status = RunAsUser(kNobodyUid, group, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "group"));
        std::vector<uint8_t> data = Pattern(kItemSize, 6), back(kItemSize);
        f->fam_put_blocking(data.data(), item.get(), 0, data.size());
        f->fam_get_blocking(back.data(), item.get(), 0, back.size());
        CHILD_EXPECT(back == data);
        return 0;
    });
    EXPECT_EQ(status, 0);
    EXPECT_EQ(GetBytes(Item(), 0, kItemSize), Pattern(kItemSize, 6));
}

TEST_F(PermissionTest, NonMemberIsRefusedWhereOnlyGroupHasBits) {
    RegionWithItem("group", 0770);
    ASSERT_NE(getgid(), kNobodyGid);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        CHILD_EXPECT_FAM_ERROR(delete f->fam_lookup("i", "group"), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, GroupMemberGetsGroupBitsNotOtherBits) {
    RegionWithItem("no-group", 0704);  // others may read, the group may not
    gid_t group = getgid();
    int status = RunAsUser(kNobodyUid, group, []() -> int {
        ScopedFam f;
        CHILD_EXPECT_FAM_ERROR(delete f->fam_lookup("i", "no-group"), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, GroupReadBitLetsMemberReadButNotWrite) {
    RegionWithItem("group-read", 0740);
    gid_t group = getgid();
    int status = RunAsUser(kNobodyUid, group, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "group-read"));
        std::vector<uint8_t> buffer(kItemSize);
        f->fam_get_blocking(buffer.data(), item.get(), 0, buffer.size());
        CHILD_EXPECT(buffer == Pattern(kItemSize, 1));
        CHILD_EXPECT_FAM_ERROR(f->fam_put_blocking(buffer.data(), item.get(), 0, 8),
                               FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

// ---------------------------------------------------------------------------------------------
// DATAITEM-level regions and another user

TEST_F(PermissionTest, OtherUserCannotLookUpPrivateItemInOpenDataitemRegion) {
    RegionWithItem("d", 0777, DATAITEM, 0700);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        CHILD_EXPECT_FAM_ERROR(delete f->fam_lookup("i", "d"), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, OtherUserReadsButCannotWriteReadableItemInDataitemRegion) {
    RegionWithItem("d", 0777, DATAITEM, 0744);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "d"));
        std::vector<uint8_t> buffer(kItemSize);
        f->fam_get_blocking(buffer.data(), item.get(), 0, buffer.size());
        CHILD_EXPECT(buffer == Pattern(kItemSize, 1));
        CHILD_EXPECT_FAM_ERROR(f->fam_put_blocking(buffer.data(), item.get(), 0, 8),
                               FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, ItemPermissionChangeInDataitemRegionTakesEffectForOtherUser) {
    RegionWithItem("d", 0777, DATAITEM, 0700);
    fam()->fam_change_permissions(Item(), 0744);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "d"));
        std::vector<uint8_t> buffer(kItemSize);
        f->fam_get_blocking(buffer.data(), item.get(), 0, buffer.size());
        CHILD_EXPECT(buffer == Pattern(kItemSize, 1));
        return 0;
    });
    EXPECT_EQ(status, 0);
}

TEST_F(PermissionTest, OtherUserCannotChangePermissionsOfRootItemInDataitemRegion) {
    RegionWithItem("d", 0777, DATAITEM, 0766);
    int status = RunAsUser(kNobodyUid, kNobodyGid, []() -> int {
        ScopedFam f;
        std::unique_ptr<Fam_Descriptor> item(f->fam_lookup("i", "d"));
        CHILD_EXPECT_FAM_ERROR(f->fam_change_permissions(item.get(), 0777), FAM_ERR_NOPERM);
        return 0;
    });
    EXPECT_EQ(status, 0);
    Fam_Stat stat{};
    fam()->fam_stat(Item(), &stat);
    EXPECT_EQ(stat.perm & 0777, 0766u);
}

}  // namespace
}  // namespace fampool_test
