// The planner's hardware table (data/hardware.json, embedded in the binary at build time): peak
// dense TFLOP/s per dtype, memory bandwidth and capacity, $/hour ranges and assumed achievable
// fractions, each with its sources.
#ifndef UNMASK_PLAN_HARDWARE_H_
#define UNMASK_PLAN_HARDWARE_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "plan/planner.h"

namespace unmask::plan {

struct PriceRange {
  double low = 0, typical = 0, high = 0;  // USD per hour (per GPU; per instance for a CPU)
};

struct Hardware {
  std::string id;    // "h100-sxm", "h200", "a100", "l4", "cpu"
  std::string name;  // "NVIDIA H100 SXM5 80GB"
  std::string kind;  // "gpu" | "cpu"
  std::map<std::string, double>
      peak_tflops;                  // dense, per dtype ("bf16", "fp8", "int8", "f16", "f32")
  double memory_bandwidth_gbs = 0;  // GB/s (1e9 bytes/s)
  double memory_gb = 0;
  PriceRange price;
  double compute_efficiency = 1;    // achievable fraction of the peak for large GEMMs
  double bandwidth_efficiency = 1;  // achievable fraction of the bandwidth
  std::map<std::string, std::vector<std::string>> sources;  // field -> URLs / notes
};

// Parses the table (schema "unmask-hardware/1", see data/hardware.json). `origin` names the text
// in errors. Errors: InvalidArgument naming the entry and field for bad JSON, another schema, an
// id with characters other than letters, digits, '.', '_' and '-', a missing or
// non-positive number, an efficiency outside (0, 1], a price range not low <= typical <= high, a
// duplicate id, or an empty table.
StatusOr<std::vector<Hardware>> ParseHardwareTable(std::string_view json, std::string_view origin);

// The entry with `id`. Errors: NotFound listing the known ids.
StatusOr<Hardware> FindHardware(const std::vector<Hardware>& table, std::string_view id);

// Weight bytes per parameter of a weight dtype: bf16/f16 2, fp8/int8 1, f32 4. Errors:
// InvalidArgument.
StatusOr<double> DtypeBytes(std::string_view dtype);

// The planner's rates for `hw` computing in `dtype` (weights stored in it; KV cache and
// activations in 2-byte floats, or 4 for f32): peak x efficiency, bandwidth x efficiency.
// Errors: InvalidArgument when the hardware has no peak for `dtype` (listing those it has).
StatusOr<MachineRates> RatesFor(const Hardware& hw, std::string_view dtype, double overhead_ms);

}  // namespace unmask::plan

#endif  // UNMASK_PLAN_HARDWARE_H_
