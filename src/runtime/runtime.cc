#include "runtime/runtime.h"

#include <pmix.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

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
            Fail(openfam::FAM_ERR_PMI, "PMIx_Init failed: {} (runtime PMIX needs a PMIx launcher "
                 "such as mpirun or srun --mpi=pmix)", PMIx_Error_string(rc));
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

}  // namespace

std::unique_ptr<Runtime> MakeRuntime(const std::string &kind) {
    if (kind == "PMIX") return std::make_unique<PmixRuntime>();
    if (kind == "NONE") return std::make_unique<NoRuntime>();
    Fail(openfam::FAM_ERR_INVALID,
         "runtime {} is not available; use PMIX (mpirun, srun --mpi=pmix) or NONE", kind);
}

}  // namespace fampool
