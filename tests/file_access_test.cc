// file_access_test.cc: the modes and owners of what fampool makes (common/file_access.h).
// Private files are 0600 in 0700 directories, shared ones 0660 in 02770 directories of the
// group; a directory another user owns, or may swap files in, is refused with the reason,
// however it came to be there (made before, or a link). The cases that need another user's
// directory run as root (chown) and skip otherwise.
#include "common/file_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

namespace fampool_test {
namespace {

using fampool::FileAccess;

mode_t ModeOf(const std::string &path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

class FileAccessTest : public ::testing::Test {
  protected:
    std::string Path(const std::string &name) const { return dir_.path() + "/" + name; }
    // A directory `name` of uid/gid 65534 with `mode` (as root).
    std::string ForeignDirectory(const std::string &name, mode_t mode) {
        std::string path = Path(name);
        EXPECT_EQ(mkdir(path.c_str(), mode), 0);
        EXPECT_EQ(chown(path.c_str(), kNobodyUid, kNobodyGid), 0);
        EXPECT_EQ(chmod(path.c_str(), mode), 0);
        return path;
    }
    TempDir dir_{"/tmp", "fampool-file-access-"};
};

TEST_F(FileAccessTest, PrivateDirectoriesAndFilesAreTheUsersAlone) {
    FileAccess mine;
    mine.MakeDirectory(Path("own"));
    EXPECT_EQ(ModeOf(Path("own")), 0700u);
    mine.MakeDirectory(Path("reached"), FileAccess::Dir::kOwn, /*reachable=*/true);
    EXPECT_EQ(ModeOf(Path("reached")), 0711u);
    int fd = open(Path("own/file").c_str(), O_CREAT | O_WRONLY, 0666);
    ASSERT_GE(fd, 0);
    mine.Apply(fd, Path("own/file"));
    close(fd);
    EXPECT_EQ(ModeOf(Path("own/file")), 0600u);
}

TEST_F(FileAccessTest, AnExistingOwnDirectoryIsClosed) {
    ASSERT_EQ(mkdir(Path("old").c_str(), 0777), 0);
    chmod(Path("old").c_str(), 0777);  // what an earlier version made
    FileAccess().MakeDirectory(Path("old"));
    EXPECT_EQ(ModeOf(Path("old")), 0700u);
}

TEST_F(FileAccessTest, SharedFilesBelongToTheGroup) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "skipped: giving a file to group 65534 (the sharing group checked "
                        "here) needs root; run the suite as root (CI does) to check it";
    }
    FileAccess shared = FileAccess::Sharing("65534", "sharing_group");
    shared.MakeDirectory(Path("shared"));
    struct stat st;
    ASSERT_EQ(stat(Path("shared").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 02770u);
    EXPECT_EQ(st.st_gid, kNobodyGid);
}

TEST_F(FileAccessTest, UnknownGroupIsRefusedNamingTheSetting) {
    CaughtError caught =
        CatchFamError([] { FileAccess::Sharing("no-such-group-of-fampool", "sharing_group"); });
    EXPECT_EQ(caught.code, openfam::FAM_ERR_INVALID);
    EXPECT_NE(caught.message.find("sharing_group"), std::string::npos) << caught.message;
    caught = CatchFamError([] { FileAccess::Sharing("99999999999999", "sharing_group"); });
    EXPECT_EQ(caught.code, openfam::FAM_ERR_INVALID) << caught.message;
}

TEST_F(FileAccessTest, SharedDirectoryWhereOthersMaySwapFilesIsRefused) {
    std::string open_dir = Path("open");
    ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
    chmod(open_dir.c_str(), 0777);
    CaughtError caught =
        CatchFamError([&] { FileAccess().MakeDirectory(open_dir, FileAccess::Dir::kShared); });
    EXPECT_NE(caught.message.find("sticky"), std::string::npos) << caught.message;
    chmod(open_dir.c_str(), 01777);  // like /dev/shm: allowed, and left as it is
    FileAccess().MakeDirectory(open_dir, FileAccess::Dir::kShared);
    EXPECT_EQ(ModeOf(open_dir), 01777u);
}

TEST_F(FileAccessTest, DirectoriesOfAnotherUserAreRefusedWhateverTheirKind) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "skipped: making a directory owned by another user (uid 65534), which "
                        "must be refused, needs root; run the suite as root (CI does) to "
                        "check it";
    }
    std::string theirs = ForeignDirectory("theirs", 0755);
    for (auto kind : {FileAccess::Dir::kOwn, FileAccess::Dir::kShared}) {
        CaughtError caught = CatchFamError([&] { FileAccess().MakeDirectory(theirs, kind); });
        EXPECT_NE(caught.message.find("belongs to uid 65534"), std::string::npos) << caught.message;
    }
}

TEST_F(FileAccessTest, ALinkAnotherUserPlacedIsRefused) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "skipped: making a symlink owned by another user (uid 65534), which "
                        "must be refused, needs root; run the suite as root (CI does) to "
                        "check it";
    }
    std::string target = Path("target");
    ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
    std::string link = Path("link");
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    ASSERT_EQ(lchown(link.c_str(), kNobodyUid, kNobodyGid), 0);
    CaughtError caught = CatchFamError([&] { FileAccess().MakeDirectory(link); });
    EXPECT_NE(caught.message.find("symbolic link of uid 65534"), std::string::npos)
        << caught.message;
}

}  // namespace
}  // namespace fampool_test
