// test_support.h: what every fampool test program shares.
//
// - FamTest: a GoogleTest fixture that gives each test its own data directory (FAMPOOL_HOME),
//   its own volatile-heap directory (FAMPOOL_SHM_DIR) and an initialized openfam::fam, and
//   removes all of it afterwards.
// - EXPECT_FAM_ERROR / ASSERT_FAM_ERROR: a statement throws Fam_Exception with the given code
//   and a message that names the call.
// - Child processes: RunInChild (fork, run a function, wait with a timeout), RunAsUser (the
//   same after dropping to another uid/gid; on a cluster forked by the spawner, see below),
//   RunInCleanChild, ChildProcess / RunProgram (exec a program such as a test worker with
//   arguments, environment and a timeout, capturing its output).
// - Small tools: TempDir, ScopedEnv, ScopedFam, FamErrorName, CatchFamError.
//
// Every child process started here is stopped by its own PID (or the process group it leads)
// when it outlives its timeout; nothing is ever killed by name.
#ifndef FAMPOOL_TESTS_SUPPORT_TEST_SUPPORT_H_
#define FAMPOOL_TESTS_SUPPORT_TEST_SUPPORT_H_

#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "test_cluster.h"

namespace fampool_test {

// Whether this build runs under AddressSanitizer (scripts/sanitize asan): ASan installs its own
// handlers for crash signals and reports a double free itself, so the tests of a plain build's
// crash behaviour do not apply there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

using openfam::Fam_Descriptor;
using openfam::Fam_Exception;
using openfam::Fam_Region_Descriptor;

// ---------------------------------------------------------------------------------------------
// Errors

// "FAM_ERR_NOPERM" for FAM_ERR_NOPERM, and so on; "Fam_Error(<n>)" for an unknown value.
std::string FamErrorName(int error);

// What a call threw. code is FAM_NO_ERROR when it threw nothing, kNotAFamException when it
// threw something other than a Fam_Exception (message then holds what() when there is one).
inline constexpr int kNotAFamException = -1;
struct CaughtError {
    bool thrown = false;
    int code = openfam::FAM_NO_ERROR;
    std::string message;
};
CaughtError CatchFamError(const std::function<void()> &body);

// Success when `body` throws a Fam_Exception whose fam_error() is `expected` and whose message
// contains `call_name` (pass nullptr to skip the message check).
::testing::AssertionResult ThrowsFamError(const std::function<void()> &body, int expected,
                                          const char *call_name);

// Success when `caught` holds `expected` and a message naming one of `call_names`.
::testing::AssertionResult IsFamError(const CaughtError &caught, int expected,
                                      const std::vector<std::string> &call_names);

// Success when `body` (a non-blocking call or a non-fetching atomic) throws nothing and the
// next fam_quiet of `fam` (a fam object or a context) throws `expected` with a message naming
// fam_quiet and `call_name`, and the quiet after that throws nothing: the way OpenFAM programs
// expect the errors of such calls.
::testing::AssertionResult FailsAtQuiet(openfam::fam *fam, const std::function<void()> &body,
                                        int expected, const char *call_name);

// EXPECT_FAM_ERROR_AT_QUIET(fam, fam->fam_set(d, 3, 1), openfam::FAM_ERR_INVALID, "fam_set");
#define EXPECT_FAM_ERROR_AT_QUIET(fam, statement, error, call_name)                              \
    EXPECT_TRUE(::fampool_test::FailsAtQuiet((fam), [&]() { statement; }, (error), (call_name))) \
        << "  statement: " #statement

// EXPECT_FAM_ERROR(fam->fam_put_blocking(buf, d, 4096, 8), openfam::FAM_ERR_OUTOFRANGE,
//                  "fam_put_blocking");
#define EXPECT_FAM_ERROR(statement, error, call_name)                                       \
    EXPECT_TRUE(::fampool_test::ThrowsFamError([&]() { statement; }, (error), (call_name))) \
        << "  statement: " #statement
#define ASSERT_FAM_ERROR(statement, error, call_name)                                       \
    ASSERT_TRUE(::fampool_test::ThrowsFamError([&]() { statement; }, (error), (call_name))) \
        << "  statement: " #statement

// ---------------------------------------------------------------------------------------------
// Files, directories and the environment

// A directory made with mkdtemp under `parent`, chmod 01777 (like /tmp) so that other users (the
// permission tests run children as uid 65534) can work in it; removed with everything inside on
// destruction.
class TempDir {
  public:
    explicit TempDir(const std::string &parent = "/tmp",
                     const std::string &prefix = "fampool-test-");
    ~TempDir();
    TempDir(TempDir &&other) noexcept;
    TempDir &operator=(TempDir &&other) noexcept;
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

// "what: <strerror(errno)>".
std::string ErrnoText(const char *what);

// Removes `path` and everything below it; a missing path is not an error.
void RemoveTree(const std::string &path);

// Regular files below `dir` (recursively), with their sizes.
struct FileEntry {
    std::string path;
    uint64_t size;
};
std::vector<FileEntry> ListFiles(const std::string &dir);

// Sets (or, with std::nullopt, unsets) one environment variable and restores the previous
// state when destroyed.
class ScopedEnv {
  public:
    ScopedEnv(std::string name, std::optional<std::string> value);
    ~ScopedEnv();
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

  private:
    std::string name_;
    std::optional<std::string> previous_;
};

// The FAMPOOL_* and OPENFAM_* variables set in this process's environment, except the
// FAMPOOL_TEST_* ones. FamTest unsets them all before setting its own, so a test never depends
// on the caller's shell.
std::vector<std::string> FampoolVariablesInEnvironment();

// ---------------------------------------------------------------------------------------------
// fam objects

// An openfam::fam initialized on construction and finalized on destruction. For test bodies
// and child processes that need a fam of their own.
class ScopedFam {
  public:
    explicit ScopedFam(Fam_Options *options = nullptr);
    ~ScopedFam();
    ScopedFam(const ScopedFam &) = delete;
    ScopedFam &operator=(const ScopedFam &) = delete;

    openfam::fam *get() { return fam_.get(); }
    openfam::fam *operator->() { return fam_.get(); }
    // Finalizes now (the destructor then does nothing); throws what fam_finalize throws.
    void Finalize();

  private:
    std::unique_ptr<openfam::fam> fam_;
    bool finalized_ = false;
};

// A Fam_Options with every field NULL (every value from configuration or default).
Fam_Options EmptyOptions();

// Region attributes in one call: FamAttributes(PERSISTENT, DATAITEM).
Fam_Region_Attributes FamAttributes(Fam_Memory_Type memory = MEMORY_TYPE_DEFAULT,
                                    Fam_Permission_Level level = PERMISSION_LEVEL_DEFAULT);

// The fixture of the single-process tests. SetUp: fresh FAMPOOL_HOME and FAMPOOL_SHM_DIR, every
// other fampool variable unset, PrepareEnvironment(), then a new openfam::fam initialized with
// ("default", nullptr) unless AutoInitialize() says otherwise. TearDown: finalize (unless a
// test already did) and remove both directories.
class FamTest : public ::testing::Test {
  protected:
    void SetUp() override;
    void TearDown() override;

    // Hooks for subclasses: set more environment before the fam is created; or create the fam
    // yourself (InitializeFam) with options.
    virtual void PrepareEnvironment() {}
    virtual bool AutoInitialize() const { return true; }

    // Creates a new fam object (replacing any finalized one) and initializes it.
    void InitializeFam(Fam_Options *options = nullptr);
    // Finalizes the fixture's fam; TearDown then leaves it alone.
    void FinalizeFam();
    // FinalizeFam() then InitializeFam(options): a fresh fam object on the same directories.
    void ReinitializeFam(Fam_Options *options = nullptr);

    // Sets an environment variable for the rest of this test (restored in TearDown).
    void SetEnv(const std::string &name, std::optional<std::string> value);
    // For tests whose children run as other users (RunAsUser): as root, the embedded store is
    // shared with kStoreSharingGid (sharing_group), which those children keep; otherwise it is
    // private to its owner and another user cannot open it at all.
    void ShareStoreWithChildren();

    openfam::fam *fam() { return fam_.get(); }
    // The cluster this test runs on (FAMPOOL_TEST_CLUSTER), or null on the embedded model.
    TestCluster *cluster() { return cluster_; }
    // Where volatile and persistent heap files go: FAMPOOL_SHM_DIR and FAMPOOL_HOME/heaps in
    // the embedded model, each memory server's shm_path and fam_path on a cluster.
    std::vector<std::string> VolatileHeapDirs() const;
    std::vector<std::string> PersistentHeapDirs() const;
    const std::string &home_dir() const { return home_->path(); }
    const std::string &shm_dir() const { return shm_->path(); }
    // Where backups go: the cluster's archive directory, else $FAMPOOL_ARCHIVE_DIR when the
    // test set it, else $FAMPOOL_HOME/backup.
    std::string ArchiveDir() const;

    // Shortcuts. They throw what the fam call throws; GoogleTest reports an exception that
    // escapes a test body as a failure with its message.
    std::unique_ptr<Fam_Region_Descriptor> CreateRegion(const char *name,
                                                        uint64_t size = 64ull << 20,
                                                        mode_t perm = 0777,
                                                        Fam_Region_Attributes *attrs = nullptr);
    std::unique_ptr<Fam_Descriptor> Allocate(const char *name, uint64_t size,
                                             Fam_Region_Descriptor *region, mode_t perm = 0777);

    // Puts `bytes` at `offset` / reads `n` bytes at `offset` with blocking calls.
    void PutBytes(Fam_Descriptor *item, uint64_t offset, const std::vector<uint8_t> &bytes);
    std::vector<uint8_t> GetBytes(Fam_Descriptor *item, uint64_t offset, uint64_t n);

  private:
    std::unique_ptr<TempDir> home_;
    std::unique_ptr<TempDir> shm_;
    std::unique_ptr<TestCluster> own_cluster_;  // this test's own cluster
    TestCluster *cluster_ = nullptr;            // own_cluster_ or the program's shared one
    std::vector<std::unique_ptr<ScopedEnv>> env_;
    std::unique_ptr<openfam::fam> fam_;
    bool initialized_ = false;
    bool finalized_ = false;
};

// A FamTest whose fam object is initialized under FAM_THREAD_MULTIPLE, with region "r" of
// RegionSize() bytes holding item "i" of ItemSize() bytes: for tests of threads sharing it.
class ThreadMultipleFamTest : public FamTest {
  protected:
    bool AutoInitialize() const override { return false; }
    virtual uint64_t RegionSize() const { return uint64_t{16} << 20; }
    virtual uint64_t ItemSize() const { return uint64_t{4} << 20; }
    void SetUp() override;
    void TearDown() override;

    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
};

// The options fam_list_options names, in the order API.md documents them (the tests' own list,
// not the library's).
extern const char *const kDocumentedOptions[17];

// Deterministic test data: byte i of the pattern with `seed`.
std::vector<uint8_t> Pattern(uint64_t n, uint32_t seed);

// The bytes the items of a region without redundancy may take in all, as docs/semantics.md
// ("Region capacity") states it: each of its K servers spans OpenFAM 3.2's heap (the next
// power of two of its share, 1 MiB at least) or, without interleaving, the region's size, or,
// interleaved, its share rounded to whole stripes; whichever is more. Read with fam_stat.
uint64_t RegionRoom(openfam::fam *fam, openfam::Fam_Region_Descriptor *region);
inline uint8_t PatternByte(uint64_t i, uint32_t seed) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
    return static_cast<uint8_t>((x >> 29) ^ (x >> 47));
}

// ---------------------------------------------------------------------------------------------
// Child processes

// Results of RunInChild / RunAsUser besides the body's own return value (0-119 advised).
inline constexpr int kChildTimedOut = -1;            // killed after its timeout
inline constexpr int kChildForkFailed = -2;          // fork() failed
inline constexpr int kChildUncaughtException = 120;  // the body threw; what() went to stderr
inline constexpr int kChildSetupFailed = 121;        // setgroups/setgid/setuid failed
// A child killed by signal s reports 128 + s.

// Forks; the child runs `body` (which must make its own fam object: use ScopedFam) and
// _exits with its return value; the parent waits at most `timeout_s` seconds, then kills the
// child by PID. Returns the child's exit status as above. A child that uses fam on a cluster
// must come from RunInCleanChild or RunAsUser instead.
int RunInChild(const std::function<int()> &body, int timeout_s = 30);

// RunInChild after setgroups({kStoreSharingGid}), setgid(gid), setuid(uid) in the child. The
// permission tests use uid/gid 65534 (nobody/nogroup).
inline constexpr uid_t kNobodyUid = 65534;
inline constexpr gid_t kNobodyGid = 65534;
// The group an embedded store is shared with in tests whose children run as other users
// (ShareStoreWithChildren): every such child keeps it as a supplementary group, whatever its
// primary gid (the one fampool's permission bits are checked against).
inline constexpr gid_t kStoreSharingGid = 65534;

namespace detail {
inline constexpr uint32_t kSameUser = UINT32_MAX;  // RunAsUserSpawned: keep the user
int RunAsUserForked(uid_t uid, gid_t gid, const std::function<int()> &body, int timeout_s);
// Has the spawner run `thunk(state)` (state: `size` bytes) in a child as uid/gid, with this
// process's environment and working directory; the result as RunInChild's.
int RunAsUserSpawned(int (*thunk)(const void *), const void *state, size_t size, uid_t uid,
                     gid_t gid, int timeout_s);
template <typename Body>
int InvokeCopy(const void *state) {
    alignas(Body) unsigned char copy[sizeof(Body)];
    std::memcpy(copy, state, sizeof(Body));
    return (*std::launder(reinterpret_cast<Body *>(copy)))();
}
}  // namespace detail

// On a cluster the child cannot be forked from this process: it holds gRPC and libfabric
// state, which a forked child must not use. It is forked instead by the spawner, a process
// forked from this one when the program started (before it held any): `body` travels to it as
// bytes, so it must be trivially copyable and capture nothing by reference or pointer (the
// spawner has none of this process's later memory: capture nothing, or plain values), and the
// child
// gets this process's environment and working directory as they are at the call.
template <typename Body>
int RunAsUser(uid_t uid, gid_t gid, Body body, int timeout_s = 30) {
    static_assert(std::is_trivially_copyable_v<Body>,
                  "RunAsUser bodies travel to the spawner as bytes: capture plain values only");
    if (::EmbeddedModel()) {
        return detail::RunAsUserForked(uid, gid, std::function<int()>(body), timeout_s);
    }
    return detail::RunAsUserSpawned(&detail::InvokeCopy<Body>, &body, sizeof body, uid, gid,
                                    timeout_s);
}

// RunInChild that works on a cluster too (through the spawner, as RunAsUser), as this user.
template <typename Body>
int RunInCleanChild(Body body, int timeout_s = 30) {
    static_assert(std::is_trivially_copyable_v<Body>,
                  "RunInCleanChild bodies travel to the spawner as bytes: capture plain values "
                  "only");
    if (::EmbeddedModel()) return RunInChild(std::function<int()>(body), timeout_s);
    return detail::RunAsUserSpawned(&detail::InvokeCopy<Body>, &body, sizeof body,
                                    detail::kSameUser, detail::kSameUser, timeout_s);
}

// Checks for child bodies (GoogleTest assertions do not reach the parent from a forked child):
// on failure they print where and why to stderr and return 1 from the body.
#define CHILD_EXPECT(condition)                                                                 \
    do {                                                                                        \
        if (!(condition)) {                                                                     \
            fprintf(stderr, "%s:%d: child check failed: %s\n", __FILE__, __LINE__, #condition); \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)
#define CHILD_EXPECT_FAM_ERROR(statement, error)                                                \
    do {                                                                                        \
        ::fampool_test::CaughtError child_caught_ =                                             \
            ::fampool_test::CatchFamError([&]() { statement; });                                \
        if (child_caught_.code != (error)) {                                                    \
            fprintf(stderr, "%s:%d: child: %s: expected %s, got %s (%s)\n", __FILE__, __LINE__, \
                    #statement, ::fampool_test::FamErrorName(error).c_str(),                    \
                    ::fampool_test::FamErrorName(child_caught_.code).c_str(),                   \
                    child_caught_.message.c_str());                                             \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)
#define CHILD_EXPECT_NO_FAM_ERROR(statement) \
    CHILD_EXPECT_FAM_ERROR(statement, ::openfam::FAM_NO_ERROR)

// How a program run by ChildProcess / RunProgram ended.
struct ProcessResult {
    bool timed_out = false;  // killed after its timeout
    int exit_code = -1;      // exit status when it exited; 128 + signal when a signal ended it
    int term_signal = 0;     // the signal that ended it, 0 when it exited
    std::string out;         // captured stdout
    std::string err;         // captured stderr
    bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
};

// What to run: argv[0] is the program (a path, or a name looked up in PATH).
struct ProgramSpec {
    std::vector<std::string> argv;
    // Variables to set in the child, on top of this process's environment...
    std::vector<std::pair<std::string, std::string>> env;
    // ...and variables to remove from it.
    std::vector<std::string> unset_env;
    std::string working_dir;  // empty: the current directory
    // The user and group the program runs as (no supplementary groups); -1: this process's.
    int uid = -1, gid = -1;
};

// A running program. It leads its own process group, so a launcher (mpirun) and the processes
// it starts are all stopped together when it times out; the destructor stops it likewise if it
// is still running.
class ChildProcess {
  public:
    ChildProcess() = default;
    ~ChildProcess();
    ChildProcess(const ChildProcess &) = delete;
    ChildProcess &operator=(const ChildProcess &) = delete;

    // Starts the program with stdout and stderr on pipes. Returns false (and says why in
    // error()) when it could not start.
    bool Start(const ProgramSpec &spec);
    // Waits until it exits (collecting its output) or `timeout_s` passes (then kills its
    // process group by ID with SIGKILL). Call once.
    ProcessResult Wait(int timeout_s);
    // Sends `signal` to the program's process group.
    void Signal(int signal);

    pid_t pid() const { return pid_; }
    const std::string &error() const { return error_; }

  private:
    pid_t pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    bool reaped_ = false;
    std::string error_;
};

// Start + Wait. A program that cannot start reports exit_code 127 and the reason in err.
ProcessResult RunProgram(const ProgramSpec &spec, int timeout_s = 60);

// The path of a test worker built from tests/workers/<name>.cc (or .c).
std::string WorkerPath(const std::string &name);

}  // namespace fampool_test

#endif  // FAMPOOL_TESTS_SUPPORT_TEST_SUPPORT_H_
