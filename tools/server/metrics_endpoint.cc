// MetricsEndpoint and CountCalls (metrics_endpoint.h).
#include "metrics_endpoint.h"

#include <grpcpp/support/server_interceptor.h>
#include <httplib.h>

#include <chrono>

#include "common/error.h"
#include "common/metrics.h"

namespace fampool {
namespace {

// Scrapes are rare (Prometheus: every 15 s or so; `fampool top`: every second): two threads
// answer them, not httplib's default of one per core and more.
constexpr size_t kScrapeThreads = 2;

// Counts and times one gRPC call: made when the call arrives, it records the status the
// service sends.
class CallCounter : public grpc::experimental::Interceptor {
  public:
    explicit CallCounter(grpc::experimental::ServerRpcInfo *info)
        : method_(info->method()), start_(std::chrono::steady_clock::now()) {}

    void Intercept(grpc::experimental::InterceptorBatchMethods *methods) override {
        using grpc::experimental::InterceptionHookPoints;
        if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
            Record(methods->GetSendStatus().ok());
        }
        methods->Proceed();
    }

  private:
    // method_ is "/fampool.rpc.Metadata/AllocateItem": service Metadata, method AllocateItem.
    void Record(bool ok) {
        std::string service = "unknown", method = method_;
        size_t slash = method_.rfind('/');
        if (slash != std::string::npos && slash > 0) {
            method = method_.substr(slash + 1);
            service = method_.substr(1, slash - 1);
            size_t dot = service.rfind('.');
            if (dot != std::string::npos) service = service.substr(dot + 1);
        }
        double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        metrics::CallsOf("grpc", service, method).Record(ok, seconds);
    }

    std::string method_;
    std::chrono::steady_clock::time_point start_;
};

class CallCounterFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
  public:
    grpc::experimental::Interceptor *CreateServerInterceptor(
        grpc::experimental::ServerRpcInfo *info) override {
        return new CallCounter(info);
    }
};

}  // namespace

MetricsEndpoint::MetricsEndpoint(const std::string &host, int port)
    : server_(std::make_unique<httplib::Server>()) {
    address_ = fmt::format("{}:{}", host, port);
    server_->new_task_queue = [] { return new httplib::ThreadPool(kScrapeThreads); };
    // SO_REUSEADDR, as fampool's other listeners and `fampool up`'s probe of free ports take
    // it, not cpp-httplib's SO_REUSEPORT alone: with that, a port whose earlier connections
    // linger in TIME_WAIT (a memory server's fabric port, stopped a moment before) could not
    // be bound though the probe found it free (bench_smoke: "cannot serve metrics on
    // 127.0.0.1:64464"), and a second endpoint on a port already served would share it
    // without an error.
    server_->set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_->Get("/metrics", [](const httplib::Request &, httplib::Response &response) {
        response.set_content(metrics::Process().Render(),
                             "text/plain; version=0.0.4; charset=utf-8");
    });
    server_->Get("/", [](const httplib::Request &, httplib::Response &response) {
        response.set_content("fampool-server: metrics at /metrics\n", "text/plain");
    });
    if (!server_->bind_to_port(host, port)) {
        Fail(openfam::FAM_ERR_RPC,
             "cannot serve metrics on {} (port taken, or not an address of this host)", address_);
    }
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // cpp-httplib's stop() does nothing before the listening thread runs: a server failing
    // right after this (its roles' start) would wait in the destructor for ever.
    for (int i = 0; i < 2000 && !server_->is_running(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

MetricsEndpoint::~MetricsEndpoint() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
}

void CountCalls(grpc::ServerBuilder &builder) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(std::make_unique<CallCounterFactory>());
    builder.experimental().SetInterceptorCreators(std::move(creators));
}

}  // namespace fampool
