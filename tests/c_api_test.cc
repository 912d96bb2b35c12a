// The C API (fam/fam_c.h): the C worker passes every check, and errors cross the C boundary as
// return values plus the calling thread's last error, never as exceptions.
#include <fam/fam_c.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::chrono::seconds kWorkerTimeout{120};

// A new directory made by mkdtemp under parent, mode 0777, removed with its contents when the
// object goes. path() is empty when it could not be made.
class TempDir {
  public:
    TempDir(const std::string &parent, const std::string &prefix) {
        std::string pattern = parent + "/" + prefix + "XXXXXX";
        std::vector<char> name(pattern.begin(), pattern.end());
        name.push_back('\0');
        if (mkdtemp(name.data()) != nullptr && chmod(name.data(), 01777) == 0) path_ = name.data();
    }
    ~TempDir() {
        std::error_code ignored;
        if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

struct ChildOutcome {
    bool started = false;
    bool timed_out = false;
    int status = 0;  // as from waitpid
};

// Runs program with no arguments in the current environment, stdout and stderr to log_path;
// kills it (by its PID) when it outlives timeout.
ChildOutcome RunWithTimeout(const std::string &program, const std::string &log_path,
                            std::chrono::seconds timeout) {
    ChildOutcome outcome;
    pid_t pid = fork();
    if (pid < 0) return outcome;
    if (pid == 0) {
        int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (log >= 0) {
            dup2(log, STDOUT_FILENO);
            dup2(log, STDERR_FILENO);
            close(log);
        }
        execl(program.c_str(), program.c_str(), static_cast<char *>(nullptr));
        _exit(127);
    }
    outcome.started = true;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (waitpid(pid, &outcome.status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() >= deadline) {
            outcome.timed_out = true;
            kill(pid, SIGKILL);
            waitpid(pid, &outcome.status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return outcome;
}

std::string ReadFile(const std::string &path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Every test gets its own data directory and volatile-heap directory, through the environment
// (inherited by the worker), and, when it asks, an initialized c_fam.
class CApiTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_FALSE(home_.path().empty()) << "cannot make a data directory under /tmp";
        ASSERT_FALSE(shm_.path().empty()) << "cannot make a heap directory under /dev/shm";
        setenv("FAMPOOL_HOME", home_.path().c_str(), 1);
        setenv("FAMPOOL_SHM_DIR", shm_.path().c_str(), 1);
        unsetenv("FAMPOOL_ARCHIVE_DIR");
    }

    void TearDown() override {
        if (fam_ != nullptr) {
            c_fam_finalize(fam_, "default");  // fails harmlessly when the test finalized
            c_fam_delete(fam_);
        }
        unsetenv("FAMPOOL_HOME");
        unsetenv("FAMPOOL_SHM_DIR");
    }

    void CreateFam() {
        fam_ = c_fam_create();
        ASSERT_NE(fam_, nullptr) << c_fam_error_msg();
    }

    void InitializeFam() {
        ASSERT_NO_FATAL_FAILURE(CreateFam());
        ASSERT_EQ(c_fam_initialize(fam_, "default", nullptr), 0) << c_fam_error_msg();
    }

    TempDir home_{"/tmp", "fampool-c-api-home-"};
    TempDir shm_{"/dev/shm", "fampool-c-api-shm-"};
    c_fam *fam_ = nullptr;
};

TEST_F(CApiTest, WorkerCompiledAsCPassesEveryCheck) {
    std::string worker = std::string(FAMPOOL_TEST_WORKER_DIR) + "/c_api_worker";
    ASSERT_EQ(access(worker.c_str(), X_OK), 0) << "worker not built: " << worker;
    std::string log = home_.path() + "/c_api_worker.log";

    ChildOutcome outcome = RunWithTimeout(worker, log, kWorkerTimeout);

    ASSERT_TRUE(outcome.started) << "fork failed: " << std::strerror(errno);
    std::string output = ReadFile(log);
    ASSERT_FALSE(outcome.timed_out)
        << "worker killed after " << kWorkerTimeout.count() << " s; output:\n"
        << output;
    ASSERT_TRUE(WIFEXITED(outcome.status))
        << "worker died by signal " << WTERMSIG(outcome.status) << "; output:\n"
        << output;
    EXPECT_EQ(WEXITSTATUS(outcome.status), 0) << output;
    EXPECT_EQ(output.find("FAIL"), std::string::npos) << output;
    EXPECT_NE(output.find("PASS finalize"), std::string::npos) << output;
}

TEST_F(CApiTest, NullDescriptorFailsWithNullptr) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    char buffer[8] = {};

    int rc = c_fam_get_blocking(fam_, buffer, nullptr, 0, sizeof buffer);

    EXPECT_LT(rc, 0);
    EXPECT_EQ(rc, -openfam::FAM_ERR_NULLPTR);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_NULLPTR);
    EXPECT_STRNE(c_fam_error_msg(), "");
}

TEST_F(CApiTest, FetchOnNullDescriptorReturnsZeroAndSetsNullptr) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());

    uint64_t value = c_fam_fetch_uint64(fam_, nullptr, 0);

    EXPECT_EQ(value, 0u);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_NULLPTR);
}

TEST_F(CApiTest, NullHandleFailsWithNullptrNamingTheCall) {
    char buffer[8] = {};

    int rc = c_fam_put_blocking(nullptr, buffer, nullptr, 0, sizeof buffer);

    EXPECT_EQ(rc, -openfam::FAM_ERR_NULLPTR);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_NULLPTR);
    EXPECT_NE(std::string(c_fam_error_msg()).find("c_fam_put_blocking"), std::string::npos)
        << c_fam_error_msg();
}

TEST_F(CApiTest, NullHandleGivesNullPointerResult) {
    EXPECT_EQ(c_fam_lookup_region(nullptr, "anything"), nullptr);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_NULLPTR);
}

TEST_F(CApiTest, CallBeforeInitializeFailsWithInvalidOp) {
    ASSERT_NO_FATAL_FAILURE(CreateFam());

    EXPECT_EQ(c_fam_lookup_region(fam_, "anything"), nullptr);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_INVALIDOP);
}

TEST_F(CApiTest, SecondInitializeFailsWithInvalidOp) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());

    EXPECT_EQ(c_fam_initialize(fam_, "default", nullptr), -openfam::FAM_ERR_INVALIDOP);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_INVALIDOP);
}

TEST_F(CApiTest, CallAfterFinalizeFailsWithInvalidOp) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    ASSERT_EQ(c_fam_finalize(fam_, "default"), 0) << c_fam_error_msg();

    EXPECT_EQ(c_fam_create_region(fam_, "after_finalize", 1 << 20, 0777, nullptr), nullptr);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_INVALIDOP);
    EXPECT_EQ(c_fam_barrier_all(fam_), -openfam::FAM_ERR_INVALIDOP);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_INVALIDOP);
}

TEST_F(CApiTest, GetOptionPeIdIsIntZero) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());

    const int *pe_id = static_cast<const int *>(c_fam_get_option(fam_, "PE_ID"));

    ASSERT_NE(pe_id, nullptr) << c_fam_error_msg();
    EXPECT_EQ(*pe_id, 0);
    EXPECT_EQ(c_fam_error(), 0);
    free(const_cast<int *>(pe_id));
}

TEST_F(CApiTest, GetOptionUnknownNameFailsWithNotFound) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());

    EXPECT_EQ(c_fam_get_option(fam_, "NO_SUCH_OPTION"), nullptr);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_NOTFOUND);
}

TEST_F(CApiTest, LookupOfMissingRegionFailsWithNotFoundAndMessage) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());

    EXPECT_EQ(c_fam_lookup_region(fam_, "no_such_region"), nullptr);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_NOTFOUND);
    std::string message = c_fam_error_msg();
    EXPECT_NE(message.find("fam_lookup_region"), std::string::npos) << message;
    EXPECT_NE(message.find("no_such_region"), std::string::npos) << message;
}

TEST_F(CApiTest, SuccessfulCallClearsLastError) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    ASSERT_EQ(c_fam_lookup_region(fam_, "no_such_region"), nullptr);
    ASSERT_NE(c_fam_error(), 0);

    EXPECT_EQ(c_fam_barrier_all(fam_), 0);
    EXPECT_EQ(c_fam_error(), 0);
    EXPECT_STREQ(c_fam_error_msg(), "");
}

TEST_F(CApiTest, LastErrorBelongsToTheCallingThread) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    ASSERT_EQ(c_fam_lookup_region(fam_, "no_such_region"), nullptr);
    ASSERT_EQ(c_fam_error(), openfam::FAM_ERR_NOTFOUND);

    int other_before = -1;
    int other_after = -1;
    std::thread other([&] {
        other_before = c_fam_error();
        c_fam_put_blocking(nullptr, nullptr, nullptr, 0, 0);
        other_after = c_fam_error();
    });
    other.join();

    EXPECT_EQ(other_before, 0);
    EXPECT_EQ(other_after, openfam::FAM_ERR_NULLPTR);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_NOTFOUND);
}

TEST_F(CApiTest, ContextHandleWorksAsFamHandleForDataPath) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    c_fam_region_desc *region = c_fam_create_region(fam_, "ctx_region", 1 << 20, 0777, nullptr);
    ASSERT_NE(region, nullptr) << c_fam_error_msg();
    c_fam_desc *item = c_fam_allocate_named(fam_, "ctx_item", 4096, 0777, region);
    ASSERT_NE(item, nullptr) << c_fam_error_msg();
    c_fam_context *context = c_fam_context_open(fam_);
    ASSERT_NE(context, nullptr) << c_fam_error_msg();

    EXPECT_EQ(c_fam_set_uint64(context, item, 64, 41), 0) << c_fam_error_msg();
    EXPECT_EQ(c_fam_fetch_add_uint64(context, item, 64, 1), 41u);
    EXPECT_EQ(c_fam_quiet(context), 0);
    EXPECT_EQ(c_fam_fetch_uint64(fam_, item, 64), 42u);

    EXPECT_EQ(c_fam_context_close(fam_, context), 0) << c_fam_error_msg();
    c_fam_free_desc(item);
    c_fam_free_region_desc(region);
}

TEST_F(CApiTest, ControlCallOnContextFailsWithInvalidOp) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    c_fam_context *context = c_fam_context_open(fam_);
    ASSERT_NE(context, nullptr) << c_fam_error_msg();

    EXPECT_EQ(c_fam_lookup_region(context, "anything"), nullptr);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_INVALIDOP);

    EXPECT_EQ(c_fam_context_close(fam_, context), 0) << c_fam_error_msg();
}

TEST_F(CApiTest, ContextCloseOfNonContextFailsWithInvalid) {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());

    EXPECT_EQ(c_fam_context_close(fam_, fam_), -openfam::FAM_ERR_INVALID);
    EXPECT_EQ(c_fam_error(), openfam::FAM_ERR_INVALID);
    EXPECT_EQ(c_fam_barrier_all(fam_), 0);  // the object is untouched
}

TEST(CApiErrorCodes, CConstantsAreTheFamErrorValues) {
    EXPECT_EQ(C_FAM_NO_ERROR, openfam::FAM_NO_ERROR);
    EXPECT_EQ(C_FAM_ERR_NOPERM, openfam::FAM_ERR_NOPERM);
    EXPECT_EQ(C_FAM_ERR_NOTFOUND, openfam::FAM_ERR_NOTFOUND);
    EXPECT_EQ(C_FAM_ERR_OUTOFRANGE, openfam::FAM_ERR_OUTOFRANGE);
    EXPECT_EQ(C_FAM_ERR_NULLPTR, openfam::FAM_ERR_NULLPTR);
    EXPECT_EQ(C_FAM_ERR_INVALIDOP, openfam::FAM_ERR_INVALIDOP);
    EXPECT_EQ(C_FAM_BACKUP_NOTFOUND, openfam::FAM_BACKUP_NOTFOUND);
    EXPECT_EQ(C_FAM_ERR_NOT_PWR_TWO, openfam::FAM_ERR_NOT_PWR_TWO);
}

}  // namespace
