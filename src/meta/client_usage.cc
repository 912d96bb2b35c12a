// ClientUsage (client_usage.h).
#include "meta/client_usage.h"

namespace fampool {
namespace {

// The kinds a client counts; others are ignored (a label value per kind a caller invents would
// grow the metrics without bound).
bool KnownKind(const std::string &kind) {
    return kind == "get" || kind == "put" || kind == "gather" || kind == "scatter" ||
           kind == "atomic";
}

}  // namespace

void ClientUsage::Add(const rpc::UsageReport &report) {
    for (const rpc::UsageCount &count : report.counts()) {
        if (!KnownKind(count.kind())) continue;
        metrics::Labels labels = {{"kind", count.kind()}};
        metrics::Process()
            .Counter("fampool_client_operations_total",
                     "Data-path operations client processes reported, by kind", labels)
            .Add(count.operations());
        metrics::Process()
            .Counter("fampool_client_bytes_total",
                     "Bytes client processes reported moving on the data path, by kind", labels)
            .Add(count.bytes());
    }
    auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    ForgetIdle(now);
    if (report.last()) {
        clients_.erase(report.client());
    } else {
        clients_[report.client()] = now;
    }
}

size_t ClientUsage::ActiveClients() {
    std::lock_guard<std::mutex> lock(mutex_);
    ForgetIdle(std::chrono::steady_clock::now());
    return clients_.size();
}

void ClientUsage::ForgetIdle(std::chrono::steady_clock::time_point now) {
    for (auto it = clients_.begin(); it != clients_.end();) {
        it = now - it->second > kActiveWithin ? clients_.erase(it) : std::next(it);
    }
}

}  // namespace fampool
