// Prometheus text exposition (engine/metrics.h): counters, gauges, cumulative histogram buckets,
// label escaping, and undeclared or mislabelled series ignored.
#include "engine/metrics.h"

#include <gtest/gtest.h>

namespace unmask {
namespace {

TEST(MetricsTest, RendersTheTextFormat) {
  MetricsRegistry r;
  r.DeclareCounter("requests_total", "Requests", {"model", "outcome"});
  r.DeclareGauge("running", "Running", {"model"});
  r.DeclareHistogram("latency_seconds", "Latency", {"model"}, {0.1, 1});
  r.Add("requests_total", {"m", "stop"});
  r.Add("requests_total", {"m", "stop"}, 2);
  r.Set("running", {"m"}, 3);
  r.Set("running", {"m"}, 1);
  r.Observe("latency_seconds", {"m"}, 0.05);
  r.Observe("latency_seconds", {"m"}, 0.5);
  r.Observe("latency_seconds", {"m"}, 7);
  r.Add("unknown", {"m"});                      // ignored
  r.Add("requests_total", {"only-one-label"});  // ignored
  EXPECT_EQ(r.Value("requests_total", {"m", "stop"}), 3);
  EXPECT_EQ(r.Value("running", {"m"}), 1);
  EXPECT_EQ(r.Value("latency_seconds", {"m"}), 3);  // count
  const std::string text = r.Render("unmask:");
  EXPECT_NE(text.find("# TYPE unmask:requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("unmask:requests_total{model=\"m\",outcome=\"stop\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("unmask:running{model=\"m\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("unmask:latency_seconds_bucket{model=\"m\",le=\"0.1\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("unmask:latency_seconds_bucket{model=\"m\",le=\"1\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("unmask:latency_seconds_bucket{model=\"m\",le=\"+Inf\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("unmask:latency_seconds_sum{model=\"m\"} 7.55\n"), std::string::npos);
  EXPECT_NE(text.find("unmask:latency_seconds_count{model=\"m\"} 3\n"), std::string::npos);
  EXPECT_EQ(text.find("unknown"), std::string::npos);
}

TEST(MetricsTest, EscapesLabelValues) {
  MetricsRegistry r;
  r.DeclareGauge("g", "G", {"model"});
  r.Set("g", {"a\"b\\c\nd"}, 1);
  EXPECT_NE(r.Render("").find("g{model=\"a\\\"b\\\\c\\nd\"} 1"), std::string::npos);
}

TEST(MetricsTest, LatencyBucketsAreAscending) {
  const auto b = LatencyBucketsSeconds();
  for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
}

}  // namespace
}  // namespace unmask
