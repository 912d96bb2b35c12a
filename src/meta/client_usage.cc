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

// Clients remembered at most, and the longest name kept: reports from callers that invent names
// cannot grow the service's memory without bound (beyond these, they are counted, not named).
constexpr size_t kMostClients = 1 << 16;
constexpr size_t kLongestName = 128;

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
    std::string name = report.client().substr(0, kLongestName);
    if (report.last()) {
        clients_.erase(name);
    } else if (clients_.size() < kMostClients || clients_.count(name)) {
        clients_[name] = now;
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
