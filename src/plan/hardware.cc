#include "plan/hardware.h"

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

namespace unmask::plan {
namespace {

using nlohmann::json;

StatusOr<double> Positive(const json& obj, const std::string& key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || !obj.at(key).is_number()) {
    return InvalidArgumentError(where + ": '" + key + "' must be a number");
  }
  const double v = obj.at(key).get<double>();
  if (!(v > 0) || !std::isfinite(v)) {
    return InvalidArgumentError(where + ": '" + key + "' must be > 0");
  }
  return v;
}

StatusOr<std::string> Text(const json& obj, const std::string& key, const std::string& where) {
  if (!obj.contains(key) || !obj.at(key).is_string() || obj.at(key).get<std::string>().empty()) {
    return InvalidArgumentError(where + ": '" + key + "' must be a non-empty string");
  }
  return obj.at(key).get<std::string>();
}

StatusOr<Hardware> ParseEntry(const json& e, const std::string& where0) {
  if (!e.is_object()) return InvalidArgumentError(where0 + ": an entry must be an object");
  Hardware h;
  UNMASK_ASSIGN_OR_RETURN(h.id, Text(e, "id", where0));
  // Ids name files (plan-<id>.svg) and are listed with commas on the command line.
  for (char c : h.id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
      return InvalidArgumentError(where0 +
                                  ": 'id' may hold only letters, digits, '.', '_' and '-'");
    }
  }
  const std::string where = where0 + " ('" + h.id + "')";
  UNMASK_ASSIGN_OR_RETURN(h.name, Text(e, "name", where));
  UNMASK_ASSIGN_OR_RETURN(h.kind, Text(e, "kind", where));
  if (h.kind != "gpu" && h.kind != "cpu") {
    return InvalidArgumentError(where + ": 'kind' must be \"gpu\" or \"cpu\"");
  }
  if (!e.contains("peak_tflops") || !e.at("peak_tflops").is_object() ||
      e.at("peak_tflops").empty()) {
    return InvalidArgumentError(where + ": 'peak_tflops' must be an object of dtype: TFLOP/s");
  }
  for (const auto& [dtype, v] : e.at("peak_tflops").items()) {
    UNMASK_ASSIGN_OR_RETURN(h.peak_tflops[dtype], Positive(e.at("peak_tflops"), dtype, where));
  }
  UNMASK_ASSIGN_OR_RETURN(h.memory_bandwidth_gbs, Positive(e, "memory_bandwidth_gbs", where));
  UNMASK_ASSIGN_OR_RETURN(h.memory_gb, Positive(e, "memory_gb", where));
  if (!e.contains("price_per_hour")) {
    return InvalidArgumentError(where + ": 'price_per_hour' is missing");
  }
  const json& price = e.at("price_per_hour");
  UNMASK_ASSIGN_OR_RETURN(h.price.low, Positive(price, "low", where + " price_per_hour"));
  UNMASK_ASSIGN_OR_RETURN(h.price.typical, Positive(price, "typical", where + " price_per_hour"));
  UNMASK_ASSIGN_OR_RETURN(h.price.high, Positive(price, "high", where + " price_per_hour"));
  if (!(h.price.low <= h.price.typical && h.price.typical <= h.price.high)) {
    return InvalidArgumentError(where + ": price_per_hour needs low <= typical <= high");
  }
  if (!e.contains("efficiency")) return InvalidArgumentError(where + ": 'efficiency' is missing");
  UNMASK_ASSIGN_OR_RETURN(h.compute_efficiency,
                          Positive(e.at("efficiency"), "compute", where + " efficiency"));
  UNMASK_ASSIGN_OR_RETURN(h.bandwidth_efficiency,
                          Positive(e.at("efficiency"), "bandwidth", where + " efficiency"));
  if (h.compute_efficiency > 1 || h.bandwidth_efficiency > 1) {
    return InvalidArgumentError(where + ": efficiencies are fractions in (0, 1]");
  }
  if (e.contains("sources")) {
    if (!e.at("sources").is_object()) {
      return InvalidArgumentError(where + ": 'sources' must be an object of field: [URL, ...]");
    }
    for (const auto& [field, list] : e.at("sources").items()) {
      if (!list.is_array()) {
        return InvalidArgumentError(where + ": sources of '" + field + "' must be a list");
      }
      for (const json& s : list) {
        if (s.is_string()) h.sources[field].push_back(s.get<std::string>());
      }
    }
  }
  return h;
}

}  // namespace

StatusOr<std::vector<Hardware>> ParseHardwareTable(std::string_view text, std::string_view origin) {
  const std::string o(origin);
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError(o + ": not valid JSON");
  if (!doc.is_object() || !doc.contains("schema") || doc.at("schema") != "unmask-hardware/1") {
    return InvalidArgumentError(o + ": expected \"schema\": \"unmask-hardware/1\"");
  }
  if (!doc.contains("hardware") || !doc.at("hardware").is_array()) {
    return InvalidArgumentError(o + ": expected an object with a 'hardware' list");
  }
  std::vector<Hardware> table;
  for (size_t i = 0; i < doc.at("hardware").size(); ++i) {
    UNMASK_ASSIGN_OR_RETURN(
        Hardware h, ParseEntry(doc.at("hardware")[i], o + ": hardware[" + std::to_string(i) + "]"));
    for (const Hardware& other : table) {
      if (other.id == h.id) return InvalidArgumentError(o + ": duplicate id '" + h.id + "'");
    }
    table.push_back(std::move(h));
  }
  if (table.empty()) return InvalidArgumentError(o + ": the hardware list is empty");
  return table;
}

StatusOr<Hardware> FindHardware(const std::vector<Hardware>& table, std::string_view id) {
  std::string known;
  for (const Hardware& h : table) {
    if (h.id == id) return h;
    known += (known.empty() ? "" : ", ") + h.id;
  }
  return NotFoundError("unknown hardware '" + std::string(id) + "' (known: " + known + ")");
}

StatusOr<double> DtypeBytes(std::string_view dtype) {
  if (dtype == "bf16" || dtype == "f16") return 2.0;
  if (dtype == "fp8" || dtype == "int8") return 1.0;
  if (dtype == "f32") return 4.0;
  return InvalidArgumentError("unknown dtype '" + std::string(dtype) +
                              "' (known: bf16, f16, fp8, int8, f32)");
}

StatusOr<MachineRates> RatesFor(const Hardware& hw, std::string_view dtype, double overhead_ms) {
  UNMASK_ASSIGN_OR_RETURN(double bytes, DtypeBytes(dtype));
  const auto it = hw.peak_tflops.find(std::string(dtype));
  if (it == hw.peak_tflops.end()) {
    std::string have;
    for (const auto& [d, v] : hw.peak_tflops) have += (have.empty() ? "" : ", ") + d;
    return InvalidArgumentError(hw.id + " has no " + std::string(dtype) + " peak (it has: " + have +
                                ")");
  }
  MachineRates r;
  r.flops_per_second = it->second * 1e12 * hw.compute_efficiency;
  r.bytes_per_second = hw.memory_bandwidth_gbs * 1e9 * hw.bandwidth_efficiency;
  r.memory_bytes = hw.memory_gb * 1e9;
  r.overhead_ms = overhead_ms;
  r.weight_bytes_per_parameter = bytes;
  r.kv_bytes_per_element = bytes >= 4 ? 4.0 : 2.0;
  r.activation_bytes_per_element = r.kv_bytes_per_element;
  return r;
}

}  // namespace unmask::plan
