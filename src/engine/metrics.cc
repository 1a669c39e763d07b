#include "engine/metrics.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace unmask {
namespace {

std::string EscapeLabel(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
  return std::string(buf, r.ptr);
}

// {a="x",b="y"} plus an optional extra label (le for buckets); "" without labels.
std::string LabelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabel(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra_name + "=\"" + extra_value + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

}  // namespace

std::vector<double> LatencyBucketsSeconds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
          1,     2.5,    5,     10,   30,    60,   120, 300,  600};
}

void MetricsRegistry::Declare(const std::string& name, const std::string& help,
                              std::vector<std::string> labels, Kind kind,
                              std::vector<double> buckets) {
  std::lock_guard<std::mutex> lock(mu_);
  if (families_.count(name)) return;
  Family& f = families_[name];
  f.kind = kind;
  f.help = help;
  f.labels = std::move(labels);
  f.buckets = std::move(buckets);
}

MetricsRegistry::Series* MetricsRegistry::Find(const std::string& name,
                                               const std::vector<std::string>& label_values,
                                               Kind kind) {
  auto it = families_.find(name);
  if (it == families_.end() || it->second.kind != kind ||
      it->second.labels.size() != label_values.size()) {
    return nullptr;
  }
  Series& s = it->second.series[label_values];
  if (kind == Kind::kHistogram && s.bucket_hits.empty()) {
    s.bucket_hits.assign(it->second.buckets.size(), 0);
  }
  return &s;
}

void MetricsRegistry::Add(const std::string& name, const std::vector<std::string>& label_values,
                          double v) {
  std::lock_guard<std::mutex> lock(mu_);
  Series* s = Find(name, label_values, Kind::kCounter);
  if (s == nullptr) s = Find(name, label_values, Kind::kGauge);
  if (s != nullptr) s->value += v;
}

void MetricsRegistry::Set(const std::string& name, const std::vector<std::string>& label_values,
                          double v) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Series* s = Find(name, label_values, Kind::kGauge)) s->value = v;
}

void MetricsRegistry::Observe(const std::string& name, const std::vector<std::string>& label_values,
                              double v) {
  std::lock_guard<std::mutex> lock(mu_);
  Series* s = Find(name, label_values, Kind::kHistogram);
  if (s == nullptr || std::isnan(v)) return;
  const std::vector<double>& b = families_[name].buckets;
  for (size_t i = 0; i < b.size(); ++i) {
    if (v <= b[i]) {
      ++s->bucket_hits[i];
      break;
    }
  }
  ++s->count;
  s->sum += v;
}

double MetricsRegistry::Value(const std::string& name,
                              const std::vector<std::string>& label_values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto s = it->second.series.find(label_values);
  if (s == it->second.series.end()) return 0;
  return it->second.kind == Kind::kHistogram ? static_cast<double>(s->second.count)
                                             : s->second.value;
}

std::string MetricsRegistry::Render(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream out;
  for (const auto& [name, f] : families_) {
    const std::string full = prefix + name;
    const char* type = f.kind == Kind::kCounter ? "counter"
                       : f.kind == Kind::kGauge ? "gauge"
                                                : "histogram";
    out << "# HELP " << full << " " << f.help << "\n# TYPE " << full << " " << type << "\n";
    for (const auto& [values, s] : f.series) {
      if (f.kind != Kind::kHistogram) {
        out << full << LabelSet(f.labels, values) << " " << FormatNumber(s.value) << "\n";
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f.buckets.size(); ++i) {
        cumulative += s.bucket_hits[i];
        out << full << "_bucket" << LabelSet(f.labels, values, "le", FormatNumber(f.buckets[i]))
            << " " << cumulative << "\n";
      }
      out << full << "_bucket" << LabelSet(f.labels, values, "le", "+Inf") << " " << s.count
          << "\n";
      out << full << "_sum" << LabelSet(f.labels, values) << " " << FormatNumber(s.sum) << "\n";
      out << full << "_count" << LabelSet(f.labels, values) << " " << s.count << "\n";
    }
  }
  return out.str();
}

}  // namespace unmask
