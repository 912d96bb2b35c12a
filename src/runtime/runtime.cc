#include "runtime/runtime.h"

#include <dlfcn.h>
#include <pmix.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "common/error.h"

namespace fampool {
namespace {

class NoRuntime : public Runtime {
  public:
    const char *name() const override { return "NONE"; }
    int pe_id() const override { return 0; }
    int pe_count() const override { return 1; }
    void Barrier() override {}
    [[noreturn]] void Abort(int status) override {
        std::fflush(nullptr);
        _exit(status);
    }
};

// PMIx client: the rank and job size come from the PMIx server of the launcher; the barrier is
// a fence over the whole namespace; abort asks the launcher to end every PE.
class PmixRuntime : public Runtime {
  public:
    PmixRuntime() {
        pmix_status_t rc = PMIx_Init(&self_, nullptr, 0);
        if (rc != PMIX_SUCCESS) {
            Fail(openfam::FAM_ERR_PMI,
                 "PMIx_Init failed: {} (runtime PMIX needs a PMIx launcher "
                 "such as mpirun or srun --mpi=pmix)",
                 PMIx_Error_string(rc));
        }
        PMIX_LOAD_PROCID(&job_, self_.nspace, PMIX_RANK_WILDCARD);
        pmix_value_t *value = nullptr;
        rc = PMIx_Get(&job_, PMIX_JOB_SIZE, nullptr, 0, &value);
        if (rc != PMIX_SUCCESS || !value) {
            PMIx_Finalize(nullptr, 0);
            Fail(openfam::FAM_ERR_PMI, "PMIx_Get(PMIX_JOB_SIZE) failed: {}", PMIx_Error_string(rc));
        }
        size_ = value->type == PMIX_UINT32 ? static_cast<int>(value->data.uint32)
                                           : static_cast<int>(value->data.integer);
        PMIX_VALUE_RELEASE(value);
    }
    ~PmixRuntime() override { PMIx_Finalize(nullptr, 0); }

    const char *name() const override { return "PMIX"; }
    int pe_id() const override { return static_cast<int>(self_.rank); }
    int pe_count() const override { return size_; }
    void Barrier() override {
        pmix_status_t rc = PMIx_Fence(&job_, 1, nullptr, 0);
        if (rc != PMIX_SUCCESS) {
            Fail(openfam::FAM_ERR_PMI, "PMIx_Fence failed: {}", PMIx_Error_string(rc));
        }
    }
    [[noreturn]] void Abort(int status) override {
        std::fflush(nullptr);
        char message[64];
        std::snprintf(message, sizeof message, "fam_abort(%d) from PE %d", status, pe_id());
        PMIx_Abort(status, message, &job_, 1);
        _exit(status);  // if the launcher has not ended us yet
    }

  private:
    pmix_proc_t self_{};
    pmix_proc_t job_{};
    int size_ = 1;
};

// The process's PMI2 client, shared by its fam objects. The library is loaded when PMI2 is
// first chosen, not linked: it comes with the site's launcher (SLURM's libpmi2.so.0; Debian:
// libpmi2-0), and programs that never use PMI2 do not need it; FAMPOOL_PMI2_LIBRARY names
// another one. PMI2 is initialized once per process (PMI2_Finalize closes the process
// manager's socket for good), and an MPI library in the same process may have initialized it
// first: fampool then uses it as it is and leaves finalizing to MPI.
class Pmi2Client {
  public:
    // Initializes PMI2 for one more user (the first one initializes it, unless MPI did);
    // throws Failure(FAM_ERR_PMI) when it cannot.
    static void Acquire(int *rank, int *size) {
        Pmi2Client &client = Instance();
        std::lock_guard<std::mutex> lock(client.mutex_);
        client.Load();
        if (client.users_ == 0) client.Start();
        ++client.users_;
        *rank = client.rank_;
        *size = client.size_;
    }
    // The last user finalizes PMI2, when fampool initialized it.
    static void Release() {
        Pmi2Client &client = Instance();
        std::lock_guard<std::mutex> lock(client.mutex_);
        if (--client.users_ > 0 || !client.ours_) return;
        client.finalize_();
        client.ours_ = false;
        client.finalized_ = true;
    }
    static int Fence() { return Instance().fence_(); }
    // Asks the process manager to end the job; this process ends with `status` (PMI2_Abort
    // itself calls exit(1), which would run static destructors under live fabric threads).
    [[noreturn]] static void Abort(int status, const char *message) {
        static int saved_status;
        saved_status = status;
        std::atexit([] { _exit(saved_status); });  // runs first: atexit handlers run in reverse
        Instance().abort_(1, message);             // 1: the whole job
        _exit(status);                             // if the process manager has not ended us
    }

  private:
    static Pmi2Client &Instance() {
        static Pmi2Client client;
        return client;
    }

    void Load() {
        if (library_) return;
        const char *chosen = std::getenv("FAMPOOL_PMI2_LIBRARY");
        const char *wanted = chosen && *chosen ? chosen : "libpmi2.so.0";
        void *library = dlopen(wanted, RTLD_NOW | RTLD_LOCAL);
        std::string why = library ? "" : dlerror();
        if (!library && wanted != chosen) library = dlopen("libpmi2.so", RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            Fail(openfam::FAM_ERR_PMI,
                 "runtime PMI2 needs the PMI2 library of the launcher: cannot load {} ({}; "
                 "Debian: apt-get install libpmi2-0, or set FAMPOOL_PMI2_LIBRARY)",
                 wanted, why);
        }
        try {
            init_ = Symbol<int (*)(int *, int *, int *, int *)>(library, "PMI2_Init");
            initialized_ = Symbol<int (*)()>(library, "PMI2_Initialized");
            finalize_ = Symbol<int (*)()>(library, "PMI2_Finalize");
            abort_ = Symbol<int (*)(int, const char *)>(library, "PMI2_Abort");
            fence_ = Symbol<int (*)()>(library, "PMI2_KVS_Fence");
        } catch (...) {
            dlclose(library);
            throw;
        }
        library_ = library;  // stays loaded: later fam objects use it
    }

    void Start() {
        if (finalized_) {
            Fail(openfam::FAM_ERR_PMI,
                 "PMI2 was finalized in this process by an earlier fam_finalize; PMI2 allows "
                 "one initialization per process (keep one fam object for the job)");
        }
        if (initialized_()) {  // the program's MPI library initialized it
            const char *rank = std::getenv("PMI_RANK"), *size = std::getenv("PMI_SIZE");
            if (!rank || !size) {
                Fail(openfam::FAM_ERR_PMI,
                     "PMI2 was initialized before fam_initialize, and "
                     "PMI_RANK and PMI_SIZE do not say this PE's rank and the job's size");
            }
            rank_ = std::atoi(rank);
            size_ = std::atoi(size);
            return;
        }
        int spawned = 0, appnum = 0;
        int rc = init_(&spawned, &size_, &rank_, &appnum);
        if (rc != 0) {
            Fail(openfam::FAM_ERR_PMI,
                 "PMI2_Init failed (error {}): runtime PMI2 needs a PMI2 launcher such as srun "
                 "--mpi=pmi2 (PMI_FD or PMI_PORT {})",
                 rc, std::getenv("PMI_FD") || std::getenv("PMI_PORT") ? "is set" : "is not set");
        }
        ours_ = true;
    }

    template <typename Function>
    static Function Symbol(void *library, const char *name) {
        void *address = dlsym(library, name);
        if (!address) {
            Fail(openfam::FAM_ERR_PMI, "the PMI2 library has no {}: {}", name, dlerror());
        }
        return reinterpret_cast<Function>(address);
    }

    std::mutex mutex_;
    void *library_ = nullptr;
    int (*init_)(int *, int *, int *, int *) = nullptr;
    int (*initialized_)() = nullptr;
    int (*finalize_)() = nullptr;
    int (*abort_)(int, const char *) = nullptr;
    int (*fence_)() = nullptr;
    int users_ = 0;
    bool ours_ = false;       // fampool initialized PMI2, and finalizes it
    bool finalized_ = false;  // by fampool: it cannot start again in this process
    int rank_ = 0, size_ = 1;
};

// PMI2 (srun --mpi=pmi2, MPICH's Hydra): rank and size from PMI2_Init, the barrier a KVS
// fence, abort through the process manager.
class Pmi2Runtime : public Runtime {
  public:
    Pmi2Runtime() { Pmi2Client::Acquire(&rank_, &size_); }
    ~Pmi2Runtime() override { Pmi2Client::Release(); }

    const char *name() const override { return "PMI2"; }
    int pe_id() const override { return rank_; }
    int pe_count() const override { return size_; }
    void Barrier() override {
        // A job of one (PMI2's singleton, started without a process manager) has no one to
        // wait for, and no process manager to fence with.
        if (size_ == 1) return;
        int rc = Pmi2Client::Fence();
        if (rc != 0) Fail(openfam::FAM_ERR_PMI, "PMI2_KVS_Fence failed (error {})", rc);
    }
    [[noreturn]] void Abort(int status) override {
        std::fflush(nullptr);
        char message[64];
        std::snprintf(message, sizeof message, "fam_abort(%d) from PE %d", status, rank_);
        Pmi2Client::Abort(status, message);
    }

  private:
    int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Runtime> MakeRuntime(const std::string &kind) {
    if (kind == "PMIX") return std::make_unique<PmixRuntime>();
    if (kind == "PMI2") return std::make_unique<Pmi2Runtime>();
    if (kind == "NONE") return std::make_unique<NoRuntime>();
    Fail(openfam::FAM_ERR_INVALID,
         "runtime {} is not available; use PMIX (mpirun, srun --mpi=pmix), PMI2 (srun "
         "--mpi=pmi2) or NONE",
         kind);
}

}  // namespace fampool
