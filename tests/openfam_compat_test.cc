// openfam_compat_test.cc: what OpenFAM programs rely on and fampool must do the same way
// (docs/semantics.md, "OpenFAM programs run unchanged"): errors of non-blocking calls at
// fam_quiet, the option list as one block the caller frees, closed descriptors, permission
// modes chmod takes, a crashed or killed client that dies at once, and a program written the
// way OpenFAM's examples are (tests/workers/openfam_style.cc). Runs on the embedded model and,
// through CTest, on clusters of 1 and 3 memory servers.
#include <fam/fam.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kItemSize = 4096;

// A region "r" (REGION level, 0777) with a 4 KiB item "i" of zeros.
class OpenFamCompatTest : public FamTest {
  protected:
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        region_ = CreateRegion("r", 16 * kMiB);
        item_ = Allocate("i", kItemSize, region_.get());
    }
    void TearDown() override {
        item_.reset();
        region_.reset();
        FamTest::TearDown();
    }
    // Item "ro" in region "ro" whose mode (0500) lets the owner read, not write, looked up
    // after the mode changed.
    std::unique_ptr<Fam_Descriptor> ReadOnlyItem() {
        regions_.push_back(CreateRegion("ro", 4 * kMiB, 0700));
        Allocate("ro", kItemSize, regions_.back().get());
        fam()->fam_change_permissions(regions_.back().get(), 0500);
        return std::unique_ptr<Fam_Descriptor>(fam()->fam_lookup("ro", "ro"));
    }

    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
    std::vector<std::unique_ptr<Fam_Region_Descriptor>> regions_;
};

// ---------------------------------------------------------------------------------------------
// Non-blocking calls: errors at the next fam_quiet

TEST_F(OpenFamCompatTest, PutNonblockingPastEndFailsAtQuietAndWritesNothing) {
    std::vector<uint8_t> data(64, 0xAB);
    EXPECT_FAM_ERROR_AT_QUIET(
        fam(), fam()->fam_put_nonblocking(data.data(), item_.get(), kItemSize - 8, data.size()),
        FAM_ERR_OUTOFRANGE, "fam_put_nonblocking");
    EXPECT_EQ(GetBytes(item_.get(), 0, kItemSize), std::vector<uint8_t>(kItemSize, 0));
}

TEST_F(OpenFamCompatTest, GetNonblockingPastEndFailsAtQuiet) {
    std::vector<uint8_t> data(2 * kItemSize);
    EXPECT_FAM_ERROR_AT_QUIET(fam(),
                              fam()->fam_get_nonblocking(data.data(), item_.get(), 0, data.size()),
                              FAM_ERR_OUTOFRANGE, "fam_get_nonblocking");
}

TEST_F(OpenFamCompatTest, PutNonblockingWithoutWritePermissionFailsAtQuiet) {
    std::unique_ptr<Fam_Descriptor> read_only = ReadOnlyItem();
    std::vector<uint8_t> data(64, 0xAB);
    EXPECT_FAM_ERROR_AT_QUIET(
        fam(), fam()->fam_put_nonblocking(data.data(), read_only.get(), 0, data.size()),
        FAM_ERR_NOPERM, "fam_put_nonblocking");
}

TEST_F(OpenFamCompatTest, StridedGatherNonblockingPastEndFailsAtQuiet) {
    std::vector<uint64_t> out(8);
    EXPECT_FAM_ERROR_AT_QUIET(
        fam(), fam()->fam_gather_nonblocking(out.data(), item_.get(), 8, 500, 4, sizeof(uint64_t)),
        FAM_ERR_OUTOFRANGE, "fam_gather_nonblocking");
}

TEST_F(OpenFamCompatTest, IndexedScatterNonblockingWithoutWritePermissionFailsAtQuiet) {
    std::unique_ptr<Fam_Descriptor> read_only = ReadOnlyItem();
    std::vector<uint64_t> values = {1, 2, 3};
    uint64_t index[] = {0, 7, 9};
    EXPECT_FAM_ERROR_AT_QUIET(
        fam(),
        fam()->fam_scatter_nonblocking(values.data(), read_only.get(), 3, index, sizeof(uint64_t)),
        FAM_ERR_NOPERM, "fam_scatter_nonblocking");
}

TEST_F(OpenFamCompatTest, NonFetchingAtomicOnReadOnlyItemFailsAtQuietAndChangesNothing) {
    std::unique_ptr<Fam_Descriptor> read_only = ReadOnlyItem();
    EXPECT_FAM_ERROR_AT_QUIET(fam(), fam()->fam_max(read_only.get(), 8, int64_t{9}), FAM_ERR_NOPERM,
                              "fam_max");
    EXPECT_EQ(fam()->fam_fetch_int64(read_only.get(), 8), 0);
}

TEST_F(OpenFamCompatTest, OperationsAroundAFailedOneStillComplete) {
    std::vector<uint8_t> first = Pattern(512, 1), second = Pattern(512, 2), bad(8);
    fam()->fam_put_nonblocking(first.data(), item_.get(), 0, first.size());
    fam()->fam_put_nonblocking(bad.data(), item_.get(), kItemSize, bad.size());
    fam()->fam_put_nonblocking(second.data(), item_.get(), 1024, second.size());
    fam()->fam_add(item_.get(), 2048, uint64_t{5});
    EXPECT_FAM_ERROR(fam()->fam_quiet(), FAM_ERR_OUTOFRANGE, "fam_put_nonblocking");
    EXPECT_EQ(GetBytes(item_.get(), 0, 512), first);
    EXPECT_EQ(GetBytes(item_.get(), 1024, 512), second);
    EXPECT_EQ(fam()->fam_fetch_uint64(item_.get(), 2048), 5u);
}

TEST_F(OpenFamCompatTest, QuietReportsTheFirstErrorAndCountsTheOthers) {
    std::vector<uint8_t> data(8);
    fam()->fam_put_nonblocking(data.data(), item_.get(), kItemSize, data.size());
    fam()->fam_set(item_.get(), 3, int32_t{1});
    CaughtError caught = CatchFamError([&] { fam()->fam_quiet(); });
    EXPECT_TRUE(IsFamError(caught, FAM_ERR_OUTOFRANGE, {"fam_put_nonblocking"}));
    EXPECT_NE(caught.message.find("and 1 more failed operation"), std::string::npos)
        << caught.message;
}

TEST_F(OpenFamCompatTest, FenceLeavesTheErrorForQuiet) {
    std::vector<uint8_t> data(8);
    fam()->fam_put_nonblocking(data.data(), item_.get(), kItemSize, data.size());
    EXPECT_NO_THROW(fam()->fam_fence());
    EXPECT_FAM_ERROR(fam()->fam_quiet(), FAM_ERR_OUTOFRANGE, "fam_put_nonblocking");
}

TEST_F(OpenFamCompatTest, ContextQuietReportsOnlyTheContextsErrors) {
    fam_context *context = fam()->fam_context_open();
    std::vector<uint8_t> data(8);
    context->fam_put_nonblocking(data.data(), item_.get(), kItemSize, data.size());
    EXPECT_NO_THROW(fam()->fam_quiet());
    EXPECT_FAM_ERROR(context->fam_quiet(), FAM_ERR_OUTOFRANGE, "fam_put_nonblocking");
    fam()->fam_context_close(context);
}

TEST_F(OpenFamCompatTest, NullBufferOfNonblockingCallThrowsAtOnce) {
    EXPECT_FAM_ERROR(fam()->fam_put_nonblocking(nullptr, item_.get(), 0, 8), FAM_ERR_NULLPTR,
                     "fam_put_nonblocking");
    EXPECT_FAM_ERROR(fam()->fam_get_nonblocking(nullptr, item_.get(), 0, 8), FAM_ERR_NULLPTR,
                     "fam_get_nonblocking");
    EXPECT_NO_THROW(fam()->fam_quiet());
}

TEST_F(OpenFamCompatTest, ProgressDoesNotCountAFailedIssue) {
    std::vector<uint8_t> data(8);
    fam()->fam_put_nonblocking(data.data(), item_.get(), kItemSize, data.size());
    EXPECT_EQ(fam()->fam_progress(), 0u);
    EXPECT_FAM_ERROR(fam()->fam_quiet(), FAM_ERR_OUTOFRANGE, "fam_put_nonblocking");
}

// ---------------------------------------------------------------------------------------------
// Options

TEST_F(OpenFamCompatTest, ListOptionsReturnsOneBlockTheCallerFrees) {
    const char **first = fam()->fam_list_options();
    const char **second = fam()->fam_list_options();
    ASSERT_NE(first, nullptr);
    EXPECT_NE(first, second) << "each call hands out its own block";
    const auto &expected = kDocumentedOptions;
    size_t count = 0;
    while (first[count]) ++count;
    ASSERT_GE(count, std::size(expected));
    for (size_t i = 0; i < std::size(expected); ++i) EXPECT_STREQ(first[i], expected[i]);
    // The names live inside the block: after free(), nothing of it is referenced.
    for (size_t i = 0; i < count; ++i) {
        EXPECT_GT(static_cast<const void *>(first[i]), static_cast<const void *>(first + count));
    }
    free(first);
    free(second);
}

// ---------------------------------------------------------------------------------------------
// Closed descriptors

TEST_F(OpenFamCompatTest, PutThroughClosedDescriptorFailsNamingTheClose) {
    fam()->fam_close(item_.get());
    std::vector<uint8_t> data(8, 1);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), item_.get(), 0, data.size()),
                     FAM_ERR_INVALID, "fam_close");
    EXPECT_FAM_ERROR(fam()->fam_fetch_uint64(item_.get(), 0), FAM_ERR_INVALID, "fam_close");
    EXPECT_EQ(item_->get_desc_status(), DESC_INVALID);
    std::unique_ptr<Fam_Descriptor> again(fam()->fam_lookup("i", "r"));
    EXPECT_EQ(GetBytes(again.get(), 0, 8), std::vector<uint8_t>(8, 0)) << "nothing was written";
}

TEST_F(OpenFamCompatTest, NonblockingPutThroughClosedDescriptorFailsAtQuiet) {
    fam()->fam_close(item_.get());
    std::vector<uint8_t> data(8, 1);
    EXPECT_FAM_ERROR_AT_QUIET(fam(),
                              fam()->fam_put_nonblocking(data.data(), item_.get(), 0, data.size()),
                              FAM_ERR_INVALID, "fam_put_nonblocking");
}

// ---------------------------------------------------------------------------------------------
// Permission modes: any mode chmod takes

class PermissionModeTest : public OpenFamCompatTest {
  protected:
    void SetUp() override {
        OpenFamCompatTest::SetUp();
        if (HasFatalFailure()) return;
        Fam_Region_Attributes attrs = FamAttributes(VOLATILE, DATAITEM);
        dataitem_region_ = CreateRegion("d", 4 * kMiB, 0777, &attrs);
        dataitem_item_ = Allocate("x", kItemSize, dataitem_region_.get(), 0600);
    }
    void TearDown() override {
        dataitem_item_.reset();
        dataitem_region_.reset();
        OpenFamCompatTest::TearDown();
    }
    uint64_t ModeOf(Fam_Descriptor *item) {
        Fam_Stat stat{};
        fam()->fam_stat(item, &stat);
        return stat.perm;
    }
    std::unique_ptr<Fam_Region_Descriptor> dataitem_region_;
    std::unique_ptr<Fam_Descriptor> dataitem_item_;
};

TEST_F(PermissionModeTest, ItemModeZeroIsAcceptedAndLeavesNobodyAccess) {
    Fam_Descriptor *item = dataitem_item_.get();
    ASSERT_NO_THROW(fam()->fam_change_permissions(item, 0));
    EXPECT_EQ(ModeOf(item), 0u);
    std::vector<uint8_t> data(8, 1);
    EXPECT_FAM_ERROR(fam()->fam_put_blocking(data.data(), item, 0, data.size()), FAM_ERR_NOPERM,
                     "fam_put_blocking");
    // The owner may still look it up (a descriptor that neither reads nor writes) and change
    // it back, as the owner of a file of mode 000 may stat and chmod it.
    std::unique_ptr<Fam_Descriptor> found(fam()->fam_lookup("x", "d"));
    EXPECT_FAM_ERROR(fam()->fam_get_blocking(data.data(), found.get(), 0, data.size()),
                     FAM_ERR_NOPERM, "fam_get_blocking");
    fam()->fam_change_permissions(item, 0600);
    PutBytes(item, 0, data);
    EXPECT_EQ(GetBytes(item, 0, 8), data);
}

TEST_F(PermissionModeTest, ItemModeOneIsAcceptedAndGrantsNoReadOrWrite) {
    Fam_Descriptor *item = dataitem_item_.get();
    ASSERT_NO_THROW(fam()->fam_change_permissions(item, 01));
    EXPECT_EQ(ModeOf(item), 01u);
    EXPECT_FAM_ERROR(fam()->fam_fetch_uint64(item, 0), FAM_ERR_NOPERM, "fam_fetch_uint64");
}

TEST_F(PermissionModeTest, RegionModeZeroIsAccepted) {
    ASSERT_NO_THROW(fam()->fam_change_permissions(region_.get(), 0));
    Fam_Stat stat{};
    fam()->fam_stat(region_.get(), &stat);
    EXPECT_EQ(stat.perm, 0u);
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("new", 64, 0600, region_.get()), FAM_ERR_NOPERM,
                     "fam_allocate");
    std::unique_ptr<Fam_Region_Descriptor> found(fam()->fam_lookup_region("r"));
    fam()->fam_change_permissions(found.get(), 0700);
    delete fam()->fam_allocate("new", 64, 0600, region_.get());
}

TEST_F(PermissionModeTest, SpecialBitsAreKeptAndShown) {
    std::unique_ptr<Fam_Region_Descriptor> sticky = CreateRegion("sticky", kMiB, 01777);
    Fam_Stat stat{};
    fam()->fam_stat(sticky.get(), &stat);
    EXPECT_EQ(stat.perm, 01777u);
    fam()->fam_change_permissions(dataitem_item_.get(), 04640);
    EXPECT_EQ(ModeOf(dataitem_item_.get()), 04640u);
    PutBytes(dataitem_item_.get(), 0, Pattern(16, 3));  // 06xx: the owner still reads and writes
}

TEST_F(PermissionModeTest, ModeWithBitsBeyondChmodsIsRefused) {
    EXPECT_FAM_ERROR(delete fam()->fam_create_region("odd", kMiB, 0100644, nullptr),
                     FAM_ERR_INVALID, "fam_create_region");
    EXPECT_FAM_ERROR(fam()->fam_change_permissions(dataitem_item_.get(), 010000), FAM_ERR_INVALID,
                     "fam_change_permissions");
    EXPECT_EQ(ModeOf(dataitem_item_.get()), 0600u) << "a refused change changes nothing";
}

TEST_F(PermissionModeTest, OwnerWithoutWriteBitCannotAllocateEvenWhenOthersCould) {
    // POSIX: the owner's bits apply to the owner, as for creating a file in a directory.
    std::unique_ptr<Fam_Region_Descriptor> region = CreateRegion("owner-ro", kMiB, 0577);
    EXPECT_FAM_ERROR(delete fam()->fam_allocate("x", 64, 0600, region.get()), FAM_ERR_NOPERM,
                     "fam_allocate");
}

// ---------------------------------------------------------------------------------------------
// A client that crashes or is killed dies at once

using Clock = std::chrono::steady_clock;

// Runs crash_worker MODE with a region name of this test's own; at most `timeout_s` seconds.
ProcessResult RunCrashWorker(const std::string &mode, int timeout_s) {
    std::string name =
        std::string("crash-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ProgramSpec spec;
    spec.argv = {WorkerPath("crash_worker"), mode, name};
    return RunProgram(spec, timeout_s);
}

// No handler that keeps a crashed process alive: libinfinipath's (loaded with libfabric) are
// removed. libfabric's shm provider installs its own for SIGINT, SIGBUS, SIGSEGV and SIGTERM,
// which remove its shared-memory files and raise the signal again under the handler that was
// there before: the process still ends with the signal (the tests below check it does).
// Under AddressSanitizer, SIGFPE (with SIGSEGV and SIGBUS) is ASan's own: it reports the
// crash and ends the process, so only SIGABRT and SIGILL must be left at their default there.
TEST_F(OpenFamCompatTest, NoCrashSignalHandlerOfLibinfinipathOrFampoolRemains) {
    ProcessResult result = RunCrashWorker("handlers", 60);
    ASSERT_TRUE(result.ok()) << result.err;
    for (const char *signal :
         {"SIGINT", "SIGILL", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGTERM"}) {
        size_t line = result.out.find(std::string(signal) + " ");
        ASSERT_NE(line, std::string::npos) << signal << " not reported:\n" << result.out;
        std::string what = result.out.substr(line, result.out.find('\n', line) - line);
        EXPECT_EQ(what.find("libinfinipath"), std::string::npos) << what;
        EXPECT_EQ(what.find("libfampool"), std::string::npos) << what;
        if (std::string(signal) == "SIGABRT" || std::string(signal) == "SIGILL" ||
            (std::string(signal) == "SIGFPE" && !kAddressSanitizer)) {
            EXPECT_NE(what.find("default"), std::string::npos) << what;
        }
    }
}

TEST_F(OpenFamCompatTest, ClientThatAbortsMidRunDiesAtOnce) {
    auto start = Clock::now();
    ProcessResult result = RunCrashWorker("abort", 60);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_FALSE(result.timed_out);
    EXPECT_EQ(result.term_signal, SIGABRT) << "exit " << result.exit_code << "\n" << result.err;
    EXPECT_LT(seconds, 20.0) << "initialization and the crash together";
    EXPECT_EQ(result.err.find("Backtrace"), std::string::npos) << result.err;
}

// glibc aborts on the double free; under AddressSanitizer, ASan finds it first, reports it and
// exits with its error status. Either way the process ends at once.
TEST_F(OpenFamCompatTest, ClientThatDoubleFreesMidRunDiesAtOnce) {
    ProcessResult result = RunCrashWorker("double-free", 60);
    EXPECT_FALSE(result.timed_out) << "hung after the double free:\n" << result.err;
    if (kAddressSanitizer) {
        EXPECT_EQ(result.term_signal, 0) << result.err;
        EXPECT_NE(result.exit_code, 0) << result.err;
        EXPECT_NE(result.err.find("attempting double-free"), std::string::npos) << result.err;
    } else {
        EXPECT_EQ(result.term_signal, SIGABRT) << "exit " << result.exit_code << "\n" << result.err;
        EXPECT_NE(result.err.find("double free"), std::string::npos) << result.err;
    }
}

// OpenFAM's examples call fam_abort in the catch block around fam_initialize: the process ends
// with the status given, and what the program printed of the first error is the last word.
TEST_F(OpenFamCompatTest, AbortWithoutASuccessfulInitializeExitsWithItsStatus) {
    for (const char *mode : {"abort-uninitialized", "abort-failed-init"}) {
        ProcessResult result = RunCrashWorker(mode, 60);
        EXPECT_FALSE(result.timed_out) << mode;
        EXPECT_EQ(result.term_signal, 0) << mode << "\n" << result.err;
        EXPECT_EQ(result.exit_code, 3) << mode << "\n" << result.err;
        EXPECT_EQ(result.err.find("not initialized"), std::string::npos) << mode << result.err;
        EXPECT_EQ(result.err.find("terminate"), std::string::npos) << mode << result.err;
        if (std::string(mode) == "abort-failed-init") {
            EXPECT_NE(result.err.find("NO_SUCH_RUNTIME"), std::string::npos) << result.err;
        }
    }
}

TEST_F(OpenFamCompatTest, ClientKilledWithSigtermMidRunExitsWithinSeconds) {
    std::string ready = home_dir() + "/crash-worker.ready";
    ProgramSpec spec;
    spec.argv = {WorkerPath("crash_worker"), "wait", "crash-sigterm"};
    spec.env = {{"CRASH_WORKER_READY_FILE", ready}};
    ChildProcess child;
    ASSERT_TRUE(child.Start(spec)) << child.error();
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (access(ready.c_str(), F_OK) != 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(access(ready.c_str(), F_OK), 0) << "the worker never got its transfers going";
    child.Signal(SIGTERM);
    auto start = Clock::now();
    ProcessResult result = child.Wait(10);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_FALSE(result.timed_out) << "still running 10 s after SIGTERM";
    EXPECT_EQ(result.term_signal, SIGTERM) << "exit " << result.exit_code << "\n" << result.err;
    EXPECT_LT(seconds, 5.0);
    EXPECT_EQ(result.err.find("Backtrace"), std::string::npos) << result.err;
}

// ---------------------------------------------------------------------------------------------
// A program written the way OpenFAM's examples are

TEST_F(OpenFamCompatTest, OpenFamStyleProgramPasses) {
    ProgramSpec spec;
    spec.argv = {WorkerPath("openfam_style"), "style"};
    ProcessResult result = RunProgram(spec, 120);
    EXPECT_TRUE(result.ok()) << "exit " << result.exit_code << ", signal " << result.term_signal
                             << "\n"
                             << result.out << result.err;
    EXPECT_EQ(result.out.find("FAIL"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("PASS finalize_twice"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace fampool_test
