// backup_test.cc: fam_backup, fam_restore (into an item, into a new item), fam_list_backup,
// fam_delete_backup, their wait calls, and a backup whose file was damaged.
#include <fam/fam.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kItemSize = 256 * kKiB;  // 262144: looked for in fam_list_backup output

// FAMPOOL_ARCHIVE_DIR set to a fresh directory; region "r" with item "src" holding a pattern.
class BackupTest : public FamTest {
  protected:
    void PrepareEnvironment() override {
        archive_ = std::make_unique<TempDir>("/tmp", "fampool-archive-");
        SetEnv("FAMPOOL_ARCHIVE_DIR", archive_->path());
    }
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        region_ = CreateRegion("r", 64 * kMiB);
        src_ = Allocate("src", kItemSize, region_.get());
        PutBytes(src_.get(), 0, Pattern(kItemSize, 1));
    }
    void TearDown() override {
        src_.reset();
        region_.reset();
        per_item_region_.reset();
        FamTest::TearDown();
        archive_.reset();
    }

    void Backup(Fam_Descriptor *item, const char *name) {
        fam()->fam_backup_wait(fam()->fam_backup(item, name, nullptr));
    }
    void Restore(const char *name, Fam_Descriptor *item) {
        fam()->fam_restore_wait(fam()->fam_restore(name, item));
    }
    void DeleteBackup(const char *name) {
        fam()->fam_delete_backup_wait(fam()->fam_delete_backup(name));
    }
    std::string List(const char *name) {
        char *text = fam()->fam_list_backup(name);
        std::string copy = text ? text : "";
        free(text);
        return copy;
    }

    // An asynchronous call whose error may come from the call or from its wait.
    ::testing::AssertionResult FailsAtCallOrWait(const std::function<void *()> &start,
                                                 const std::function<void(void *)> &wait,
                                                 int expected, const char *call_name) {
        void *handle = nullptr;
        CaughtError at_call = CatchFamError([&] { handle = start(); });
        if (at_call.thrown) return IsFamError(at_call, expected, {call_name});
        return IsFamError(CatchFamError([&] { wait(handle); }), expected, {call_name});
    }
    ::testing::AssertionResult BackupFails(Fam_Descriptor *item, const char *name, int expected) {
        return FailsAtCallOrWait([&] { return fam()->fam_backup(item, name, nullptr); },
                                 [&](void *w) { fam()->fam_backup_wait(w); }, expected,
                                 "fam_backup");
    }
    ::testing::AssertionResult RestoreFails(const char *name, Fam_Descriptor *item, int expected) {
        return FailsAtCallOrWait([&] { return fam()->fam_restore(name, item); },
                                 [&](void *w) { fam()->fam_restore_wait(w); }, expected,
                                 "fam_restore");
    }

    // An item with permissions `perm` in a DATAITEM-level region.
    std::unique_ptr<Fam_Descriptor> ItemWithPerm(const char *name, mode_t perm) {
        if (!per_item_region_) {
            Fam_Region_Attributes attrs = FamAttributes(VOLATILE, DATAITEM);
            per_item_region_ = CreateRegion("per-item", 4 * kMiB, 0777, &attrs);
        }
        return Allocate(name, kItemSize, per_item_region_.get(), perm);
    }

    std::string archive_dir() const { return ArchiveDir(); }

    std::unique_ptr<TempDir> archive_;
    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> src_;
    std::unique_ptr<Fam_Region_Descriptor> per_item_region_;
};

// ---------------------------------------------------------------------------------------------
// Backup and list

TEST_F(BackupTest, BackupThenWaitSucceeds) {
    void *wait = nullptr;
    ASSERT_NO_THROW(wait = fam()->fam_backup(src_.get(), "b1", nullptr));
    ASSERT_NE(wait, nullptr);
    EXPECT_NO_THROW(fam()->fam_backup_wait(wait));
}

TEST_F(BackupTest, BackupWritesIntoArchiveDir) {
    Backup(src_.get(), "b1");
    uint64_t total = 0;
    for (const FileEntry &file : ListFiles(archive_dir())) total += file.size;
    EXPECT_GE(total, kItemSize);
}

TEST_F(BackupTest, ListBackupOfOneNameShowsNameAndSize) {
    Backup(src_.get(), "b1");
    std::string text = List("b1");
    EXPECT_NE(text.find("b1"), std::string::npos) << text;
    EXPECT_NE(text.find(std::to_string(kItemSize)), std::string::npos) << text;
}

TEST_F(BackupTest, ListBackupOfOneNameOmitsOtherBackups) {
    Backup(src_.get(), "alpha");
    Backup(src_.get(), "beta");
    std::string text = List("alpha");
    EXPECT_NE(text.find("alpha"), std::string::npos) << text;
    EXPECT_EQ(text.find("beta"), std::string::npos) << text;
}

TEST_F(BackupTest, ListBackupStarShowsEveryBackup) {
    Backup(src_.get(), "alpha");
    Backup(src_.get(), "beta");
    std::string text = List("*");
    EXPECT_NE(text.find("alpha"), std::string::npos) << text;
    EXPECT_NE(text.find("beta"), std::string::npos) << text;
    EXPECT_NE(text.find(std::to_string(kItemSize)), std::string::npos) << text;
}

TEST_F(BackupTest, ListBackupNullThrowsInvalid) {
    Backup(src_.get(), "alpha");
    EXPECT_FAM_ERROR(free(fam()->fam_list_backup(nullptr)), FAM_ERR_INVALID, "fam_list_backup");
}

TEST_F(BackupTest, BackupsSurviveFinalize) {
    Backup(src_.get(), "kept");
    src_.reset();
    region_.reset();
    ReinitializeFam();
    EXPECT_NE(List("kept").find("kept"), std::string::npos);
    std::unique_ptr<Fam_Descriptor> dest(fam()->fam_lookup("src", "r"));
    PutBytes(dest.get(), 0, std::vector<uint8_t>(kItemSize, 0));
    Restore("kept", dest.get());
    EXPECT_EQ(GetBytes(dest.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(BackupTest, DuplicateBackupNameThrowsBackupNotCreated) {
    Backup(src_.get(), "dup");
    EXPECT_TRUE(BackupFails(src_.get(), "dup", FAM_BACKUP_NOT_CREATED));
}

TEST_F(BackupTest, DuplicateBackupNameKeepsFirstBackup) {
    Backup(src_.get(), "dup");
    PutBytes(src_.get(), 0, Pattern(kItemSize, 2));
    EXPECT_TRUE(BackupFails(src_.get(), "dup", FAM_BACKUP_NOT_CREATED));
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", kItemSize, region_.get());
    Restore("dup", dest.get());
    EXPECT_EQ(GetBytes(dest.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(BackupTest, BackupOfNullItemThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_backup(nullptr, "b", nullptr), FAM_ERR_NULLPTR, "fam_backup");
}

TEST_F(BackupTest, BackupWithNullNameThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_backup(src_.get(), nullptr, nullptr), FAM_ERR_NULLPTR,
                     "fam_backup");
}

TEST_F(BackupTest, BackupWithEmptyNameThrowsInvalid) {
    EXPECT_FAM_ERROR(fam()->fam_backup(src_.get(), "", nullptr), FAM_ERR_INVALID, "fam_backup");
}

TEST_F(BackupTest, BackupNameWithAControlCharacterOrASlashThrowsInvalid) {
    for (const char *name : {"two\nlines", "tab\there", "escape\x1b[31m", "del\x7f", "a/b"}) {
        SCOPED_TRACE(name);
        EXPECT_TRUE(BackupFails(src_.get(), name, FAM_ERR_INVALID));
    }
    EXPECT_EQ(ListFiles(archive_dir()).size(), 0u) << "a refused name left a file behind";
}

// A backup's header keeps each field on its line whatever the item's name holds: an item named
// with newlines and header lines of its own is listed as itself, and the backup keeps the
// owner and mode of the item it copies.
TEST_F(BackupTest, ItemNameWithHeaderLinesCannotRewriteTheBackupsHeader) {
    const char *name = "evil\nuid 4242\nmode 73\nname stolen %41";
    std::unique_ptr<Fam_Descriptor> evil = Allocate(name, kItemSize, region_.get(), 0600);
    PutBytes(evil.get(), 0, Pattern(kItemSize, 4));
    Backup(evil.get(), "b-evil");
    Backup(src_.get(), "b-plain");
    // Owner, group and mode as a backup of another item of the region has them.
    auto fields = [](const std::string &listed) {
        size_t from = listed.find(" uid="), to = listed.find(" time=");
        return from == std::string::npos || to == std::string::npos
                   ? std::string("(none)")
                   : listed.substr(from, to - from);
    };
    std::string listed = List("b-evil");
    EXPECT_EQ(listed.rfind("name=b-evil ", 0), 0u) << listed;
    EXPECT_EQ(fields(listed), fields(List("b-plain"))) << listed;
    EXPECT_NE(listed.find("item=evil\\x0auid 4242\\x0amode 73\\x0aname stolen %41 "),
              std::string::npos)
        << "the item's name, on the backup's line: " << listed;
    std::string all = List("*");
    EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 2) << "two backups, a line each: " << all;
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", kItemSize, region_.get());
    Restore("b-evil", dest.get());
    EXPECT_EQ(GetBytes(dest.get(), 0, kItemSize), Pattern(kItemSize, 4));
}

TEST_F(BackupTest, BackupWaitOnNullThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_backup_wait(nullptr), FAM_ERR_NULLPTR, "fam_backup_wait");
}

TEST_F(BackupTest, BackupOfWriteOnlyItemThrowsNoPerm) {
    std::unique_ptr<Fam_Descriptor> write_only = ItemWithPerm("wo", 0200);
    EXPECT_TRUE(BackupFails(write_only.get(), "wo-backup", FAM_ERR_NOPERM));
}

// ---------------------------------------------------------------------------------------------
// Restore

TEST_F(BackupTest, RestoreIntoExistingItemCopiesData) {
    Backup(src_.get(), "b1");
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", kItemSize, region_.get());
    Restore("b1", dest.get());
    EXPECT_EQ(GetBytes(dest.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(BackupTest, RestoreIntoLargerItemFillsItsStart) {
    Backup(src_.get(), "b1");
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", 2 * kItemSize, region_.get());
    Restore("b1", dest.get());
    EXPECT_EQ(GetBytes(dest.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(BackupTest, BackupIsASnapshotOfItsTime) {
    Backup(src_.get(), "then");
    PutBytes(src_.get(), 0, Pattern(kItemSize, 2));
    Restore("then", src_.get());
    EXPECT_EQ(GetBytes(src_.get(), 0, kItemSize), Pattern(kItemSize, 1));
}

TEST_F(BackupTest, RestoreIntoNewItemAllocatesIt) {
    Backup(src_.get(), "b1");
    Fam_Descriptor *dest = nullptr;
    fam()->fam_restore_wait(fam()->fam_restore("b1", region_.get(), "restored", 0640, &dest));
    ASSERT_NE(dest, nullptr);
    std::unique_ptr<Fam_Descriptor> owned(dest);
    EXPECT_EQ(dest->get_size(), kItemSize);
    EXPECT_EQ(GetBytes(dest, 0, kItemSize), Pattern(kItemSize, 1));
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("restored", "r"));
    Fam_Stat stat{};
    fam()->fam_stat(found.get(), &stat);
    EXPECT_EQ(stat.size, kItemSize);
    EXPECT_EQ(stat.perm & 0777, 0640u);
}

TEST_F(BackupTest, RestoreIntoNewItemWithTakenNameThrowsAlreadyExist) {
    Backup(src_.get(), "b1");
    Fam_Descriptor *dest = nullptr;
    EXPECT_TRUE(FailsAtCallOrWait(
        [&] { return fam()->fam_restore("b1", region_.get(), "src", 0640, &dest); },
        [&](void *w) { fam()->fam_restore_wait(w); }, FAM_ERR_ALREADYEXIST, "fam_restore"));
    delete dest;
}

TEST_F(BackupTest, RestoreIntoTooSmallItemThrowsOutOfRangeAndWritesNothing) {
    Backup(src_.get(), "b1");
    std::unique_ptr<Fam_Descriptor> small = Allocate("small", kItemSize / 2, region_.get());
    PutBytes(small.get(), 0, std::vector<uint8_t>(kItemSize / 2, 0xAB));
    EXPECT_TRUE(RestoreFails("b1", small.get(), FAM_ERR_OUTOFRANGE));
    EXPECT_EQ(GetBytes(small.get(), 0, kItemSize / 2), std::vector<uint8_t>(kItemSize / 2, 0xAB));
}

TEST_F(BackupTest, RestoreOfUnknownNameThrowsBackupNotFound) {
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", kItemSize, region_.get());
    EXPECT_TRUE(RestoreFails("never-made", dest.get(), FAM_BACKUP_NOTFOUND));
}

TEST_F(BackupTest, RestoreIntoNewItemOfUnknownNameThrowsBackupNotFound) {
    Fam_Descriptor *dest = nullptr;
    EXPECT_TRUE(FailsAtCallOrWait(
        [&] { return fam()->fam_restore("never-made", region_.get(), "x", 0600, &dest); },
        [&](void *w) { fam()->fam_restore_wait(w); }, FAM_BACKUP_NOTFOUND, "fam_restore"));
    delete dest;
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("x", "r"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(BackupTest, RestoreIntoReadOnlyItemThrowsNoPerm) {
    Backup(src_.get(), "b1");
    std::unique_ptr<Fam_Descriptor> read_only = ItemWithPerm("ro", 0400);
    EXPECT_TRUE(RestoreFails("b1", read_only.get(), FAM_ERR_NOPERM));
    EXPECT_EQ(GetBytes(read_only.get(), 0, kItemSize), std::vector<uint8_t>(kItemSize, 0));
}

TEST_F(BackupTest, RestoreIntoNewItemInReadOnlyRegionThrowsNoPerm) {
    Backup(src_.get(), "b1");
    std::unique_ptr<Fam_Region_Descriptor> read_only = CreateRegion("ro", 4 * kMiB, 0500);
    Fam_Descriptor *dest = nullptr;
    EXPECT_TRUE(FailsAtCallOrWait(
        [&] { return fam()->fam_restore("b1", read_only.get(), "x", 0600, &dest); },
        [&](void *w) { fam()->fam_restore_wait(w); }, FAM_ERR_NOPERM, "fam_restore"));
    delete dest;
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("x", "ro"), FAM_ERR_NOTFOUND, "fam_lookup");
}

TEST_F(BackupTest, RestoreIntoNullItemThrowsNullptr) {
    Backup(src_.get(), "b1");
    EXPECT_FAM_ERROR(fam()->fam_restore("b1", static_cast<Fam_Descriptor *>(nullptr)),
                     FAM_ERR_NULLPTR, "fam_restore");
}

TEST_F(BackupTest, RestoreWaitOnNullThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_restore_wait(nullptr), FAM_ERR_NULLPTR, "fam_restore_wait");
}

// Flips one byte in the middle of the largest file under `dir` (the backup's data).
bool CorruptLargestFile(const std::string &dir) {
    std::vector<FileEntry> files = ListFiles(dir);
    if (files.empty()) return false;
    auto largest = std::max_element(files.begin(), files.end(),
                                    [](auto &a, auto &b) { return a.size < b.size; });
    int fd = open(largest->path.c_str(), O_RDWR);
    if (fd < 0) return false;
    off_t where = static_cast<off_t>(largest->size / 2);
    unsigned char byte = 0;
    bool ok = pread(fd, &byte, 1, where) == 1;
    byte ^= 0xFF;
    ok = ok && pwrite(fd, &byte, 1, where) == 1;
    close(fd);
    return ok;
}

TEST_F(BackupTest, CorruptedBackupThrowsResourceAndLeavesDestinationUnchanged) {
    Backup(src_.get(), "b1");
    ASSERT_TRUE(CorruptLargestFile(archive_dir()));
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", kItemSize, region_.get());
    PutBytes(dest.get(), 0, Pattern(kItemSize, 3));
    EXPECT_TRUE(RestoreFails("b1", dest.get(), FAM_ERR_RESOURCE));
    EXPECT_EQ(GetBytes(dest.get(), 0, kItemSize), Pattern(kItemSize, 3));
}

// A header whose size is not a number (tests/fuzz/archive_fuzz: the reader threw
// std::invalid_argument, which no caller expects) is refused as damaged, like the bytes.
TEST_F(BackupTest, BackupWithADamagedHeaderThrowsResourceAndLeavesDestinationUnchanged) {
    Backup(src_.get(), "b1");
    std::vector<FileEntry> files = ListFiles(archive_dir());
    ASSERT_EQ(files.size(), 1u);
    int fd = open(files[0].path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    std::string header(4096, '\0');
    ASSERT_EQ(pread(fd, header.data(), header.size(), 0), 4096);
    size_t size_field = header.find("\nsize ");
    ASSERT_NE(size_field, std::string::npos);
    ASSERT_EQ(pwrite(fd, "x", 1, static_cast<off_t>(size_field + 6)), 1);
    close(fd);
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", kItemSize, region_.get());
    PutBytes(dest.get(), 0, Pattern(kItemSize, 3));
    EXPECT_TRUE(RestoreFails("b1", dest.get(), FAM_ERR_RESOURCE));
    EXPECT_EQ(GetBytes(dest.get(), 0, kItemSize), Pattern(kItemSize, 3));
}

TEST_F(BackupTest, CorruptedBackupRestoreIntoNewItemThrowsResourceAndLeavesNoItem) {
    Backup(src_.get(), "b1");
    ASSERT_TRUE(CorruptLargestFile(archive_dir()));
    Fam_Descriptor *dest = nullptr;
    EXPECT_TRUE(FailsAtCallOrWait(
        [&] { return fam()->fam_restore("b1", region_.get(), "bad", 0600, &dest); },
        [&](void *w) { fam()->fam_restore_wait(w); }, FAM_ERR_RESOURCE, "fam_restore"));
    delete dest;
    EXPECT_FAM_ERROR(delete fam()->fam_lookup("bad", "r"), FAM_ERR_NOTFOUND, "fam_lookup");
}

// ---------------------------------------------------------------------------------------------
// Delete

TEST_F(BackupTest, DeletedBackupIsNotListed) {
    Backup(src_.get(), "b1");
    DeleteBackup("b1");
    EXPECT_FAM_ERROR(free(fam()->fam_list_backup("b1")), FAM_BACKUP_NOTFOUND, "fam_list_backup");
}

TEST_F(BackupTest, DeletedBackupCannotBeRestored) {
    Backup(src_.get(), "b1");
    DeleteBackup("b1");
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", kItemSize, region_.get());
    EXPECT_TRUE(RestoreFails("b1", dest.get(), FAM_BACKUP_NOTFOUND));
}

TEST_F(BackupTest, DeletedBackupNameCanBeReused) {
    Backup(src_.get(), "b1");
    DeleteBackup("b1");
    PutBytes(src_.get(), 0, Pattern(kItemSize, 4));
    Backup(src_.get(), "b1");
    std::unique_ptr<Fam_Descriptor> dest = Allocate("dest", kItemSize, region_.get());
    Restore("b1", dest.get());
    EXPECT_EQ(GetBytes(dest.get(), 0, kItemSize), Pattern(kItemSize, 4));
}

TEST_F(BackupTest, DeleteBackupRemovesItsFiles) {
    Backup(src_.get(), "b1");
    DeleteBackup("b1");
    uint64_t total = 0;
    for (const FileEntry &file : ListFiles(archive_dir())) total += file.size;
    EXPECT_LT(total, kItemSize);
}

TEST_F(BackupTest, DeleteKeepsOtherBackups) {
    Backup(src_.get(), "alpha");
    Backup(src_.get(), "beta");
    DeleteBackup("alpha");
    EXPECT_NE(List("beta").find("beta"), std::string::npos);
}

TEST_F(BackupTest, DeleteOfUnknownNameThrowsBackupNotFound) {
    EXPECT_TRUE(FailsAtCallOrWait([&] { return fam()->fam_delete_backup("never-made"); },
                                  [&](void *w) { fam()->fam_delete_backup_wait(w); },
                                  FAM_BACKUP_NOTFOUND, "fam_delete_backup"));
}

TEST_F(BackupTest, ListOfUnknownNameThrowsBackupNotFound) {
    EXPECT_FAM_ERROR(free(fam()->fam_list_backup("never-made")), FAM_BACKUP_NOTFOUND,
                     "fam_list_backup");
}

TEST_F(BackupTest, DeleteBackupWaitOnNullThrowsNullptr) {
    EXPECT_FAM_ERROR(fam()->fam_delete_backup_wait(nullptr), FAM_ERR_NULLPTR,
                     "fam_delete_backup_wait");
}

// ---------------------------------------------------------------------------------------------
// Without FAMPOOL_ARCHIVE_DIR, backups go to $FAMPOOL_HOME/backup.

using DefaultArchiveTest = FamTest;

TEST_F(DefaultArchiveTest, BackupGoesUnderHomeBackupDirectory) {
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("r", 4 * kMiB);
    std::unique_ptr<Fam_Descriptor> item = Allocate("i", kItemSize, region.get());
    PutBytes(item.get(), 0, Pattern(kItemSize, 5));
    fam()->fam_backup_wait(fam()->fam_backup(item.get(), "b1", nullptr));
    uint64_t total = 0;
    for (const FileEntry &file : ListFiles(ArchiveDir())) total += file.size;
    EXPECT_GE(total, kItemSize);
}

}  // namespace
}  // namespace fampool_test
