// UsageReporter (usage_reporter.h).
#include "client/usage_reporter.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "common/error.h"

namespace fampool {
namespace {

constexpr std::array<const char *, UsageReporter::kKinds> kKindNames = {"get", "put", "gather",
                                                                        "scatter", "atomic"};

}  // namespace

UsageReporter::UsageReporter(Send send, std::chrono::milliseconds period)
    : send_(std::move(send)), period_(period) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::random_device random;
    client_ = fmt::format("{}:{}:{:08x}", host, getpid(), random());
    // The first report at a moment of this process's own within the period: a job's PEs start
    // together, and reports sent in step would reach the service as a burst each period.
    auto first = std::chrono::milliseconds(random() % std::max<int64_t>(period_.count(), 1));
    thread_ = std::thread([this, first] {
        std::unique_lock<std::mutex> lock(mutex_);
        if (wake_.wait_for(lock, first, [this] { return stopping_; })) return;
        while (!wake_.wait_for(lock, period_, [this] { return stopping_; })) {
            lock.unlock();
            Report(false);
            lock.lock();
        }
    });
}

UsageReporter::~UsageReporter() { Stop(); }

void UsageReporter::Stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    // A service that did not take the last report would keep fam_finalize waiting for nothing.
    if (!failed_) Report(true);
}

void UsageReporter::Report(bool last) {
    rpc::UsageReport report;
    report.set_client(client_);
    report.set_last(last);
    std::array<uint64_t, kKinds> operations{}, bytes{};
    std::array<std::vector<uint64_t>, kKinds> buckets;
    std::array<double, kKinds> seconds{};
    bool any = false;
    for (int k = 0; k < kKinds; ++k) {
        operations[k] = operations_[k].load(std::memory_order_relaxed);
        bytes[k] = bytes_[k].load(std::memory_order_relaxed);
        buckets[k] = latency_[k].Counts();
        seconds[k] = latency_[k].sum();
        if (operations[k] == sent_operations_[k]) continue;
        rpc::UsageCount *count = report.add_counts();
        count->set_kind(kKindNames[k]);
        count->set_operations(operations[k] - sent_operations_[k]);
        count->set_bytes(bytes[k] - sent_bytes_[k]);
        sent_buckets_[k].resize(buckets[k].size());
        for (size_t b = 0; b < buckets[k].size(); ++b) {
            count->add_latency_buckets(buckets[k][b] - sent_buckets_[k][b]);
        }
        count->set_latency_seconds(seconds[k] - sent_seconds_[k]);
        any = true;
    }
    if (!any && !last) return;
    try {
        send_(report);
    } catch (const Failure &) {
        failed_ = true;
        return;  // the service is away: this goes with the next report
    }
    failed_ = false;
    sent_operations_ = operations;
    sent_bytes_ = bytes;
    sent_buckets_ = buckets;
    sent_seconds_ = seconds;
}

}  // namespace fampool
