// fampool-server's Prometheus endpoint: GET /metrics answers with the process's metrics
// (common/metrics.h) in the text exposition format, served by cpp-httplib on a thread of its
// own; every gRPC call the process answers is counted and timed by an interceptor.
#ifndef FAMPOOL_TOOLS_SERVER_METRICS_ENDPOINT_H_
#define FAMPOOL_TOOLS_SERVER_METRICS_ENDPOINT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace fampool {

class MetricsEndpoint {
  public:
    // Listens on host:port (a port of 0: none). Throws Failure(FAM_ERR_RPC) naming the address
    // when it cannot (port taken, not an address of this host).
    MetricsEndpoint(const std::string &host, int port);
    ~MetricsEndpoint();  // stops listening and waits for the thread
    MetricsEndpoint(const MetricsEndpoint &) = delete;
    MetricsEndpoint &operator=(const MetricsEndpoint &) = delete;

    std::string address() const { return address_; }

  private:
    std::unique_ptr<httplib::Server> server_;
    std::string address_;
    std::thread thread_;
};

// Adds the interceptor that counts and times every call of a server `builder` builds
// (fampool_calls_total{transport="grpc"}, fampool_call_duration_seconds).
void CountCalls(grpc::ServerBuilder &builder);

}  // namespace fampool

#endif  // FAMPOOL_TOOLS_SERVER_METRICS_ENDPOINT_H_
