// Registry, Histogram and Sink (metrics.h): the text exposition format.
#include "common/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace fampool::metrics {
namespace {

std::string Escaped(const std::string &value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

// Prometheus's form of a number: integers without a fraction, +Inf and NaN by name.
std::string Number(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
        return fmt::format("{}", static_cast<int64_t>(value));
    }
    return fmt::format("{}", value);
}

Labels With(Labels labels, const std::string &name, const std::string &value) {
    labels.emplace_back(name, value);
    return labels;
}

void Header(std::string &out, const std::string &name, const std::string &help, const char *type) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string LabelText(const Labels &labels) {
    if (labels.empty()) return "";
    std::string out = "{";
    for (size_t i = 0; i < labels.size(); ++i) {
        if (i) out += ',';
        out += fmt::format("{}=\"{}\"", labels[i].first, Escaped(labels[i].second));
    }
    return out + "}";
}

void Histogram::Observe(double seconds) {
    size_t bucket = std::lower_bound(kBounds.begin(), kBounds.end(), seconds) - kBounds.begin();
    buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    double ns = std::max(seconds, 0.0) * 1e9;
    sum_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
}

bool Histogram::Merge(const std::vector<uint64_t> &counts, double seconds) {
    // NaN, negative and absurd sums are refused too (the cast below would be undefined).
    if (counts.size() != buckets_.size() || !(seconds >= 0 && seconds < 1e9)) return false;
    for (size_t i = 0; i < counts.size(); ++i) {
        buckets_[i].fetch_add(counts[i], std::memory_order_relaxed);
    }
    sum_ns_.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
    return true;
}

std::vector<uint64_t> Histogram::Counts() const {
    std::vector<uint64_t> counts;
    for (const auto &bucket : buckets_) counts.push_back(bucket.load(std::memory_order_relaxed));
    return counts;
}

std::vector<uint64_t> Histogram::Cumulative() const {
    std::vector<uint64_t> counts;
    uint64_t total = 0;
    for (const auto &bucket : buckets_) {
        total += bucket.load(std::memory_order_relaxed);
        counts.push_back(total);
    }
    return counts;
}

double Histogram::sum() const { return sum_ns_.load(std::memory_order_relaxed) / 1e9; }

void Sink::Gauge(const std::string &name, const std::string &help, const Labels &labels,
                 double value) {
    Add(name, help, "gauge", labels, value);
}

void Sink::Counter(const std::string &name, const std::string &help, const Labels &labels,
                   double value) {
    Add(name, help, "counter", labels, value);
}

void Sink::Add(const std::string &name, const std::string &help, const char *type,
               const Labels &labels, double value) {
    Family &family = families_[name];
    if (family.type.empty()) family.help = help, family.type = type;
    family.samples.emplace_back(labels, value);
}

Registry::Family &Registry::FamilyOf(const std::string &name, const std::string &help,
                                     bool histogram) {
    auto [it, made] = families_.try_emplace(name);
    if (made) {
        it->second.help = help;
        it->second.histogram = histogram;
    }
    return it->second;
}

Counter &Registry::Counter(const std::string &name, const std::string &help, const Labels &labels) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto &slot = FamilyOf(name, help, false).counters[labels];
    if (!slot) slot = std::make_unique<metrics::Counter>();
    return *slot;
}

Histogram &Registry::Histogram(const std::string &name, const std::string &help,
                               const Labels &labels) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto &slot = FamilyOf(name, help, true).histograms[labels];
    if (!slot) slot = std::make_unique<metrics::Histogram>();
    return *slot;
}

std::shared_ptr<void> Registry::AddCollector(Collect collect) {
    std::lock_guard<std::mutex> lock(collect_mutex_);
    uint64_t id = next_collector_++;
    collectors_.emplace(id, std::move(collect));
    // The handle's end removes the collector under the lock Render holds while collecting:
    // once it is gone, no scrape still reads its owner.
    return std::shared_ptr<void>(nullptr, [this, id](void *) {
        std::lock_guard<std::mutex> lock(collect_mutex_);
        collectors_.erase(id);
    });
}

std::string Registry::Render() const {
    std::string out;
    Sink sink;
    {
        std::lock_guard<std::mutex> collecting(collect_mutex_);
        for (const auto &[id, collect] : collectors_) collect(sink);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    // One list sorted by name: the registry's families and the collectors' together.
    std::map<std::string, std::string> blocks;
    for (const auto &[name, family] : families_) {
        std::string &block = blocks[name];
        if (!family.histogram) {
            Header(block, name, family.help, "counter");
            for (const auto &[labels, counter] : family.counters) {
                block += fmt::format("{}{} {}\n", name, LabelText(labels), counter->value());
            }
            continue;
        }
        Header(block, name, family.help, "histogram");
        for (const auto &[labels, histogram] : family.histograms) {
            std::vector<uint64_t> counts = histogram->Cumulative();
            for (size_t i = 0; i < counts.size(); ++i) {
                std::string bound = i < metrics::Histogram::kBounds.size()
                                        ? Number(metrics::Histogram::kBounds[i])
                                        : std::string("+Inf");
                block += fmt::format("{}_bucket{} {}\n", name, LabelText(With(labels, "le", bound)),
                                     counts[i]);
            }
            block +=
                fmt::format("{}_sum{} {}\n", name, LabelText(labels), Number(histogram->sum()));
            block += fmt::format("{}_count{} {}\n", name, LabelText(labels), counts.back());
        }
    }
    for (const auto &[name, family] : sink.families_) {
        std::string &block = blocks[name];
        if (block.empty()) Header(block, name, family.help, family.type.c_str());
        for (const auto &[labels, value] : family.samples) {
            block += fmt::format("{}{} {}\n", name, LabelText(labels), Number(value));
        }
    }
    for (const auto &[name, block] : blocks) out += block;
    return out;
}

std::string Sample::Label(const std::string &label) const {
    for (const auto &[name, value] : labels) {
        if (name == label) return value;
    }
    return "";
}

namespace {

// Parses `{a="x",b="y"}` from `line` at `at` (just past the '{'); false when it does not.
bool ParseLabels(const std::string &line, size_t &at, Labels *labels) {
    while (at < line.size() && line[at] != '}') {
        size_t equals = line.find('=', at);
        if (equals == std::string::npos || equals + 1 >= line.size() || line[equals + 1] != '"') {
            return false;
        }
        std::string name = line.substr(at, equals - at), value;
        size_t i = equals + 2;
        for (; i < line.size() && line[i] != '"'; ++i) {
            if (line[i] == '\\' && i + 1 < line.size()) {
                ++i;
                value += line[i] == 'n' ? '\n' : line[i];
            } else {
                value += line[i];
            }
        }
        if (i >= line.size()) return false;
        labels->emplace_back(name, value);
        at = i + 1;
        if (at < line.size() && line[at] == ',') ++at;
    }
    if (at >= line.size()) return false;
    ++at;  // the '}'
    return true;
}

}  // namespace

std::vector<Sample> ParseText(const std::string &text) {
    std::vector<Sample> samples;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line[0] == '#') continue;
        Sample sample;
        size_t at = line.find_first_of("{ ");
        if (at == std::string::npos) continue;
        sample.name = line.substr(0, at);
        if (line[at] == '{') {
            ++at;
            if (!ParseLabels(line, at, &sample.labels)) continue;
        }
        try {
            sample.value = std::stod(line.substr(at));
        } catch (const std::exception &) {
            continue;  // not a number (+Inf and NaN parse; anything else is not a sample)
        }
        samples.push_back(std::move(sample));
    }
    return samples;
}

Registry &Process() {
    static Registry *registry = new Registry();  // never destroyed: threads may still count
    return *registry;
}

void Enable() { EnabledFlag().store(true); }

Calls &CallsOf(const std::string &transport, const std::string &service,
               const std::string &method) {
    static std::mutex mutex;
    static std::map<std::string, Calls> *known = new std::map<std::string, Calls>();
    std::lock_guard<std::mutex> lock(mutex);
    Calls &calls = (*known)[transport + '/' + service + '/' + method];
    if (!calls.ok) {
        Labels labels = {{"transport", transport}, {"service", service}, {"method", method}};
        const char *help = "Calls the service answered, by outcome";
        calls.ok = &Process().Counter("fampool_calls_total", help, With(labels, "outcome", "ok"));
        calls.failed =
            &Process().Counter("fampool_calls_total", help, With(labels, "outcome", "error"));
        calls.duration = &Process().Histogram(
            "fampool_call_duration_seconds",
            "Time the service took to answer a call, from its arrival to its reply", labels);
    }
    return calls;
}

}  // namespace fampool::metrics
