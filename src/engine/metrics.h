// Prometheus metrics (text exposition format 0.0.4, https://prometheus.io/docs/instrumenting/
// exposition_formats/): counters, gauges and histograms keyed by label values, thread-safe.
// Names follow vLLM's (SERVING.md §1.4) under the `unmask:` prefix.
#ifndef UNMASK_ENGINE_METRICS_H_
#define UNMASK_ENGINE_METRICS_H_

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace unmask {

class MetricsRegistry {
  enum class Kind { kCounter, kGauge, kHistogram };

 public:
  // Families must be declared before use (name without the prefix, help text, label names;
  // histograms also their bucket upper bounds, ascending). Re-declaring a name is a no-op.
  void DeclareCounter(const std::string& name, const std::string& help,
                      std::vector<std::string> labels) {
    Declare(name, help, std::move(labels), Kind::kCounter, {});
  }
  void DeclareGauge(const std::string& name, const std::string& help,
                    std::vector<std::string> labels) {
    Declare(name, help, std::move(labels), Kind::kGauge, {});
  }
  void DeclareHistogram(const std::string& name, const std::string& help,
                        std::vector<std::string> labels, std::vector<double> buckets) {
    Declare(name, help, std::move(labels), Kind::kHistogram, std::move(buckets));
  }

  // `label_values` in the declared order. An undeclared name or a wrong label count is ignored
  // (metrics never fail a request).
  void Add(const std::string& name, const std::vector<std::string>& label_values, double v = 1);
  void Set(const std::string& name, const std::vector<std::string>& label_values, double v);
  void Observe(const std::string& name, const std::vector<std::string>& label_values, double v);

  // Current value of a counter or gauge series (0 when absent); for tests and the router.
  double Value(const std::string& name, const std::vector<std::string>& label_values) const;
  // The text exposition of every family, names prefixed with `prefix` (e.g. "unmask:").
  std::string Render(const std::string& prefix) const;

 private:
  struct Series {
    double value = 0;                   // counter / gauge
    std::vector<uint64_t> bucket_hits;  // histogram: per bucket (not cumulative)
    uint64_t count = 0;
    double sum = 0;
  };
  struct Family {
    Kind kind = Kind::kCounter;
    std::string help;
    std::vector<std::string> labels;
    std::vector<double> buckets;
    std::map<std::vector<std::string>, Series> series;
  };
  void Declare(const std::string& name, const std::string& help, std::vector<std::string> labels,
               Kind kind, std::vector<double> buckets);
  Series* Find(const std::string& name, const std::vector<std::string>& label_values, Kind kind);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

// Bucket bounds: latencies in seconds, from 1 ms to 10 min.
std::vector<double> LatencyBucketsSeconds();

}  // namespace unmask

#endif  // UNMASK_ENGINE_METRICS_H_
