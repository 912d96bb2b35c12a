// heap_socket_test.cc: the memory server's same-node socket (memserver/heap_socket.h). A client
// presenting a whole-extent key gets the heap's descriptor when the permissions recorded with
// the key let the uid and gid the kernel names read (and, for a writable one, write) the
// region; a read-only descriptor maps read-only and cannot be made writable; an unknown key, an
// item-level key, a write through a read-only grant and another user without the bits are
// refused with the reason. Other users run as uid/gid 65534 in child processes (as root).
#include "memserver/heap_socket.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "memserver/fabric_server.h"
#include "memserver/heap_guard.h"
#include "memserver/local_memory_server.h"
#include "test_support.h"

namespace fampool_test {
namespace {

using fampool::Caller;
using fampool::ExtentRef;
using fampool::FileAccess;
using fampool::HeapLocation;
using fampool::KeyGrant;
using fampool::Permissions;
using namespace openfam;

constexpr uint64_t kRegion = 5;
constexpr uint64_t kHeapBytes = 1 << 20;

class HeapSocketTest : public ::testing::Test {
  protected:
    void SetUp() override {
        fampool::FabricConfig config;
        config.provider = "tcp";
        config.service = "";  // a port the provider picks
        fabric_ = std::make_unique<fampool::FabricServer>(config);
        server_ = std::make_unique<fampool::LocalMemoryServer>(
            3, HeapLocation{dir_.path() + "/shm", dir_.path() + "/heaps", "ms3", FileAccess()},
            dir_.path() + "/archive");
        server_->AttachFabric(fabric_.get());
        socket_path_ = dir_.path() + "/ms3.sock";
        socket_ = std::make_unique<fampool::HeapSocketServer>(server_.get(), socket_path_);
        server_->SetSocket(socket_path_);
        server_->CreateExtent(extent_, kHeapBytes, kHeapBytes);
    }
    void TearDown() override {
        socket_.reset();
        server_.reset();
        fabric_.reset();
    }

    // A whole-extent key recorded with owner root, group root and `mode`.
    KeyGrant WholeKey(uint32_t mode, bool writable = true) {
        return server_->GrantKey(extent_, 0, 0, writable, Permissions{0, 0, mode, true});
    }

    // Asks this test's socket for the heap with `key` and closes what it gets: throws what
    // RequestHeap throws.
    void AskAndClose(uint64_t key, bool writable, uid_t server_uid = geteuid()) {
        close(fampool::RequestHeap(socket_path_, kRegion, key, writable, server_uid));
    }

    TempDir dir_{"/tmp", "fampool-heap-socket-"};
    ExtentRef extent_{kRegion, false, false};
    std::unique_ptr<fampool::FabricServer> fabric_;
    std::unique_ptr<fampool::LocalMemoryServer> server_;
    std::string socket_path_;
    std::unique_ptr<fampool::HeapSocketServer> socket_;
};

TEST_F(HeapSocketTest, GrantNamesTheSocketAndHeapFilesArePrivate) {
    KeyGrant grant = WholeKey(0600);
    EXPECT_EQ(grant.socket, socket_path_);
    struct stat st;
    ASSERT_EQ(stat(server_->HeapPath(extent_).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << "a heap file is its server's user's alone";
    ASSERT_EQ(stat(socket_path_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666u) << "anyone may ask; the server decides";
}

TEST_F(HeapSocketTest, OwnerGetsAWritableDescriptorOfTheSameBytes) {
    KeyGrant grant = WholeKey(0600);
    int fd = fampool::RequestHeap(socket_path_, kRegion, grant.key, true, geteuid());
    auto heap = fampool::MapHeapDescriptor(fd, true, "test heap");
    ASSERT_GE(heap->length(), kHeapBytes);
    std::memcpy(heap->base() + 100, "fampool", 7);
    auto served = server_->Map(extent_, kHeapBytes);
    EXPECT_EQ(std::memcmp(served->base() + 100, "fampool", 7), 0);
    EXPECT_EQ(socket_->granted(), 1u);
}

TEST_F(HeapSocketTest, ReadOnlyDescriptorCannotBeMadeWritable) {
    KeyGrant grant = WholeKey(0400, /*writable=*/false);
    int fd = fampool::RequestHeap(socket_path_, kRegion, grant.key, false, geteuid());
    EXPECT_EQ(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
    void *writable = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT_EQ(writable, MAP_FAILED) << "a shared writable mapping of an O_RDONLY descriptor";
    auto heap = fampool::MapHeapDescriptor(fd, false, "test heap");
    EXPECT_NE(mprotect(heap->base(), 4096, PROT_READ | PROT_WRITE), 0);
    EXPECT_EQ(errno, EACCES);
}

TEST_F(HeapSocketTest, WritableDescriptorThroughAReadOnlyKeyIsRefused) {
    KeyGrant grant = WholeKey(0600, /*writable=*/false);
    CaughtError caught = CatchFamError([&] { AskAndClose(grant.key, true); });
    EXPECT_EQ(caught.code, FAM_ERR_NOPERM);
    EXPECT_NE(caught.message.find("read-only"), std::string::npos) << caught.message;
    EXPECT_EQ(socket_->refused(), 1u);
}

TEST_F(HeapSocketTest, UnknownOrRevokedKeyIsRefused) {
    KeyGrant grant = WholeKey(0600);
    CaughtError guessed = CatchFamError([&] { AskAndClose(grant.key ^ 1, false); });
    EXPECT_EQ(guessed.code, FAM_ERR_NOPERM);
    EXPECT_NE(guessed.message.find("grants nothing"), std::string::npos) << guessed.message;
    server_->RevokeKeys(extent_, fampool::kAllGrants);
    CaughtError revoked = CatchFamError([&] { AskAndClose(grant.key, false); });
    EXPECT_EQ(revoked.code, FAM_ERR_NOPERM) << revoked.message;
}

TEST_F(HeapSocketTest, KeyIsNotSentToASocketOfAnotherUid) {
    KeyGrant grant = WholeKey(0600);
    // As if another user had bound the socket's name: the client asks who answers first.
    CaughtError caught = CatchFamError([&] { AskAndClose(grant.key, false, geteuid() + 1); });
    EXPECT_EQ(caught.code, FAM_ERR_RESOURCE);
    EXPECT_NE(caught.message.find("the key is not sent there"), std::string::npos)
        << caught.message;
    EXPECT_EQ(socket_->granted() + socket_->refused(), 0u) << "no request reached the server";
}

TEST_F(HeapSocketTest, ItemLevelKeyGetsNoHeapDescriptor) {
    KeyGrant grant = server_->GrantKey(extent_, 4096, 4096, true, Permissions{0, 0, 0600, true});
    CaughtError caught = CatchFamError([&] { AskAndClose(grant.key, false); });
    EXPECT_EQ(caught.code, FAM_ERR_INVALIDOP);
    EXPECT_NE(caught.message.find("DATAITEM"), std::string::npos) << caught.message;
}

TEST_F(HeapSocketTest, KeyWithoutRecordedPermissionsGetsNoDescriptor) {
    KeyGrant grant = server_->GrantKey(extent_, 0, 0, true, Permissions{});
    CaughtError caught = CatchFamError([&] { AskAndClose(grant.key, false); });
    EXPECT_EQ(caught.code, FAM_ERR_NOPERM) << caught.message;
}

// A client holding a writable descriptor cuts the heap short: the server touching the cut
// pages goes on (its guard maps zero pages there) instead of dying of SIGBUS.
TEST_F(HeapSocketTest, TruncatedHeapDoesNotEndTheServer) {
    fampool::GuardHeapMappings();
    KeyGrant grant = WholeKey(0600);
    int fd = fampool::RequestHeap(socket_path_, kRegion, grant.key, true, geteuid());
    uint64_t before = fampool::GuardedFaults();
    ASSERT_EQ(ftruncate(fd, 0), 0);
    close(fd);
    server_->Zero(extent_, 4096, 64);  // a memset on the cut mapping
    EXPECT_GT(fampool::GuardedFaults(), before);
}

// Another user presenting the very key (a key leaks: it travels in clear): the kernel says who
// asks, and the recorded bits decide.
TEST_F(HeapSocketTest, AnotherUserIsJudgedByTheKernelsUidNotTheKey) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "skipped: asking the socket as another user (a child as uid 65534) "
                        "needs root; run the suite as root (CI does) to check it";
    }
    chmod(dir_.path().c_str(), 0755);  // the child reaches the socket
    const uint64_t private_key = WholeKey(0600).key;
    const uid_t server = geteuid();  // the child's own uid is another
    auto ask = [&](uint64_t key, bool writable) {
        // A forked child: it uses no state of this process but the socket's path.
        return detail::RunAsUserForked(
            kNobodyUid, kNobodyGid,
            [&, key, writable] {
                try {
                    close(fampool::RequestHeap(socket_path_, kRegion, key, writable, server));
                    return 0;
                } catch (const Fam_Exception &e) {
                    if (e.fam_error() == FAM_ERR_NOPERM) return 3;
                    std::fprintf(stderr, "child: %s\n", e.fam_error_msg());
                    return 4;
                }
            },
            30);
    };
    EXPECT_EQ(ask(private_key, false), 3) << "0600: no descriptor for another user";
    server_->RevokeKeys(extent_, fampool::kAllGrants);
    const uint64_t readable_key = WholeKey(0604).key;
    EXPECT_EQ(ask(readable_key, false), 0) << "0604: a read-only descriptor";
    EXPECT_EQ(ask(readable_key, true), 3) << "0604: no writable one";
}

}  // namespace
}  // namespace fampool_test
