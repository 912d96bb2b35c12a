// The metrics registry (common/metrics.h): what it renders in Prometheus's text format, and
// ParseText reading it back.
#include "common/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace fampool::metrics {
namespace {

const Sample *Find(const std::vector<Sample> &samples, const std::string &name,
                   const Labels &labels) {
    auto it = std::find_if(samples.begin(), samples.end(), [&](const Sample &sample) {
        return sample.name == name && sample.labels == labels;
    });
    return it == samples.end() ? nullptr : &*it;
}

TEST(MetricsTest, ACounterRendersWithItsHelpTypeAndLabels) {
    Registry registry;
    registry.Counter("test_calls_total", "Calls made", {{"kind", "put"}}).Add(3);
    std::string text = registry.Render();
    EXPECT_NE(text.find("# HELP test_calls_total Calls made\n"), std::string::npos) << text;
    EXPECT_NE(text.find("# TYPE test_calls_total counter\n"), std::string::npos) << text;
    EXPECT_NE(text.find("test_calls_total{kind=\"put\"} 3\n"), std::string::npos) << text;
}

TEST(MetricsTest, TheSameNameAndLabelsAreOneCounter) {
    Registry registry;
    registry.Counter("test_total", "x", {{"a", "1"}}).Add();
    registry.Counter("test_total", "x", {{"a", "1"}}).Add(2);
    registry.Counter("test_total", "x", {{"a", "2"}}).Add(5);
    std::vector<Sample> samples = ParseText(registry.Render());
    ASSERT_NE(Find(samples, "test_total", {{"a", "1"}}), nullptr);
    EXPECT_EQ(Find(samples, "test_total", {{"a", "1"}})->value, 3);
    EXPECT_EQ(Find(samples, "test_total", {{"a", "2"}})->value, 5);
}

TEST(MetricsTest, AHistogramHasCumulativeBucketsASumAndACount) {
    Registry registry;
    Histogram &latency = registry.Histogram("test_seconds", "Latency");
    latency.Observe(20e-6);  // in le=2.5e-05
    latency.Observe(0.5);    // in le=1
    latency.Observe(100);    // past the last bound: +Inf only
    std::vector<Sample> samples = ParseText(registry.Render());
    EXPECT_EQ(Find(samples, "test_seconds_bucket", {{"le", "1e-05"}})->value, 0);
    EXPECT_EQ(Find(samples, "test_seconds_bucket", {{"le", "2.5e-05"}})->value, 1);
    EXPECT_EQ(Find(samples, "test_seconds_bucket", {{"le", "1"}})->value, 2);
    EXPECT_EQ(Find(samples, "test_seconds_bucket", {{"le", "10"}})->value, 2);
    EXPECT_EQ(Find(samples, "test_seconds_bucket", {{"le", "+Inf"}})->value, 3);
    EXPECT_EQ(Find(samples, "test_seconds_count", {})->value, 3);
    EXPECT_NEAR(Find(samples, "test_seconds_sum", {})->value, 100.50002, 1e-6);
}

TEST(MetricsTest, AHistogramMergesBucketsCountedElsewhere) {
    Histogram here, there;
    there.Observe(3e-5);
    there.Observe(3e-5);
    there.Observe(2);
    EXPECT_TRUE(here.Merge(there.Counts(), there.sum()));
    EXPECT_EQ(here.Cumulative(), there.Cumulative());
    EXPECT_NEAR(here.sum(), 2.00006, 1e-6);
    EXPECT_FALSE(here.Merge({1, 2, 3}, 1)) << "a count per bucket, or nothing";
    std::vector<uint64_t> one(Histogram::kBounds.size() + 1, 1);
    EXPECT_FALSE(here.Merge(one, std::nan(""))) << "NaN seconds";
    EXPECT_FALSE(here.Merge(one, -1)) << "negative seconds";
    EXPECT_EQ(here.Cumulative().back(), 3u) << "a refused merge adds nothing";
}

TEST(MetricsTest, LabelValuesAreEscapedAndReadBack) {
    Registry registry;
    std::string odd = "a \"quoted\" back\\slash\nnew line";
    registry.Counter("test_total", "x", {{"region", odd}}).Add();
    std::string text = registry.Render();
    EXPECT_NE(text.find(R"(region="a \"quoted\" back\\slash\nnew line")"), std::string::npos)
        << text;
    std::vector<Sample> samples = ParseText(text);
    ASSERT_EQ(samples.size(), 1u);
    EXPECT_EQ(samples[0].Label("region"), odd);
}

TEST(MetricsTest, ACollectorReportsAtEveryScrapeUntilItsHandleIsDropped) {
    Registry registry;
    double level = 7;
    std::shared_ptr<void> handle = registry.AddCollector([&](Sink &sink) {
        sink.Gauge("test_level", "A level", {{"server", "0"}}, level);
    });
    EXPECT_EQ(Find(ParseText(registry.Render()), "test_level", {{"server", "0"}})->value, 7);
    level = 9;
    EXPECT_EQ(Find(ParseText(registry.Render()), "test_level", {{"server", "0"}})->value, 9);
    EXPECT_NE(registry.Render().find("# TYPE test_level gauge\n"), std::string::npos);
    handle.reset();
    EXPECT_EQ(registry.Render().find("test_level"), std::string::npos);
}

TEST(MetricsTest, FamiliesAreSortedByNameWhateverTheirSource) {
    Registry registry;
    registry.Counter("b_total", "b").Add();
    auto handle = registry.AddCollector([](Sink &sink) { sink.Gauge("a_level", "a", {}, 1); });
    registry.Counter("c_total", "c").Add();
    std::string text = registry.Render();
    size_t a = text.find("a_level"), b = text.find("b_total"), c = text.find("c_total");
    EXPECT_LT(a, b);
    EXPECT_LT(b, c);
}

TEST(MetricsTest, ParseTextSkipsCommentsAndLinesThatAreNotSamples) {
    std::vector<Sample> samples =
        ParseText("# HELP x y\nx 1\nnot a sample\ny{a=\"1\"} 2.5\nz{broken 3\nw +Inf\n\n");
    ASSERT_EQ(samples.size(), 3u);
    EXPECT_EQ(samples[0].name, "x");
    EXPECT_EQ(samples[1].value, 2.5);
    EXPECT_EQ(samples[1].Label("a"), "1");
    EXPECT_TRUE(std::isinf(samples[2].value));
}

TEST(MetricsTest, CallsOfOneMethodAreCountedByOutcome) {
    Calls &calls = CallsOf("grpc", "TestService", "TestMethod");
    EXPECT_EQ(&calls, &CallsOf("grpc", "TestService", "TestMethod"));
    calls.Record(true, 0.001);
    calls.Record(false, 0.002);
    std::vector<Sample> samples = ParseText(Process().Render());
    Labels labels = {{"transport", "grpc"}, {"service", "TestService"}, {"method", "TestMethod"}};
    Labels ok = labels, failed = labels;
    ok.emplace_back("outcome", "ok");
    failed.emplace_back("outcome", "error");
    EXPECT_EQ(Find(samples, "fampool_calls_total", ok)->value, 1);
    EXPECT_EQ(Find(samples, "fampool_calls_total", failed)->value, 1);
    EXPECT_EQ(Find(samples, "fampool_call_duration_seconds_count", labels)->value, 2);
}

}  // namespace
}  // namespace fampool::metrics
