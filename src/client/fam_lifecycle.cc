// FamImpl: life cycle, options, contexts and ordering.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "client/fam_impl.h"

namespace fampool {
namespace {

const char *const kOptionNames[] = {"VERSION",
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
                                    "FAMPOOL_HOME",
                                    "FAMPOOL_ARCHIVE_DIR"};

// Failures of non-blocking calls kept word for word until Quiet; more are counted.
constexpr size_t kDeferredKept = 16;

// The option names as OpenFAM hands them out: one malloc'd block holding the NULL-terminated
// array and, after it, the names, so that the caller's one free() releases all of it.
const char **NewOptionList() {
    size_t count = std::size(kOptionNames), bytes = (count + 1) * sizeof(char *);
    for (const char *name : kOptionNames) bytes += std::strlen(name) + 1;
    auto **list = static_cast<const char **>(std::malloc(bytes));
    if (!list) Fail(openfam::FAM_ERR_MEMORY, "out of memory for the option list");
    char *text = reinterpret_cast<char *>(list + count + 1);
    for (size_t i = 0; i < count; ++i) {
        size_t length = std::strlen(kOptionNames[i]) + 1;
        std::memcpy(text, kOptionNames[i], length);
        list[i] = text;
        text += length;
    }
    list[count] = nullptr;
    return list;
}

template <typename T>
const void *Copied(const T &value) {
    void *copy = std::malloc(sizeof(T));
    if (!copy) Fail(openfam::FAM_ERR_MEMORY, "out of memory");
    std::memcpy(copy, &value, sizeof(T));
    return copy;
}

const void *Copied(const std::string &value) {
    char *copy = strdup(value.c_str());
    if (!copy) Fail(openfam::FAM_ERR_MEMORY, "out of memory");
    return copy;
}

}  // namespace

FamImpl::~FamImpl() {
    // A context closes its own operations; a fam object dropped without fam_finalize is
    // finalized here, quietly.
    if (!parent_ && session_ && !session_->finalized) {
        try {
            Finalize(nullptr);
        } catch (...) {
        }
    }
    // A closed context's queued element operations still reach the memory servers.
    if (parent_ && session_ && !session_->finalized) queues_.ShipAll("fam_context_close");
    if (data_.channel()) data_.channel()->Drain();
}

Session &FamImpl::Live() { return LiveSession(session_); }

Session &FamImpl::Control() {
    Session &session = Live();
    if (parent_) {
        Fail(openfam::FAM_ERR_INVALIDOP,
             "not allowed on a fam_context (contexts take data-path, atomic and ordering calls "
             "only; use the fam object)");
    }
    return session;
}

void FamImpl::Initialize(const char * /*group*/, Fam_Options *options) {
    if (parent_) Fail(openfam::FAM_ERR_INVALIDOP, "not allowed on a fam_context");
    if (session_) {
        Fail(openfam::FAM_ERR_INVALIDOP, "{}",
             session_->finalized ? "fam object was finalized; create a new one"
                                 : "fam object is already initialized");
    }
    session_ = Session::Open(LoadConfig(options));
    data_.Open(session_);
}

void FamImpl::Finalize(const char * /*group*/) {
    // One finalize at a time; finalizing a finalized object does nothing: OpenFAM programs
    // call fam_finalize again (in error paths and clean-up) and expect it to return.
    std::lock_guard<std::mutex> finalizing(finalize_mutex_);
    if (!parent_ && session_ && session_->finalized.load(std::memory_order_acquire)) return;
    Session &session = Control();
    {
        // Queued element operations are shipped, not dropped; then everything is waited for.
        std::lock_guard<std::mutex> lock(contexts_mutex_);
        for (openfam::fam_context *context : contexts_) {
            context->impl()->queues_.ShipAll("fam_finalize");
            context->impl()->data_.channel()->Drain();
        }
    }
    queues_.ShipAll("fam_finalize");
    data_.channel()->Drain();
    session.finalized.store(true, std::memory_order_release);
    if (session.usage) session.usage->Stop();  // its last report, while the session is open
    session.metadata->Sync();
    // The sessions this process opened end now: their tokens are refused from here on, not
    // an hour after the last call (docs/security.md).
    session.metadata->EndSession();
    for (auto &server : session.servers) server->EndSession();
    session.runtime.reset();
}

void FamImpl::Abort(int status) {
    if (!session_ && !parent_) {
        // Never initialized, or fam_initialize failed: OpenFAM programs call fam_abort in the
        // catch block around it. End the process with the status, adding nothing to what the
        // program printed of the first error (there is no job to tell).
        std::fflush(nullptr);
        std::_Exit(status);
    }
    Session &session = Control();  // a context's fam_abort throws; it does not end the job
    session.runtime->Abort(status);
    std::_Exit(status);  // Runtime::Abort does not return; this keeps the promise visible
}

void FamImpl::Barrier() {
    Session &session = Control();
    // As shmem_barrier_all does: this PE's operations on the object (non-blocking puts,
    // non-fetching atomics) are complete before the others pass. Their errors wait for
    // fam_quiet.
    std::exception_ptr drain_failure;
    try {
        data_.channel()->Drain();
    } catch (...) {
        drain_failure = std::current_exception();  // the other PEs still need this one
    }
    session.runtime->Barrier();
    if (drain_failure) std::rethrow_exception(drain_failure);
}

const char **FamImpl::ListOptions() {
    Control();
    return NewOptionList();
}

const void *FamImpl::GetOption(const char *name) {
    Session &session = Control();
    if (!name) Fail(openfam::FAM_ERR_NULLPTR, "option name is NULL");
    const Config &c = session.config;
    std::string option = name;
    if (option == "VERSION") return Copied(std::string("0.1.0"));
    if (option == "DEFAULT_REGION_NAME") return Copied(c.default_region_name);
    if (option == "CIS_SERVER") return Copied(c.cis_server);
    if (option == "GRPC_PORT") return Copied(c.grpc_port);
    if (option == "LIBFABRIC_PROVIDER") return Copied(c.libfabric_provider);
    if (option == "FAM_THREAD_MODEL") return Copied(c.thread_model);
    if (option == "CIS_INTERFACE_TYPE") return Copied(c.cis_interface_type);
    if (option == "OPENFAM_MODEL") return Copied(c.model);
    if (option == "FAM_CONTEXT_MODEL") return Copied(c.context_model);
    if (option == "PE_COUNT") return Copied(session.runtime->pe_count());
    if (option == "PE_ID") return Copied(session.runtime->pe_id());
    if (option == "RUNTIME") return Copied(std::string(session.runtime->name()));
    if (option == "NUM_CONSUMER") return Copied(c.num_consumer);
    if (option == "FAM_DEFAULT_MEMORY_TYPE") return Copied(c.default_memory_type);
    if (option == "IF_DEVICE") return Copied(c.if_device);
    if (option == "LOC_BUF_ADDR") return Copied(c.local_buf_addr);
    if (option == "LOC_BUF_SIZE") return Copied(c.local_buf_size);
    if (option == "FAMPOOL_HOME") return Copied(c.data_dir);
    if (option == "FAMPOOL_ARCHIVE_DIR") return Copied(c.archive_dir);
    Fail(openfam::FAM_ERR_NOTFOUND, "unknown option \"{}\" (fam_list_options gives the names)",
         option);
}

openfam::fam_context *FamImpl::ContextOpen() {
    Control();
    auto *context = new openfam::fam_context(new FamImpl(session_, this));
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    contexts_.insert(context);
    return context;
}

void FamImpl::ContextClose(openfam::fam_context *context) {
    if (!session_) Fail(openfam::FAM_ERR_INVALIDOP, "fam object is not initialized");
    if (parent_) Fail(openfam::FAM_ERR_INVALIDOP, "not allowed on a fam_context");
    if (!context) Fail(openfam::FAM_ERR_NULLPTR, "context is NULL");
    {
        std::lock_guard<std::mutex> lock(contexts_mutex_);
        if (!contexts_.erase(context)) {
            Fail(openfam::FAM_ERR_INVALID, "context was not opened by this fam object");
        }
    }
    delete context;  // drains its queue
}

void FamImpl::Fence() {
    Live();
    data_.channel()->Fence();
}

void FamImpl::Quiet() {
    Live();
    std::vector<Failure> issued;
    uint64_t dropped = 0;
    if (has_deferred_.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(deferred_mutex_);
        issued.swap(deferred_);
        std::swap(dropped, deferred_dropped_);
        has_deferred_.store(false, std::memory_order_release);
    }
    if (issued.empty()) return data_.channel()->Quiet();
    // Every operation is waited for; what failed at issue comes first in the report.
    uint64_t more = issued.size() - 1 + dropped;
    try {
        data_.channel()->Quiet();
    } catch (const Failure &) {
        ++more;
    }
    const Failure &first = issued.front();
    std::string message = first.fam_error_msg();
    if (more > 0) message += fmt::format(" (and {} more failed operations)", more);
    throw Failure(static_cast<Fam_Error>(first.fam_error()), message);
}

bool FamImpl::Defer(const char *call, const Failure &failure) {
    if (failure.fam_error() == openfam::FAM_ERR_NULLPTR || !session_ ||
        session_->finalized.load(std::memory_order_acquire)) {
        return false;
    }
    std::lock_guard<std::mutex> lock(deferred_mutex_);
    if (deferred_.size() < kDeferredKept) {
        deferred_.emplace_back(static_cast<Fam_Error>(failure.fam_error()),
                               std::string(call) + ": " + failure.fam_error_msg());
    } else {
        ++deferred_dropped_;
    }
    has_deferred_.store(true, std::memory_order_release);
    return true;
}

uint64_t FamImpl::Progress() {
    Live();
    return data_.channel()->Pending();
}

}  // namespace fampool
