// A server process's metrics, in Prometheus's text exposition format (version 0.0.4): counters
// and latency histograms that the code serving calls adds to as it goes (a relaxed atomic add,
// cheap on any path), and collectors that read gauges (capacity, health, sessions) at the
// moment of a scrape. fampool-server serves Registry::Render() over HTTP
// (tools/server/metrics_endpoint.h); docs/operations.md lists every metric.
#ifndef FAMPOOL_COMMON_METRICS_H_
#define FAMPOOL_COMMON_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace fampool::metrics {

// A metric's labels, name and value, in the order they are printed.
using Labels = std::vector<std::pair<std::string, std::string>>;

// A value that only grows (operations, bytes, failures since the process started).
class Counter {
  public:
    void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
    uint64_t value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<uint64_t> value_{0};
};

// Durations in buckets of seconds from 10 us to 10 s (kBounds), with their count and sum.
class Histogram {
  public:
    static constexpr std::array<double, 16> kBounds = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
                                                       1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1,
                                                       0.25, 1,      2.5,  10};
    void Observe(double seconds);
    // Adds observations made elsewhere: `counts` per bucket (not cumulative: kBounds.size() + 1
    // of them, the last past every bound) and their sum. False, adding nothing, when the
    // number of counts is not that.
    bool Merge(const std::vector<uint64_t> &counts, double seconds);
    // Cumulative counts per bound, then the count of all (+Inf); the sum in seconds.
    std::vector<uint64_t> Cumulative() const;
    // The count of each bucket alone (what Merge takes).
    std::vector<uint64_t> Counts() const;
    double sum() const;

  private:
    std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};  // not cumulative
    std::atomic<uint64_t> sum_ns_{0};
};

// What a collector reports at a scrape: samples of gauges and counters whose values live
// elsewhere (the store, the heaps, the health monitor).
class Sink {
  public:
    void Gauge(const std::string &name, const std::string &help, const Labels &labels,
               double value);
    void Counter(const std::string &name, const std::string &help, const Labels &labels,
                 double value);

  private:
    friend class Registry;
    struct Family {
        std::string help, type;
        std::vector<std::pair<Labels, double>> samples;
    };
    void Add(const std::string &name, const std::string &help, const char *type,
             const Labels &labels, double value);
    std::map<std::string, Family> families_;
};

class Registry {
  public:
    // The counter or histogram `name` with `labels`, made at its first use; the reference stays
    // valid for the registry's life, so a hot path looks it up once and keeps it. `help` is
    // the family's one-line description (the first given is kept).
    metrics::Counter &Counter(const std::string &name, const std::string &help,
                              const Labels &labels = {});
    metrics::Histogram &Histogram(const std::string &name, const std::string &help,
                                  const Labels &labels = {});
    // Runs `collect` at every scrape, until the returned handle is destroyed (the owner of
    // what it reads must drop the handle before it goes). A collector must not add or remove
    // collectors.
    using Collect = std::function<void(Sink &)>;
    std::shared_ptr<void> AddCollector(Collect collect);

    // Every family, sorted by name, in the text exposition format.
    std::string Render() const;

  private:
    struct Family {
        std::string help;
        bool histogram = false;
        std::map<Labels, std::unique_ptr<metrics::Counter>> counters;
        std::map<Labels, std::unique_ptr<metrics::Histogram>> histograms;
    };
    Family &FamilyOf(const std::string &name, const std::string &help, bool histogram);

    mutable std::mutex mutex_;  // the families
    std::map<std::string, Family> families_;
    // The collectors, and the scrapes running them: a scrape holds it while they run (not
    // mutex_, so that code counting meanwhile does not wait for the store's reads), and a
    // collector's removal waits for the scrape.
    mutable std::mutex collect_mutex_;
    std::map<uint64_t, Collect> collectors_;
    uint64_t next_collector_ = 0;
};

// This process's registry.
Registry &Process();

// Whether this process serves its metrics: code on a hot path counts only then (a server
// without a metrics endpoint pays nothing for them). Off until Enable.
void Enable();
inline std::atomic<bool> &EnabledFlag() {
    static std::atomic<bool> enabled{false};
    return enabled;
}
inline bool Enabled() { return EnabledFlag().load(std::memory_order_relaxed); }

// The metrics of one kind of call a service takes (a gRPC method, a fabric message): counted
// by outcome, timed. fampool_calls_total{transport, service, method, outcome="ok"|"error"} and
// fampool_call_duration_seconds{transport, service, method}.
struct Calls {
    metrics::Counter *ok = nullptr;
    metrics::Counter *failed = nullptr;
    metrics::Histogram *duration = nullptr;
    void Record(bool succeeded, double seconds) {
        (succeeded ? ok : failed)->Add();
        duration->Observe(seconds);
    }
};
// The Calls of `method` of `service` over `transport` ("grpc" or "fabric") in Process(), made
// at the first use; the reference stays valid.
Calls &CallsOf(const std::string &transport, const std::string &service, const std::string &method);

// One sample of a scrape: its metric's name, labels and value.
struct Sample {
    std::string name;
    Labels labels;
    double value = 0;
    // The value of label `label`, or "" without one.
    std::string Label(const std::string &label) const;
};
// The samples of a text-format exposition (what Render gives); comments and lines that do not
// parse are skipped.
std::vector<Sample> ParseText(const std::string &text);

// `labels` as Prometheus prints them: {a="x",b="y"} (empty labels: ""), values escaped.
std::string LabelText(const Labels &labels);

}  // namespace fampool::metrics

#endif  // FAMPOOL_COMMON_METRICS_H_
