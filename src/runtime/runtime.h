// The launch runtime of a PE: its rank and the job size, the job-wide barrier and abort.
#ifndef FAMPOOL_RUNTIME_RUNTIME_H_
#define FAMPOOL_RUNTIME_RUNTIME_H_

#include <memory>
#include <string>

namespace fampool {

class Runtime {
  public:
    virtual ~Runtime() = default;
    virtual const char *name() const = 0;
    virtual int pe_id() const = 0;
    virtual int pe_count() const = 0;
    virtual void Barrier() = 0;
    [[noreturn]] virtual void Abort(int status) = 0;
};

// "NONE" (one PE), "PMIX" (launched by mpirun, srun --mpi=pmix or prterun) or "PMI2" (srun
// --mpi=pmi2, MPICH's mpiexec). Throws Failure(FAM_ERR_PMI) when the runtime cannot be
// initialized.
std::unique_ptr<Runtime> MakeRuntime(const std::string &kind);

}  // namespace fampool

#endif  // FAMPOOL_RUNTIME_RUNTIME_H_
