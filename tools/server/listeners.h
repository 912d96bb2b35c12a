// The gRPC services of a fampool-server process, each listening on its address, and kept
// listening. gRPC 1.51's listener accepts nothing again once accept4 failed (EMFILE, when the
// process ran out of descriptors): every new client is refused until the process restarts,
// long after the connections that used the descriptors closed. gRPC logs the failure; the
// process watches its log for it and, once descriptors are free again, starts its listeners
// anew on the same addresses (clients connected then reconnect by themselves).
#ifndef FAMPOOL_TOOLS_SERVER_LISTENERS_H_
#define FAMPOOL_TOOLS_SERVER_LISTENERS_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/tls.h"

namespace fampool {

// How long a connection may take to say it speaks HTTP/2 (its settings), and how long one may
// go without a call, before the service closes it (a client that comes back reconnects by
// itself): connections that never call, from anyone who reaches the port, hold no descriptor
// for long. 128 PEs connecting at once on 2 cores took up to a few seconds to say it.
constexpr std::chrono::milliseconds kHandshakeTimeout(10000);
constexpr std::chrono::milliseconds kIdleConnection(5 * 60 * 1000);

class Listeners {
  public:
    // Takes gRPC's log (printed as before, to stderr) to learn of failed accepts.
    Listeners();
    ~Listeners();
    Listeners(const Listeners &) = delete;
    Listeners &operator=(const Listeners &) = delete;

    // Serves `service` on `address` (host:port). Throws Failure(FAM_ERR_RPC) when the address
    // cannot be listened on.
    void Add(const std::string &address, grpc::Service *service, const TlsSettings &tls);
    // Called about once a second: after a failed accept, once the process holds fewer than
    // its limit less kSpareDescriptors, starts every listener again (it cannot tell which one
    // failed); one that cannot listen yet is tried again at the next call.
    void Tend();
    void Shutdown(std::chrono::system_clock::time_point deadline);

    // Descriptors that must be free before a listener starts again.
    static constexpr size_t kSpareDescriptors = 32;

  private:
    struct Entry {
        std::string address;
        grpc::Service *service;
        TlsSettings tls;
        std::unique_ptr<grpc::Server> server;
    };
    std::vector<Entry> entries_;
};

}  // namespace fampool

#endif  // FAMPOOL_TOOLS_SERVER_LISTENERS_H_
