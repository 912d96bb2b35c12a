// test_support.cc: the fixture, error checks, files and environment helpers of test_support.h
// (child processes: child_processes.cc).
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

#include <algorithm>
#include <bit>
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

std::string ErrnoText(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

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
                   << FamErrorName(expected) << " as expected, but its message \"" << caught.message
                   << "\" does not name the call (" << wanted << ")";
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
               << "a second fam_quiet threw " << FamErrorName(again.code) << " (\"" << again.message
               << "\"): the first one should have cleared the error";
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
    if (chmod(path_.c_str(), 01777) != 0) {
        std::string why = ErrnoText(("chmod 01777 " + path_).c_str());
        RemoveTree(path_);
        throw std::runtime_error(why);
    }
}

TempDir::~TempDir() {
    if (!path_.empty()) RemoveTree(path_);
}

TempDir::TempDir(TempDir &&other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

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
        fprintf(stderr, "warning: could not remove %s: %s\n", path.c_str(), ec.message().c_str());
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

ScopedEnv::ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
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
            if (attempt == 3 ||
                std::string(e.what()).find("exited during start-up") == std::string::npos) {
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
                      << "Server logs:\n"
                      << cluster->Logs();
    }
    cluster.reset();
    dir = std::make_unique<TempDir>("/tmp", "fampool-cluster-");
    cluster = StartCluster(spec, dir->path(), dir->path() + "/backup");
    return cluster.get();
}

}  // namespace

void FamTest::ShareStoreWithChildren() {
    if (geteuid() == 0) SetEnv("FAMPOOL_SHARING_GROUP", std::to_string(kStoreSharingGid));
}

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

void ThreadMultipleFamTest::SetUp() {
    FamTest::SetUp();
    if (HasFatalFailure()) return;
    Fam_Options options = EmptyOptions();
    options.famThreadModel = const_cast<char *>("FAM_THREAD_MULTIPLE");
    InitializeFam(&options);
    if (HasFatalFailure()) return;
    region_ = CreateRegion("r", RegionSize());
    item_ = Allocate("i", ItemSize(), region_.get());
}

void ThreadMultipleFamTest::TearDown() {
    item_.reset();
    region_.reset();
    FamTest::TearDown();
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
    return std::unique_ptr<Fam_Region_Descriptor>(fam_->fam_create_region(name, size, perm, attrs));
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

const char *const kDocumentedOptions[17] = {
    "VERSION",
    "DEFAULT_REGION_NAME",
    "CIS_SERVER",
    "GRPC_PORT",
    "LIBFABRIC_PROVIDER",
    "FAM_THREAD_MODEL",
    "CIS_INTERFACE_TYPE",
    "OPENFAM_MODEL",
    "FAM_CONTEXT_MODEL",
    "PE_COUNT",
    "PE_ID",
    "RUNTIME",
    "NUM_CONSUMER",
    "FAM_DEFAULT_MEMORY_TYPE",
    "IF_DEVICE",
    "LOC_BUF_ADDR",
    "LOC_BUF_SIZE",
};

uint64_t RegionRoom(openfam::fam *fam, openfam::Fam_Region_Descriptor *region) {
    openfam::Fam_Stat stat{};
    fam->fam_stat(region, &stat);
    auto round_up = [](uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; };
    uint64_t servers = std::max<uint64_t>(1, stat.num_memservers);
    uint64_t share = round_up((stat.size + servers - 1) / servers, 64);
    uint64_t heap = std::bit_ceil(std::max<uint64_t>(uint64_t{1} << 20, share));
    uint64_t interleave = stat.interleaveSize;
    if (interleave && servers > 1) {
        uint64_t stripes = round_up(stat.size, interleave * servers) / servers;
        return servers * std::max(round_up(heap, interleave), stripes);
    }
    return servers * std::max(heap, round_up(stat.size, 64));
}

std::vector<uint8_t> Pattern(uint64_t n, uint32_t seed) {
    std::vector<uint8_t> bytes(n);
    for (uint64_t i = 0; i < n; ++i) bytes[i] = PatternByte(i, seed);
    return bytes;
}

}  // namespace fampool_test
