#include "listeners.h"

#include <dirent.h>
#include <grpc/support/log.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/metrics.h"
#include "metrics_endpoint.h"
#include "rpc/convert.h"

namespace fampool {
namespace {

// Set by gRPC's log line for a failed accept, from any of its threads.
std::atomic<bool> accept_failed{false};

void LogGrpc(gpr_log_func_args *args) {
    if (std::strstr(args->message, "Failed accept4") != nullptr) {
        accept_failed.store(true, std::memory_order_relaxed);
    }
    const char *severity = args->severity == GPR_LOG_SEVERITY_ERROR  ? "E"
                           : args->severity == GPR_LOG_SEVERITY_INFO ? "I"
                                                                     : "D";
    std::fprintf(stderr, "%s gRPC %s:%d] %s\n", severity, args->file, args->line, args->message);
}

// Descriptors this process holds now; SIZE_MAX when it cannot tell (it has none to spare for
// the directory, or no /proc).
size_t OpenDescriptors() {
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) return SIZE_MAX;
    size_t count = 0;
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
    return count > 3 ? count - 3 : 0;  // ".", ".." and the directory's own
}

std::unique_ptr<grpc::Server> Serve(const std::string &address, grpc::Service *service,
                                    const TlsSettings &tls) {
    grpc::ServerBuilder builder;
    if (metrics::Enabled()) CountCalls(builder);
    int port = 0;
    builder.AddListeningPort(address, ServerCredentials(tls), &port);
    builder.SetMaxReceiveMessageSize(64 << 20);
    // gRPC binds with SO_REUSEPORT by default: a second server on a taken port would start
    // and share the port's calls with the first instead of failing.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                               static_cast<int>(kHandshakeTimeout.count()));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               static_cast<int>(kIdleConnection.count()));
    builder.RegisterService(service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server || port == 0) {
        Fail(openfam::FAM_ERR_RPC,
             "cannot listen on {} (port taken, or not an address of this host)", address);
    }
    return server;
}

}  // namespace

Listeners::Listeners() { gpr_set_log_function(LogGrpc); }

Listeners::~Listeners() = default;

void Listeners::Add(const std::string &address, grpc::Service *service, const TlsSettings &tls) {
    entries_.push_back({address, service, tls, Serve(address, service, tls)});
}

void Listeners::Tend() {
    if (!accept_failed.load(std::memory_order_relaxed)) return;
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
    size_t open = OpenDescriptors();
    if (open == SIZE_MAX ||
        (limit.rlim_cur != RLIM_INFINITY && open + kSpareDescriptors > limit.rlim_cur)) {
        return;
    }
    accept_failed.store(false, std::memory_order_relaxed);
    for (Entry &entry : entries_) {
        if (entry.server) {
            entry.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
            entry.server.reset();
        }
        try {
            entry.server = Serve(entry.address, entry.service, entry.tls);
            std::printf(
                "fampool-server: gRPC stopped accepting connections on %s (the process ran "
                "out of descriptors); listening again, %zu of %llu descriptors in use\n",
                entry.address.c_str(), open, static_cast<unsigned long long>(limit.rlim_cur));
        } catch (const Failure &e) {
            std::fprintf(stderr, "fampool-server: %s; trying again\n", e.what());
            accept_failed.store(true, std::memory_order_relaxed);
        }
    }
    std::fflush(stdout);
}

void Listeners::Shutdown(std::chrono::system_clock::time_point deadline) {
    for (Entry &entry : entries_) {
        if (entry.server) entry.server->Shutdown(deadline);
    }
}

}  // namespace fampool
