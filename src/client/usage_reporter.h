// What this process does on its data path, counted as it goes (a relaxed atomic add per call)
// and reported to the metadata service about once a period by a thread of its own, while the
// service serves metrics (ServerList.usage_report_ms; docs/operations.md). One-sided reads and
// writes do not pass through the memory servers' CPUs, so the clients count them. A report
// that fails is added to the next one, not lost.
#ifndef FAMPOOL_CLIENT_USAGE_REPORTER_H_
#define FAMPOOL_CLIENT_USAGE_REPORTER_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "rpc/fampool.pb.h"

namespace fampool {

class UsageReporter {
  public:
    enum Kind { kGet, kPut, kGather, kScatter, kAtomic, kKinds };
    using Send = std::function<void(const rpc::UsageReport &)>;

    // Reports through `send` every `period` while there is something to report.
    UsageReporter(Send send, std::chrono::milliseconds period);
    ~UsageReporter();  // Stop()
    UsageReporter(const UsageReporter &) = delete;
    UsageReporter &operator=(const UsageReporter &) = delete;

    void Count(Kind kind, uint64_t bytes) {
        operations_[kind].fetch_add(1, std::memory_order_relaxed);
        bytes_[kind].fetch_add(bytes, std::memory_order_relaxed);
    }
    // A blocking call of `kind` took this long (from its checks to its completion).
    void Took(Kind kind, std::chrono::steady_clock::duration time) {
        latency_[kind].Observe(std::chrono::duration<double>(time).count());
    }
    // Sends the last report and ends the thread (fam_finalize); later counts are not reported.
    void Stop();

  private:
    void Report(bool last);  // on the thread, or in Stop once it ended

    Send send_;
    std::chrono::milliseconds period_;
    std::string client_;
    std::array<std::atomic<uint64_t>, kKinds> operations_{}, bytes_{};
    std::array<uint64_t, kKinds> sent_operations_{}, sent_bytes_{};  // reported so far
    std::array<metrics::Histogram, kKinds> latency_;
    std::array<std::vector<uint64_t>, kKinds> sent_buckets_;  // reported so far
    std::array<double, kKinds> sent_seconds_{};
    bool failed_ = false;  // the last report failed
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace fampool

#endif  // FAMPOOL_CLIENT_USAGE_REPORTER_H_
