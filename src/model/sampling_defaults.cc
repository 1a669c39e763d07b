#include "model/sampling_defaults.h"

#include <cfloat>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "format/hf_checkpoint.h"

namespace unmask {
namespace {

Status Range(const std::string& key, double v, bool ok, const std::string& want) {
  if (ok) return Status::Ok();
  return InvalidArgumentError(key + " = " + std::to_string(v) + ": must be " + want);
}

}  // namespace

StatusOr<SamplingDefaults> ReadSamplingDefaults(const gguf::GgufFile& file) {
  SamplingDefaults d;
  auto num = [&](const char* key, std::optional<double>* out) -> Status {
    if (file.Find(key) == nullptr) return Status::Ok();
    UNMASK_ASSIGN_OR_RETURN(*out, file.GetFloat(key));
    return Status::Ok();
  };
  auto integer = [&](const char* key, std::optional<int64_t>* out) -> Status {
    if (file.Find(key) == nullptr) return Status::Ok();
    UNMASK_ASSIGN_OR_RETURN(*out, file.GetInt(key));
    return Status::Ok();
  };
  UNMASK_RETURN_IF_ERROR(num("general.sampling.temp", &d.temperature));
  UNMASK_RETURN_IF_ERROR(integer("general.sampling.top_k", &d.top_k));
  UNMASK_RETURN_IF_ERROR(num("general.sampling.top_p", &d.top_p));
  UNMASK_RETURN_IF_ERROR(num("general.sampling.min_p", &d.min_p));
  UNMASK_RETURN_IF_ERROR(num("general.sampling.penalty_repeat", &d.repeat_penalty));
  UNMASK_RETURN_IF_ERROR(integer("general.sampling.penalty_last_n", &d.repeat_last_n));
  if (d.temperature) {
    UNMASK_RETURN_IF_ERROR(Range("general.sampling.temp", *d.temperature,
                                 *d.temperature >= 0 && *d.temperature <= 100, "in [0, 100]"));
  }
  if (d.top_k) {
    UNMASK_RETURN_IF_ERROR(Range("general.sampling.top_k", static_cast<double>(*d.top_k),
                                 *d.top_k >= 0 && *d.top_k <= (int64_t{1} << 31), ">= 0"));
  }
  if (d.top_p) {
    UNMASK_RETURN_IF_ERROR(
        Range("general.sampling.top_p", *d.top_p, *d.top_p > 0 && *d.top_p <= 1, "in (0, 1]"));
  }
  if (d.min_p) {
    UNMASK_RETURN_IF_ERROR(
        Range("general.sampling.min_p", *d.min_p, *d.min_p >= 0 && *d.min_p <= 1, "in [0, 1]"));
  }
  if (d.repeat_penalty) {
    UNMASK_RETURN_IF_ERROR(Range("general.sampling.penalty_repeat", *d.repeat_penalty,
                                 *d.repeat_penalty > 0 && *d.repeat_penalty <= 100, "in (0, 100]"));
  }
  if (d.repeat_last_n) {
    UNMASK_RETURN_IF_ERROR(
        Range("general.sampling.penalty_last_n", static_cast<double>(*d.repeat_last_n),
              *d.repeat_last_n >= -1 && *d.repeat_last_n <= (int64_t{1} << 31), ">= -1"));
  }
  return d;
}

Status AppendGenerationConfigSampling(const std::string& dir,
                                      std::vector<gguf::MetadataEntry>* md) {
  const std::string path = dir + "/generation_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::Ok();
  UNMASK_ASSIGN_OR_RETURN(const nlohmann::json j, format::ReadJsonFile(path));
  if (!j.is_object()) return InvalidArgumentError(path + ": not a JSON object");
  auto bad = [&](const char* key, const char* want) {
    return InvalidArgumentError(path + ": " + key + " must be " + want + ", got " + j[key].dump());
  };
  auto number = [&](const char* key, const char* gguf_key) -> Status {
    if (!j.contains(key) || j[key].is_null()) return Status::Ok();
    // A float32 in GGUF: a value beyond its range (1e300) would not convert (undefined).
    if (!j[key].is_number() || !(std::fabs(j[key].get<double>()) <= FLT_MAX)) {
      return bad(key, "a number within float32's range");
    }
    md->push_back({gguf_key, gguf::Value::F32(static_cast<float>(j[key].get<double>()))});
    return Status::Ok();
  };
  const bool greedy =
      j.contains("do_sample") && j["do_sample"].is_boolean() && !j["do_sample"].get<bool>();
  if (j.contains("do_sample") && !j["do_sample"].is_null() && !j["do_sample"].is_boolean()) {
    return bad("do_sample", "a boolean");
  }
  if (greedy) {
    md->push_back({"general.sampling.temp", gguf::Value::F32(0.0f)});
  } else {
    UNMASK_RETURN_IF_ERROR(number("temperature", "general.sampling.temp"));
  }
  UNMASK_RETURN_IF_ERROR(number("top_p", "general.sampling.top_p"));
  UNMASK_RETURN_IF_ERROR(number("min_p", "general.sampling.min_p"));
  UNMASK_RETURN_IF_ERROR(number("repetition_penalty", "general.sampling.penalty_repeat"));
  if (j.contains("top_k") && !j["top_k"].is_null()) {
    if (!j["top_k"].is_number_integer() || j["top_k"].get<int64_t>() < 0 ||
        j["top_k"].get<int64_t>() > (int64_t{1} << 31)) {
      return bad("top_k", "a non-negative integer");
    }
    md->push_back({"general.sampling.top_k",
                   gguf::Value::I32(static_cast<int32_t>(j["top_k"].get<int64_t>()))});
  }
  return Status::Ok();
}

}  // namespace unmask
