// The launch runtimes. PEs launched by mpirun: the runtime is PMIx; PEs launched by a PMI2
// process manager, as srun --mpi=pmi2 launches them (tests/support/pmi2_launch.py): the runtime
// is PMI2. Either way PE_ID and PE_COUNT come from it, fam_barrier_all spans the job, a
// Fam_Global_Descriptor passed between PEs is usable, and fam_abort ends the whole job. Each
// test runs tests/workers/pmix_worker as 4 PEs with a 120 s limit; on timeout the launcher is
// stopped (and through it its PEs), and any PE left behind is found by its environment and
// killed by PID.
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "process_util.h"
#include "test_support.h"

namespace fampool_test {
namespace {

constexpr int kPes = 4;
constexpr double kTimeoutSeconds = 120;
constexpr uint64_t kSliceSize = 64 * 1024;  // as in pmix_worker.cc

// The bytes PE `pe` writes at offset i of its slice (pmix_worker.cc writes the same).
uint8_t SliceByte(int pe, uint64_t i) {
    return static_cast<uint8_t>((i * 131 + static_cast<uint64_t>(pe) * 71 + (i >> 8)) & 0xFF);
}

class PmixTest : public FamTest {
  protected:
    // The job creates what the test later checks; the test's own fam comes afterwards.
    bool AutoInitialize() const override { return false; }

    // The launcher of the PEs: mpirun (PMIx), or the PMI2 process manager of the tests.
    virtual bool UsePmi2() const { return false; }

    // Runs pmix_worker `mode` as kPes PEs (`mpirun_options` go before the program); fails the
    // test for every PE left running.
    LauncherResult RunJob(const std::string &mode,
                          const std::vector<std::string> &mpirun_options = {}) {
        std::vector<std::string> argv;
        if (UsePmi2()) {
            // Its PEs get this process's environment (FAMPOOL_HOME, FAMPOOL_CONFIG...).
            argv = {"python3",   std::string(FAMPOOL_TEST_SUPPORT_DIR) + "/pmi2_launch.py",
                    "-n",        std::to_string(kPes),
                    "--timeout", std::to_string(kTimeoutSeconds - 10)};
        } else {
            argv = {"mpirun",
                    "-n",
                    std::to_string(kPes),
                    "--allow-run-as-root",
                    "--oversubscribe",
                    "-x",
                    "FAMPOOL_HOME=" + home_dir(),
                    "-x",
                    "FAMPOOL_SHM_DIR=" + shm_dir()};
            if (const char *config = std::getenv("FAMPOOL_CONFIG")) {  // a test cluster
                argv.push_back("-x");
                argv.push_back(std::string("FAMPOOL_CONFIG=") + config);
            }
        }
        argv.insert(argv.end(), mpirun_options.begin(), mpirun_options.end());
        argv.push_back(WorkerPath("pmix_worker"));
        argv.push_back(mode);
        LauncherResult result = RunLauncher(argv, {}, kTimeoutSeconds);
        printf("mpirun (%s) ended with status %d after %.1f s%s; output:\n%s\n", mode.c_str(),
               result.exit_code, result.seconds, result.timed_out ? " (timed out)" : "",
               result.output.c_str());
        StopStrayPes();
        return result;
    }

    // Runs pmix_worker ok as kPes PEs, then checks what the job left in FAM from a process
    // outside it (this test's own fam, initialized here).
    void RunSharingJob() {
        LauncherResult job = RunJob("ok");
        EXPECT_FALSE(job.timed_out);
        EXPECT_EQ(job.exit_code, 0);
        EXPECT_NE(job.output.find("pmix_worker: OK 4 PEs"), std::string::npos)
            << "PE 0 did not report success";
        ASSERT_NO_FATAL_FAILURE(CheckWhatTheJobLeft());
    }
    void CheckWhatTheJobLeft();

    // PEs carry this test's FAMPOOL_HOME; any still alive once mpirun is gone were left behind.
    void StopStrayPes() {
        std::vector<pid_t> stray = PidsWithEnvironment("FAMPOOL_HOME=" + home_dir());
        if (cluster()) {  // the test cluster's servers carry it too, and stay
            for (pid_t server : cluster()->pids()) {
                stray.erase(std::remove(stray.begin(), stray.end(), server), stray.end());
            }
        }
        KillPids(stray);
        EXPECT_TRUE(stray.empty()) << stray.size() << " process(es) outlived mpirun";
    }
};

TEST_F(PmixTest, FourPesShareAnItemThroughBarriersAndAGlobalDescriptor) {
    ASSERT_NO_FATAL_FAILURE(RunSharingJob());
}

// The same job on the memory-server model: three memory servers, items striped over them in
// 4 KiB blocks; the PEs reach them over the fabric.
class ClusterPmixTest : public PmixTest {
  protected:
    void PrepareEnvironment() override { SetEnv("FAMPOOL_TEST_CLUSTER", "3:4096"); }
};

TEST_F(ClusterPmixTest, FourPesShareAStripedItemOnThreeMemoryServers) {
    ASSERT_NE(std::getenv("FAMPOOL_CONFIG"), nullptr) << "no test cluster";
    ASSERT_NO_FATAL_FAILURE(RunSharingJob());
    // The item really is striped over the three servers.
    std::unique_ptr<Fam_Descriptor> data(fam()->fam_lookup("data", "pmix_region"));
    Fam_Stat stat{};
    fam()->fam_stat(data.get(), &stat);
    EXPECT_EQ(stat.num_memservers, 3u);
    EXPECT_EQ(stat.interleaveSize, 4096u);
}

void PmixTest::CheckWhatTheJobLeft() {
    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    CaughtError caught = CatchFamError([&] {
        std::unique_ptr<Fam_Descriptor> counter(fam()->fam_lookup("counter", "pmix_region"));
        EXPECT_EQ(fam()->fam_fetch_uint64(counter.get(), 0), uint64_t{kPes});
        std::unique_ptr<Fam_Descriptor> data(fam()->fam_lookup("data", "pmix_region"));
        ASSERT_EQ(data->get_size(), kSliceSize * kPes);
        std::vector<uint8_t> all = GetBytes(data.get(), 0, kSliceSize * kPes);
        for (int pe = 0; pe < kPes; pe++) {
            uint64_t wrong = 0;
            for (uint64_t i = 0; i < kSliceSize; i++) {
                if (all[kSliceSize * pe + i] != SliceByte(pe, i)) wrong++;
            }
            EXPECT_EQ(wrong, 0u) << "bytes wrong in the slice of PE " << pe;
        }
    });
    EXPECT_EQ(caught.code, openfam::FAM_NO_ERROR)
        << FamErrorName(caught.code) << ": " << caught.message;
}

TEST_F(PmixTest, FamAbortFromPeOneEndsTheWholeJobWithNonZeroStatus) {
    // By default mpirun ends the whole job as soon as one PE exits with a non-zero status, so
    // a fam_abort that merely exited would pass. With that policy off, only a real job-wide
    // abort (PMIx_Abort) stops the other PEs: a PE that just exits leaves them running.
    LauncherResult job = RunJob("abort", {"--mca", "orte_abort_on_non_zero_status", "0"});
    EXPECT_FALSE(job.timed_out);
    EXPECT_NE(job.exit_code, 0);
    // The other PEs would sleep 60 s and then report that they survived.
    EXPECT_LT(job.seconds, 50.0) << "the job was not ended by fam_abort";
    EXPECT_EQ(job.output.find("survived fam_abort"), std::string::npos);
    EXPECT_EQ(job.output.find("fam_abort returned"), std::string::npos);
}

TEST_F(PmixTest, WorkerWithoutLauncherIsOnePeWithRuntimeNone) {
    LauncherResult run = RunLauncher(
        {WorkerPath("pmix_worker"), "single"}, {}, kTimeoutSeconds,
        {"PMIX_RANK", "PMIX_NAMESPACE", "PMIX_SERVER_URI2", "PMIX_SERVER_URI21", "PMIX_SERVER_URI3",
         "PMIX_SERVER_URI4", "PMIX_SERVER_URI41", "OMPI_COMM_WORLD_SIZE"});
    printf("pmix_worker single ended with status %d; output:\n%s\n", run.exit_code,
           run.output.c_str());
    EXPECT_FALSE(run.timed_out);
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_NE(run.output.find("pmix_worker: OK 1 PE"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// PMI2: PEs launched the way srun --mpi=pmi2 launches them (tests/support/pmi2_launch.py, a PMI2
// process manager speaking PMI2's wire protocol to SLURM's libpmi2 in each PE).

class Pmi2Test : public PmixTest {
  protected:
    bool UsePmi2() const override { return true; }
};

TEST_F(Pmi2Test, FourPesShareAnItemThroughBarriersAndAGlobalDescriptor) {
    ASSERT_NO_FATAL_FAILURE(RunSharingJob());
}

class ClusterPmi2Test : public Pmi2Test {
  protected:
    void PrepareEnvironment() override { SetEnv("FAMPOOL_TEST_CLUSTER", "3:4096"); }
};

TEST_F(ClusterPmi2Test, FourPesShareAStripedItemOnThreeMemoryServers) {
    ASSERT_NE(std::getenv("FAMPOOL_CONFIG"), nullptr) << "no test cluster";
    ASSERT_NO_FATAL_FAILURE(RunSharingJob());
}

TEST_F(Pmi2Test, FamAbortFromPeOneEndsTheWholeJob) {
    LauncherResult job = RunJob("abort");
    EXPECT_FALSE(job.timed_out);
    EXPECT_NE(job.exit_code, 0);
    EXPECT_LT(job.seconds, 50.0) << "the job was not ended by fam_abort";
    EXPECT_NE(job.output.find("aborted the job: fam_abort(3) from PE 1"), std::string::npos)
        << "the process manager was not asked to end the job";
    EXPECT_EQ(job.output.find("survived fam_abort"), std::string::npos);
    EXPECT_EQ(job.output.find("fam_abort returned"), std::string::npos);
}

// Without a process manager, PMI2 runs the program as a job of one (PMI2's singleton).
TEST_F(Pmi2Test, RuntimePmi2WithoutALauncherIsAJobOfOne) {
    SetEnv("FAMPOOL_RUNTIME", "PMI2");
    ASSERT_NO_FATAL_FAILURE(InitializeFam());
    char *runtime = static_cast<char *>(const_cast<void *>(fam()->fam_get_option("RUNTIME")));
    EXPECT_STREQ(runtime, "PMI2");
    free(runtime);
    int *count = static_cast<int *>(const_cast<void *>(fam()->fam_get_option("PE_COUNT")));
    EXPECT_EQ(*count, 1);
    free(count);
    EXPECT_NO_THROW(fam()->fam_barrier_all());
}

// PMI2_Abort ends the process with exit(1); fam_abort(3) must end it with 3 all the same.
TEST_F(Pmi2Test, FamAbortOfAJobOfOneEndsTheProcessWithItsStatus) {
    LauncherResult run = RunLauncher({WorkerPath("pmix_worker"), "abort-alone"},
                                     {{"FAMPOOL_RUNTIME", "PMI2"}}, kTimeoutSeconds);
    EXPECT_FALSE(run.timed_out);
    EXPECT_EQ(run.exit_code, 3) << run.output;
    EXPECT_EQ(run.output.find("fam_abort returned"), std::string::npos) << run.output;
}

TEST_F(Pmi2Test, MissingPmi2LibraryFailsInitializeNamingIt) {
    // In a process of its own: the PMI2 library, once loaded, serves the whole process.
    LauncherResult run = RunLauncher(
        {WorkerPath("pmix_worker"), "single"},
        {{"FAMPOOL_RUNTIME", "PMI2"}, {"FAMPOOL_PMI2_LIBRARY", "/nonexistent/libpmi2.so.0"}},
        kTimeoutSeconds);
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find("Fam_Exception 12"), std::string::npos) << "FAM_ERR_PMI";
    EXPECT_NE(run.output.find("/nonexistent/libpmi2.so.0"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace fampool_test
