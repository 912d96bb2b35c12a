// test_support.cc: the fixture, error checks and child-process helpers of test_support.h.
#include "test_support.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

extern char **environ;

namespace fampool_test {

using openfam::Fam_Exception;

namespace {

std::string ErrnoText(const char *what) {
    return std::string(what) + ": " + std::strerror(errno);
}

using Clock = std::chrono::steady_clock;

// Decodes a waitpid status into RunInChild's convention.
int DecodeStatus(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return kChildUncaughtException;
}

// Waits for `pid` at most `timeout_s` seconds; kills it by PID on timeout.
int WaitForChild(pid_t pid, int timeout_s) {
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
        int status = 0;
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) return DecodeStatus(status);
        if (done < 0 && errno != EINTR) return kChildForkFailed;
        if (Clock::now() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            fprintf(stderr, "child %d killed after its %d s timeout\n", static_cast<int>(pid),
                    timeout_s);
            return kChildTimedOut;
        }
        std::this_thread::sleep_for(pause);
        if (pause < std::chrono::milliseconds(20)) pause *= 2;
    }
}

// In a child: drops to uid/gid; false (and why, on stderr) when it could not.
bool BecomeUser(uid_t uid, gid_t gid) {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
        perror("child: dropping to another user");
        return false;
    }
    if (getuid() != uid || geteuid() != uid || getgid() != gid) {
        fprintf(stderr, "child: still uid %d gid %d\n", static_cast<int>(getuid()),
                static_cast<int>(getgid()));
        return false;
    }
    return true;
}

// Runs `body` as RunInChild's child does: its return value, or kChildUncaughtException.
int RunBody(const std::function<int()> &body) {
    try {
        return body();
    } catch (const Fam_Exception &e) {
        fprintf(stderr, "child: uncaught Fam_Exception %s: %s\n",
                FamErrorName(e.fam_error()).c_str(), e.fam_error_msg());
    } catch (const std::exception &e) {
        fprintf(stderr, "child: uncaught exception: %s\n", e.what());
    } catch (...) {
        fprintf(stderr, "child: uncaught exception of unknown type\n");
    }
    return kChildUncaughtException;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Errors

std::string FamErrorName(int error) {
    static const char *const kNames[] = {
        "FAM_NO_ERROR",
        "FAM_ERR_UNKNOWN",
        "FAM_ERR_NOPERM",
        "FAM_ERR_TIMEOUT",
        "FAM_ERR_INVALID",
        "FAM_ERR_LIBFABRIC",
        "FAM_ERR_SHM",
        "FAM_ERR_NOT_CREATED",
        "FAM_ERR_NOTFOUND",
        "FAM_ERR_ALREADYEXIST",
        "FAM_ERR_ALLOCATOR",
        "FAM_ERR_RPC",
        "FAM_ERR_PMI",
        "FAM_ERR_OUTOFRANGE",
        "FAM_ERR_NO_SPACE",
        "FAM_ERR_NULLPTR",
        "FAM_ERR_UNIMPL",
        "FAM_ERR_RESOURCE",
        "FAM_ERR_INVALIDOP",
        "FAM_ERR_RPC_CLIENT_NOTFOUND",
        "FAM_ERR_MEMSERV_LIST_EMPTY",
        "FAM_ERR_METADATA",
        "FAM_ERR_MEMORY",
        "FAM_ERR_NAME_TOO_LONG",
        "FAM_ERR_ATL_QUEUE_FULL",
        "FAM_ERR_ATL_QUEUE_INSERT",
        "FAM_ERR_ATL_NOT_ENABLED",
        "FAM_ERR_ATL",
        "FAM_BACKUP_NOT_CREATED",
        "FAM_BACKUP_NOTFOUND",
        "FAM_BACKUP_INFO_NOTFOUND",
        "FAM_ERR_NOT_PWR_TWO",
    };
    static_assert(sizeof(kNames) / sizeof(kNames[0]) == openfam::FAM_ERR_NOT_PWR_TWO + 1,
                  "one name per Fam_Error");
    if (error == kNotAFamException) return "an exception other than Fam_Exception";
    if (error >= 0 && error < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) {
        return kNames[error];
    }
    return "Fam_Error(" + std::to_string(error) + ")";
}

CaughtError CatchFamError(const std::function<void()> &body) {
    CaughtError caught;
    try {
        body();
    } catch (const Fam_Exception &e) {
        caught.thrown = true;
        caught.code = e.fam_error();
        caught.message = e.fam_error_msg();
    } catch (const std::exception &e) {
        caught.thrown = true;
        caught.code = kNotAFamException;
        caught.message = e.what();
    } catch (...) {
        caught.thrown = true;
        caught.code = kNotAFamException;
    }
    return caught;
}

::testing::AssertionResult IsFamError(const CaughtError &caught, int expected,
                                      const std::vector<std::string> &call_names) {
    if (!caught.thrown) {
        return ::testing::AssertionFailure()
               << "expected " << FamErrorName(expected) << ", but nothing was thrown";
    }
    if (caught.code != expected) {
        return ::testing::AssertionFailure()
               << "expected " << FamErrorName(expected) << ", got " << FamErrorName(caught.code)
               << " with message \"" << caught.message << "\"";
    }
    if (!call_names.empty()) {
        bool named = false;
        for (const std::string &name : call_names) {
            if (caught.message.find(name) != std::string::npos) named = true;
        }
        if (!named) {
            std::string wanted;
            for (const std::string &name : call_names) {
                wanted += (wanted.empty() ? "\"" : " or \"") + name + "\"";
            }
            return ::testing::AssertionFailure()
                   << FamErrorName(expected) << " as expected, but its message \""
                   << caught.message << "\" does not name the call (" << wanted << ")";
        }
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult ThrowsFamError(const std::function<void()> &body, int expected,
                                          const char *call_name) {
    std::vector<std::string> names;
    if (call_name != nullptr) names.emplace_back(call_name);
    return IsFamError(CatchFamError(body), expected, names);
}

::testing::AssertionResult FailsAtQuiet(openfam::fam *fam, const std::function<void()> &body,
                                        int expected, const char *call_name) {
    CaughtError issued = CatchFamError(body);
    if (issued.thrown) {
        return ::testing::AssertionFailure()
               << call_name << " threw " << FamErrorName(issued.code) << " when issued (\""
               << issued.message << "\"); its error belongs to the next fam_quiet";
    }
    CaughtError quiet = CatchFamError([&] { fam->fam_quiet(); });
    ::testing::AssertionResult named = IsFamError(quiet, expected, {call_name});
    if (!named) return named << " (from fam_quiet after " << call_name << ")";
    if (quiet.message.rfind("fam_quiet: ", 0) != 0) {
        return ::testing::AssertionFailure()
               << "fam_quiet's message \"" << quiet.message << "\" does not start with fam_quiet";
    }
    CaughtError again = CatchFamError([&] { fam->fam_quiet(); });
    if (again.thrown) {
        return ::testing::AssertionFailure()
               << "a second fam_quiet threw " << FamErrorName(again.code) << " (\""
               << again.message << "\"): the first one should have cleared the error";
    }
    return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------------------------
// Files, directories and the environment

TempDir::TempDir(const std::string &parent, const std::string &prefix) {
    std::string pattern = parent + "/" + prefix + "XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) {
        throw std::runtime_error(ErrnoText(("mkdtemp " + pattern).c_str()));
    }
    path_ = buffer.data();
    if (chmod(path_.c_str(), 0777) != 0) {
        std::string why = ErrnoText(("chmod 0777 " + path_).c_str());
        RemoveTree(path_);
        throw std::runtime_error(why);
    }
}

TempDir::~TempDir() {
    if (!path_.empty()) RemoveTree(path_);
}

TempDir::TempDir(TempDir &&other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
}

TempDir &TempDir::operator=(TempDir &&other) noexcept {
    if (this != &other) {
        if (!path_.empty()) RemoveTree(path_);
        path_ = std::move(other.path_);
        other.path_.clear();
    }
    return *this;
}

void RemoveTree(const std::string &path) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) {
        fprintf(stderr, "warning: could not remove %s: %s\n", path.c_str(),
                ec.message().c_str());
    }
}

std::vector<FileEntry> ListFiles(const std::string &dir) {
    std::vector<FileEntry> files;
    std::error_code ec;
    auto options = std::filesystem::directory_options::skip_permission_denied;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, options, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code entry_ec;
        if (it->is_regular_file(entry_ec)) {
            files.push_back({it->path().string(), it->file_size(entry_ec)});
        }
    }
    return files;
}

ScopedEnv::ScopedEnv(std::string name, std::optional<std::string> value)
    : name_(std::move(name)) {
    if (const char *old = getenv(name_.c_str())) previous_ = old;
    if (value) {
        setenv(name_.c_str(), value->c_str(), 1);
    } else {
        unsetenv(name_.c_str());
    }
}

ScopedEnv::~ScopedEnv() {
    if (previous_) {
        setenv(name_.c_str(), previous_->c_str(), 1);
    } else {
        unsetenv(name_.c_str());
    }
}

std::vector<std::string> FampoolVariablesInEnvironment() {
    std::vector<std::string> names;
    for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        std::string text(*entry);
        std::string name = text.substr(0, text.find('='));
        bool ours = name.rfind("FAMPOOL_", 0) == 0 || name.rfind("OPENFAM_", 0) == 0;
        if (ours && name.rfind("FAMPOOL_TEST_", 0) != 0) names.push_back(name);
    }
    return names;
}

// ---------------------------------------------------------------------------------------------
// fam objects

ScopedFam::ScopedFam(Fam_Options *options) : fam_(std::make_unique<openfam::fam>()) {
    fam_->fam_initialize("default", options);
}

ScopedFam::~ScopedFam() {
    if (finalized_) return;
    try {
        fam_->fam_finalize("default");
    } catch (const Fam_Exception &e) {
        fprintf(stderr, "ScopedFam: fam_finalize threw %s: %s\n",
                FamErrorName(e.fam_error()).c_str(), e.fam_error_msg());
    }
}

void ScopedFam::Finalize() {
    finalized_ = true;
    fam_->fam_finalize("default");
}

Fam_Options EmptyOptions() {
    Fam_Options options{};
    return options;
}

Fam_Region_Attributes FamAttributes(Fam_Memory_Type memory, Fam_Permission_Level level) {
    Fam_Region_Attributes attrs{};
    attrs.redundancyLevel = REDUNDANCY_LEVEL_DEFAULT;
    attrs.memoryType = memory;
    attrs.interleaveEnable = INTERLEAVE_DEFAULT;
    attrs.permissionLevel = level;
    return attrs;
}

namespace {

// The cluster every test of this program shares (FAMPOOL_TEST_CLUSTER_SHARED): started by the
// first test, started again if a server died, stopped when the program exits.
// Starts a test cluster, again with other ports when a server could not start: ports are
// picked free, but another test running in parallel may take one before our server binds it.
std::unique_ptr<TestCluster> StartCluster(const TestClusterSpec &spec, const std::string &dir,
                                          const std::string &archive_dir) {
    for (int attempt = 1;; ++attempt) {
        try {
            return std::make_unique<TestCluster>(spec, dir, archive_dir);
        } catch (const std::runtime_error &e) {
            if (attempt == 3 || std::string(e.what()).find("exited during start-up") ==
                                    std::string::npos) {
                throw;
            }
        }
    }
}

TestCluster *SharedCluster(const TestClusterSpec &spec) {
    static std::unique_ptr<TempDir> dir;
    static std::unique_ptr<TestCluster> cluster;
    if (cluster && cluster->Alive()) return cluster.get();
    if (cluster) {
        ADD_FAILURE() << "a server of the shared test cluster died; starting a new cluster. "
                      << "Server logs:\n" << cluster->Logs();
    }
    cluster.reset();
    dir = std::make_unique<TempDir>("/tmp", "fampool-cluster-");
    cluster = StartCluster(spec, dir->path(), dir->path() + "/backup");
    return cluster.get();
}

}  // namespace

void FamTest::SetUp() {
    for (const std::string &name : FampoolVariablesInEnvironment()) SetEnv(name, std::nullopt);
    home_ = std::make_unique<TempDir>("/tmp", "fampool-home-");
    shm_ = std::make_unique<TempDir>("/dev/shm", "fampool-shm-");
    SetEnv("FAMPOOL_HOME", home_->path());
    SetEnv("FAMPOOL_SHM_DIR", shm_->path());
    PrepareEnvironment();
    if (HasFatalFailure()) return;
    TestClusterSpec spec;
    if (TestClusterSpec::FromEnvironment(&spec)) {
        const char *archive = std::getenv("FAMPOOL_ARCHIVE_DIR");
        try {
            if (TestClusterSpec::Shared()) {
                cluster_ = SharedCluster(spec);
            } else {
                own_cluster_ = StartCluster(spec, home_->path(),
                                            archive ? archive : home_->path() + "/backup");
                cluster_ = own_cluster_.get();
            }
        } catch (const std::exception &e) {
            FAIL() << "cannot start the test cluster: " << e.what();
        }
        SetEnv("FAMPOOL_CONFIG", cluster_->config_path());
    }
    if (AutoInitialize()) InitializeFam(nullptr);
}

void FamTest::TearDown() {
    if (fam_ && initialized_ && !finalized_) {
        finalized_ = true;
        try {
            fam_->fam_finalize("default");
        } catch (const Fam_Exception &e) {
            // A test that called fam_finalize itself leaves an object that says so.
            if (e.fam_error() != openfam::FAM_ERR_INVALIDOP) {
                ADD_FAILURE() << "fam_finalize in TearDown threw " << FamErrorName(e.fam_error())
                              << ": " << e.fam_error_msg();
            }
        }
    }
    fam_.reset();
    if (cluster_ && !own_cluster_) {
        try {
            cluster_->Clean();
        } catch (const std::exception &e) {
            ADD_FAILURE() << "cannot empty the shared test cluster: " << e.what();
        }
    }
    own_cluster_.reset();
    cluster_ = nullptr;
    while (!env_.empty()) env_.pop_back();  // restore in reverse order of setting
    home_.reset();
    shm_.reset();
}

std::vector<std::string> FamTest::VolatileHeapDirs() const {
    if (!cluster_) return {shm_->path()};
    std::vector<std::string> dirs;
    for (int i = 0; i < cluster_->servers(); ++i) {
        dirs.push_back(cluster_->dir() + "/shm" + std::to_string(i));
    }
    return dirs;
}

std::vector<std::string> FamTest::PersistentHeapDirs() const {
    if (!cluster_) return {home_->path() + "/heaps"};
    std::vector<std::string> dirs;
    for (int i = 0; i < cluster_->servers(); ++i) {
        dirs.push_back(cluster_->dir() + "/heaps" + std::to_string(i));
    }
    return dirs;
}

std::string FamTest::ArchiveDir() const {
    if (cluster_) return cluster_->archive_dir();
    const char *archive = std::getenv("FAMPOOL_ARCHIVE_DIR");
    return archive ? archive : home_->path() + "/backup";
}

void FamTest::InitializeFam(Fam_Options *options) {
    if (fam_ && initialized_ && !finalized_) FinalizeFam();
    fam_ = std::make_unique<openfam::fam>();
    initialized_ = false;
    finalized_ = false;
    try {
        fam_->fam_initialize("default", options);
    } catch (const Fam_Exception &e) {
        FAIL() << "fam_initialize threw " << FamErrorName(e.fam_error()) << ": "
               << e.fam_error_msg();
    }
    initialized_ = true;
}

void FamTest::FinalizeFam() {
    if (!fam_ || !initialized_ || finalized_) return;
    finalized_ = true;
    try {
        fam_->fam_finalize("default");
    } catch (const Fam_Exception &e) {
        ADD_FAILURE() << "fam_finalize threw " << FamErrorName(e.fam_error()) << ": "
                      << e.fam_error_msg();
    }
}

void FamTest::ReinitializeFam(Fam_Options *options) {
    FinalizeFam();
    InitializeFam(options);
}

void FamTest::SetEnv(const std::string &name, std::optional<std::string> value) {
    env_.push_back(std::make_unique<ScopedEnv>(name, std::move(value)));
}

std::unique_ptr<Fam_Region_Descriptor> FamTest::CreateRegion(const char *name, uint64_t size,
                                                             mode_t perm,
                                                             Fam_Region_Attributes *attrs) {
    return std::unique_ptr<Fam_Region_Descriptor>(
        fam_->fam_create_region(name, size, perm, attrs));
}

std::unique_ptr<Fam_Descriptor> FamTest::Allocate(const char *name, uint64_t size,
                                                  Fam_Region_Descriptor *region, mode_t perm) {
    if (name == nullptr) {
        return std::unique_ptr<Fam_Descriptor>(fam_->fam_allocate(size, perm, region));
    }
    return std::unique_ptr<Fam_Descriptor>(fam_->fam_allocate(name, size, perm, region));
}

void FamTest::PutBytes(Fam_Descriptor *item, uint64_t offset, const std::vector<uint8_t> &bytes) {
    std::vector<uint8_t> copy = bytes;
    fam_->fam_put_blocking(copy.data(), item, offset, copy.size());
}

std::vector<uint8_t> FamTest::GetBytes(Fam_Descriptor *item, uint64_t offset, uint64_t n) {
    std::vector<uint8_t> bytes(n);
    fam_->fam_get_blocking(bytes.data(), item, offset, n);
    return bytes;
}

std::vector<uint8_t> Pattern(uint64_t n, uint32_t seed) {
    std::vector<uint8_t> bytes(n);
    for (uint64_t i = 0; i < n; ++i) bytes[i] = PatternByte(i, seed);
    return bytes;
}

// ---------------------------------------------------------------------------------------------
// Child processes

int RunInChild(const std::function<int()> &body, int timeout_s) {
    fflush(nullptr);  // or the child would print the parent's buffered output again
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return kChildForkFailed;
    }
    if (pid == 0) {
        int result = RunBody(body);
        fflush(nullptr);
        _exit(result & 0xff);
    }
    return WaitForChild(pid, timeout_s);
}

namespace {

// The spawner: forked when a program that runs on a test cluster starts (FAMPOOL_TEST_CLUSTER
// set), before it holds any gRPC or libfabric state, so that the children it forks hold none
// either. A request is one message on a SOCK_SEQPACKET socket: the header below, the body's
// bytes, the working directory and the environment (each string NUL-terminated). The answer
// is the child's result (an int). The spawner ends when the program closes its end (or dies).
struct SpawnRequest {
    int (*thunk)(const void *);
    uint32_t state_size;
    uint32_t uid;
    uint32_t gid;
    int32_t timeout_s;
};
constexpr size_t kMostRequestBytes = 64 << 10;  // below the socket's send buffer

void ServeSpawnRequests(int socket_fd) {
    std::vector<char> message(kMostRequestBytes);
    for (;;) {
        ssize_t got = recv(socket_fd, message.data(), message.size(), 0);
        if (got <= 0) _exit(0);  // the program ended
        SpawnRequest request;
        if (static_cast<size_t>(got) < sizeof request) _exit(1);
        std::memcpy(&request, message.data(), sizeof request);
        // The body, then at least the working directory, the last string NUL-terminated.
        if (request.state_size > static_cast<size_t>(got) - sizeof request - 1 ||
            message[got - 1] != '\0') {
            _exit(1);
        }
        const char *state = message.data() + sizeof request;
        const char *strings = state + request.state_size;
        const char *end = message.data() + got;
        pid_t spawner = getpid();
        pid_t pid = fork();
        if (pid == 0) {
            // The working directory first, then the environment, each NUL-terminated.
            if (chdir(strings) != 0) perror("child: chdir");
            clearenv();
            for (const char *entry = strings + strlen(strings) + 1; entry < end;
                 entry += strlen(entry) + 1) {
                putenv(const_cast<char *>(entry));
            }
            int result = kChildSetupFailed;
            if (request.uid == detail::kSameUser || BecomeUser(request.uid, request.gid)) {
                // After the change of user, which clears it: ends with the spawner.
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != spawner) _exit(result);
                result = RunBody([&] { return request.thunk(state); });
            }
            fflush(nullptr);
            _exit(result & 0xff);
        }
        int result = pid < 0 ? kChildForkFailed : WaitForChild(pid, request.timeout_s);
        if (send(socket_fd, &result, sizeof result, MSG_NOSIGNAL) != sizeof result) _exit(0);
    }
}

int spawner_socket = -1;
bool spawner_tried = false;

// Starts the spawner before the first test (every static object is built by then, none of
// the program's gRPC or libfabric state yet).
class SpawnerEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        // Once: a repeated run (--gtest_repeat) sets environments up again, by then with
        // gRPC state to inherit.
        if (spawner_socket >= 0 || spawner_tried) return;
        spawner_tried = true;
        if (!getenv("FAMPOOL_TEST_CLUSTER")) return;
        int fds[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
            perror("test spawner: socketpair");
            return;
        }
        pid_t parent = getpid();
        fflush(nullptr);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(0);
            ServeSpawnRequests(fds[1]);
        }
        close(fds[1]);
        if (pid < 0) {
            perror("test spawner: fork");
            close(fds[0]);
            return;
        }
        spawner_socket = fds[0];
    }
};

[[maybe_unused]] ::testing::Environment *const spawner_environment =
    ::testing::AddGlobalTestEnvironment(new SpawnerEnvironment);

std::mutex spawner_mutex;  // one request in flight

}  // namespace

namespace detail {

int RunAsUserForked(uid_t uid, gid_t gid, const std::function<int()> &body, int timeout_s) {
    return RunInChild([&]() -> int { return BecomeUser(uid, gid) ? body() : kChildSetupFailed; },
                      timeout_s);
}

int RunAsUserSpawned(int (*thunk)(const void *), const void *state, size_t size, uid_t uid,
                     gid_t gid, int timeout_s) {
    if (spawner_socket < 0) {
        fprintf(stderr,
                "RunAsUser: no spawner (FAMPOOL_TEST_CLUSTER was not set when the program "
                "started)\n");
        return kChildForkFailed;
    }
    SpawnRequest request{thunk, static_cast<uint32_t>(size), static_cast<uint32_t>(uid),
                         static_cast<uint32_t>(gid), timeout_s};
    std::string message(reinterpret_cast<const char *>(&request), sizeof request);
    message.append(static_cast<const char *>(state), size);
    std::error_code ec;
    message += std::filesystem::current_path(ec).string();
    message.push_back('\0');
    for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        message += *entry;
        message.push_back('\0');
    }
    if (message.size() > kMostRequestBytes) {
        fprintf(stderr, "RunAsUser: request of %zu bytes is too large\n", message.size());
        return kChildForkFailed;
    }
    std::lock_guard<std::mutex> lock(spawner_mutex);
    fflush(nullptr);
    if (send(spawner_socket, message.data(), message.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(message.size())) {
        perror("RunAsUser: sending to the spawner");
        return kChildForkFailed;
    }
    // The spawner answers within the child's timeout; this bound only guards against a
    // spawner that died.
    pollfd answer{spawner_socket, POLLIN, 0};
    int result = kChildForkFailed;
    int ready = 0;
    do {
        ready = poll(&answer, 1, (timeout_s + 30) * 1000);
    } while (ready < 0 && errno == EINTR);
    if (ready != 1 || recv(spawner_socket, &result, sizeof result, 0) != sizeof result) {
        // A late answer would pass for the next request's: no more requests to this spawner.
        fprintf(stderr, "RunAsUser: no answer from the spawner\n");
        close(spawner_socket);
        spawner_socket = -1;
        return kChildForkFailed;
    }
    return result;
}

}  // namespace detail

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !reaped_) {
        kill(-pid_, SIGKILL);
        kill(pid_, SIGKILL);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
}

bool ChildProcess::Start(const ProgramSpec &spec) {
    if (pid_ > 0) {
        error_ = "already started";
        return false;
    }
    if (spec.argv.empty()) {
        error_ = "no program given";
        return false;
    }
    // Everything the child needs is built before fork: after fork only exec-safe calls run.
    std::vector<std::string> env_strings;
    for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        std::string text(*entry);
        std::string name = text.substr(0, text.find('='));
        bool replaced = false;
        for (const std::string &unset : spec.unset_env) replaced |= (unset == name);
        for (const auto &[set_name, value] : spec.env) replaced |= (set_name == name);
        if (!replaced) env_strings.push_back(text);
    }
    for (const auto &[name, value] : spec.env) env_strings.push_back(name + "=" + value);
    std::vector<char *> envp;
    for (std::string &text : env_strings) envp.push_back(text.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings = spec.argv;
    std::vector<char *> argv;
    for (std::string &arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);

    int out_pipe[2], err_pipe[2], exec_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
        error_ = ErrnoText("pipe2");
        return false;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        error_ = ErrnoText("pipe2");
        close(out_pipe[0]);
        close(out_pipe[1]);
        return false;
    }
    // Closed by a successful exec; carries errno when exec fails.
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        error_ = ErrnoText("pipe2");
        for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
        return false;
    }
    fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
        error_ = ErrnoText("fork");
        for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0],
                       exec_pipe[1]}) {
            close(fd);
        }
        return false;
    }
    if (pid == 0) {
        setpgid(0, 0);
        dup2(out_pipe[1], STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
        int code = 0;
        if (spec.gid >= 0 && (setgroups(0, nullptr) != 0 || setgid(spec.gid) != 0)) {
            code = errno;
        } else if (spec.uid >= 0 && setuid(spec.uid) != 0) {
            code = errno;
        } else if (!spec.working_dir.empty() && chdir(spec.working_dir.c_str()) != 0) {
            code = errno;
        } else {
            execvpe(argv[0], argv.data(), envp.data());
            code = errno;
        }
        ssize_t ignored = write(exec_pipe[1], &code, sizeof(code));
        (void)ignored;
        _exit(127);
    }
    setpgid(pid, pid);  // also from the parent, so the group exists before we might signal it
    pid_ = pid;
    close(out_pipe[1]);
    close(err_pipe[1]);
    close(exec_pipe[1]);
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    int code = 0;
    ssize_t n;
    do {
        n = read(exec_pipe[0], &code, sizeof(code));
    } while (n < 0 && errno == EINTR);
    close(exec_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof(code))) {
        error_ = "cannot run " + spec.argv[0] + ": " + std::strerror(code);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
        return false;
    }
    return true;
}

ProcessResult ChildProcess::Wait(int timeout_s) {
    ProcessResult result;
    if (pid_ <= 0 || reaped_) {
        result.exit_code = 127;
        result.err = error_.empty() ? "not running" : error_;
        return result;
    }
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    // After the program exits, its output is read for at most this long more: a process it
    // left behind may hold the pipes open.
    const auto drain_limit = std::chrono::seconds(2);
    std::optional<Clock::time_point> exited_at;
    int status = 0;
    char buffer[65536];
    while (out_fd_ >= 0 || err_fd_ >= 0) {
        if (!reaped_) {
            pid_t done = waitpid(pid_, &status, WNOHANG);
            if (done == pid_) {
                reaped_ = true;
                exited_at = Clock::now();
            }
        }
        auto now = Clock::now();
        if (!reaped_ && now >= deadline) break;
        if (exited_at && now - *exited_at >= drain_limit) break;
        struct pollfd fds[2];
        nfds_t count = 0;
        for (int fd : {out_fd_, err_fd_}) {
            if (fd >= 0) fds[count++] = {fd, POLLIN, 0};
        }
        int ready = poll(fds, count, 20);
        if (ready < 0 && errno != EINTR) break;
        for (nfds_t i = 0; i < count && ready > 0; ++i) {
            if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            ssize_t got = read(fds[i].fd, buffer, sizeof(buffer));
            if (got < 0 && errno == EINTR) continue;
            bool is_out = fds[i].fd == out_fd_;
            if (got <= 0) {
                close(fds[i].fd);
                (is_out ? out_fd_ : err_fd_) = -1;
            } else {
                (is_out ? result.out : result.err).append(buffer, static_cast<size_t>(got));
            }
        }
    }
    if (!reaped_) {
        // Either the output is closed and the program is still running, or time is up.
        for (;;) {
            pid_t done = waitpid(pid_, &status, WNOHANG);
            if (done == pid_) {
                reaped_ = true;
                break;
            }
            if (Clock::now() >= deadline) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    if (!reaped_) {
        kill(-pid_, SIGKILL);
        kill(pid_, SIGKILL);
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
        result.timed_out = true;
        fprintf(stderr, "%d killed after its %d s timeout\n", static_cast<int>(pid_), timeout_s);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
    out_fd_ = err_fd_ = -1;
    if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.term_signal = WTERMSIG(status);
        result.exit_code = 128 + result.term_signal;
    }
    return result;
}

void ChildProcess::Signal(int signal) {
    if (pid_ > 0 && !reaped_) kill(-pid_, signal);
}

ProcessResult RunProgram(const ProgramSpec &spec, int timeout_s) {
    ChildProcess child;
    if (!child.Start(spec)) {
        ProcessResult result;
        result.exit_code = 127;
        result.err = child.error();
        return result;
    }
    return child.Wait(timeout_s);
}

std::string WorkerPath(const std::string &name) {
#ifdef FAMPOOL_TEST_WORKER_DIR
    return std::string(FAMPOOL_TEST_WORKER_DIR) + "/" + name;
#else
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return (self.parent_path() / "workers" / name).string();
#endif
}

}  // namespace fampool_test
