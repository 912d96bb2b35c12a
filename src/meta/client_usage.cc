// ClientUsage (client_usage.h).
#include "meta/client_usage.h"

namespace fampool {
namespace {

// The kinds a client counts, and their counters; other kinds are ignored (a label value per
// kind a caller invents would grow the metrics without bound).
struct KindCounters {
    metrics::Counter *operations, *bytes;
    metrics::Histogram *latency;
};
const KindCounters *CountersOf(const std::string &kind) {
    static const std::map<std::string, KindCounters> *known = [] {
        auto *made = new std::map<std::string, KindCounters>();
        for (const char *name : {"get", "put", "gather", "scatter", "atomic"}) {
            metrics::Labels labels = {{"kind", name}};
            (*made)[name] = {
                &metrics::Process().Counter(
                    "fampool_client_operations_total",
                    "Data-path operations client processes reported, by kind", labels),
                &metrics::Process().Counter(
                    "fampool_client_bytes_total",
                    "Bytes client processes reported moving on the data path, by kind", labels),
                &metrics::Process().Histogram(
                    "fampool_client_operation_duration_seconds",
                    "How long clients' blocking data-path calls took, by kind", labels)};
        }
        return made;
    }();
    auto found = known->find(kind);
    return found == known->end() ? nullptr : &found->second;
}

// More than this in one report (a second's work) is no client's: ignored, so that a caller
// cannot wrap the counters around (which Prometheus would read as a reset).
constexpr uint64_t kMostOperations = uint64_t{1} << 36;
constexpr uint64_t kMostBytes = uint64_t{1} << 50;

// Clients remembered at most, and the longest name kept: reports from callers that invent names
// cannot grow the service's memory without bound (beyond these, they are counted, not named).
constexpr size_t kMostClients = 1 << 16;
constexpr size_t kLongestClientName = 128;

}  // namespace

void ClientUsage::Add(const rpc::UsageReport &report) {
    for (const rpc::UsageCount &count : report.counts()) {
        const KindCounters *counters = CountersOf(count.kind());
        if (!counters || count.operations() > kMostOperations || count.bytes() > kMostBytes) {
            continue;
        }
        counters->operations->Add(count.operations());
        counters->bytes->Add(count.bytes());
        if (count.latency_buckets_size() > 0) {
            std::vector<uint64_t> buckets(count.latency_buckets().begin(),
                                          count.latency_buckets().end());
            // No more timed calls than calls (each bucket first, so that the sum cannot wrap).
            uint64_t timed = 0;
            bool bounded = true;
            for (uint64_t n : buckets) bounded &= n <= count.operations(), timed += n;
            if (bounded && timed <= count.operations()) {
                counters->latency->Merge(buckets, count.latency_seconds());
            }
        }
    }
    auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    if (now - last_sweep_ > std::chrono::seconds(1)) ForgetIdle(now);
    std::string name = report.client().substr(0, kLongestClientName);
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
    last_sweep_ = now;
    for (auto it = clients_.begin(); it != clients_.end();) {
        it = now - it->second > kActiveWithin ? clients_.erase(it) : std::next(it);
    }
}

}  // namespace fampool
