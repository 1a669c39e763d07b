#include "server/ollama_api.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <string_view>

#include "common/suggest.h"

namespace unmask::server {

using json = nlohmann::ordered_json;

namespace {

// Options mapped to the OpenAI field of the same name.
const std::vector<std::string>& SamplingOptions() {
  static const std::vector<std::string> kNames = {"temperature",
                                                  "top_p",
                                                  "top_k",
                                                  "min_p",
                                                  "seed",
                                                  "stop",
                                                  "repeat_penalty",
                                                  "repeat_last_n",
                                                  "presence_penalty",
                                                  "frequency_penalty"};
  return kNames;
}
// unmask's own request fields, accepted as options too (Ollama clients pass extra options
// through).
const std::vector<std::string>& DiffusionOptions() {
  static const std::vector<std::string> kNames = {"steps",
                                                  "block_length",
                                                  "remasking",
                                                  "denoising_steps",
                                                  "eb_threshold",
                                                  "edit_threshold",
                                                  "max_post_edit_steps",
                                                  "separate_store",
                                                  "small_block_size",
                                                  "cache",
                                                  "commit",
                                                  "threshold",
                                                  "factor",
                                                  "low_threshold",
                                                  "cfg_scale",
                                                  "early_stop",
                                                  "alg",
                                                  "eps",
                                                  "alg_temp",
                                                  "speculative"};
  return kNames;
}
// How the runner is set up: no effect on one request's output here.
const std::vector<std::string>& RunnerOptions() {
  static const std::vector<std::string> kNames = {
      "num_ctx",    "num_thread",     "num_gpu",   "main_gpu", "num_batch",
      "num_keep",   "use_mmap",       "use_mlock", "numa",     "low_vram",
      "vocab_only", "embedding_only", "logits_all"};
  return kNames;
}
// Not implemented: accepted only at their neutral value.
struct Neutral {
  const char* name;
  double value;
};
constexpr Neutral kNeutralOptions[] = {{"typical_p", 1.0},
                                       {"tfs_z", 1.0},
                                       {"mirostat", 0.0},
                                       {"mirostat_tau", 5.0},
                                       {"mirostat_eta", 0.1}};

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

ApiError OllamaBad(const std::string& param, const std::string& message) {
  return Bad(param, message);
}

std::optional<ApiError> Unknown(const std::string& what, const std::string& name,
                                std::vector<std::string> accepted) {
  std::sort(accepted.begin(), accepted.end());
  const std::string closest = tools::ClosestName(name, accepted);
  ApiError e = Bad(name, "unknown " + what + " '" + name + "'" +
                             (closest.empty() ? "" : " (did you mean '" + closest + "'?)"));
  e.code = "unknown_parameter";
  return e;
}

std::optional<ApiError> ReadOptions(const json& options, json* openai) {
  if (options.is_null()) return std::nullopt;
  if (!options.is_object()) return OllamaBad("options", "'options' must be an object");
  for (const auto& [key, value] : options.items()) {
    if (value.is_null()) continue;
    if (key == "num_predict") {
      if (!value.is_number_integer()) {
        return OllamaBad("num_predict", "'options.num_predict' must be an integer");
      }
      // (2^64 - 1 read as int64 was -1: "until EOS")
      if (value.is_number_unsigned() && value.get<uint64_t>() > (uint64_t{1} << 31)) {
        return OllamaBad("num_predict", "'options.num_predict' must be at most 2^31");
      }
      const int64_t n = value.get<int64_t>();
      if (n < -2 || n == 0) {
        return OllamaBad("num_predict",
                         "'options.num_predict' must be positive, or -1 / -2 "
                         "(until EOS or the context)");
      }
      if (n > 0) (*openai)["max_tokens"] = n;  // -1 / -2: until EOS or the context
      continue;
    }
    if (Contains(SamplingOptions(), key) || Contains(DiffusionOptions(), key)) {
      (*openai)[key] = value;
      continue;
    }
    if (Contains(RunnerOptions(), key)) {
      // No effect here, but a wrong type is still the client's error to hear about.
      if (!value.is_number() && !value.is_boolean()) {
        return OllamaBad(key, "'options." + key + "' must be a number or a boolean");
      }
      continue;
    }
    if (key == "penalize_newline") {
      if (value != false) {
        return Unsupported("penalize_newline",
                           "'options.penalize_newline' is not supported (false only)");
      }
      continue;
    }
    bool neutral_known = false;
    for (const Neutral& n : kNeutralOptions) {
      if (key != n.name) continue;
      neutral_known = true;
      if (!value.is_number() || std::fabs(value.get<double>() - n.value) > 1e-12) {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%g", n.value);
        return Unsupported(
            key, "'options." + key + "' is not supported (only " + buf + ", which turns it off)");
      }
    }
    if (neutral_known) continue;
    std::vector<std::string> all = SamplingOptions();
    for (const auto* list : {&DiffusionOptions(), &RunnerOptions()}) {
      all.insert(all.end(), list->begin(), list->end());
    }
    for (const Neutral& n : kNeutralOptions) all.push_back(n.name);
    all.push_back("num_predict");
    all.push_back("penalize_newline");
    return Unknown("option", key, all);
  }
  return std::nullopt;
}

std::optional<ApiError> ReadFormat(const json& format, json* openai) {
  if (format.is_null() || format == "") return std::nullopt;
  if (format == "json") {
    (*openai)["response_format"] = {{"type", "json_object"}};
    return std::nullopt;
  }
  if (format.is_object()) {
    (*openai)["response_format"] = {
        {"type", "json_schema"}, {"json_schema", {{"name", "ollama_format"}, {"schema", format}}}};
    return std::nullopt;
  }
  return OllamaBad("format", "'format' must be \"json\" or a JSON schema object");
}

// Ollama messages -> OpenAI messages: images refused, tool_calls' arguments objects -> JSON text
// with generated ids (a tool message answers the call before it: its id), tool_name -> name.
std::optional<ApiError> ReadMessages(const json& messages, json* out) {
  if (!messages.is_array()) return OllamaBad("messages", "'messages' must be an array");
  json list = json::array();
  std::vector<std::string> pending_ids;  // calls of the last assistant message, in order
  size_t next_answer = 0;
  int call_counter = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return OllamaBad("messages", where + " must be an object");
    json o = json::object();
    for (const auto& [key, value] : m.items()) {
      if (key == "role" || key == "content") {
        o[key] = value;
      } else if (key == "images") {
        if (!value.is_null() && !(value.is_array() && value.empty())) {
          return Unsupported("images", where +
                                           ".images: images are not supported (no vision "
                                           "models)");
        }
      } else if (key == "thinking") {
        if (!value.is_null() && value != "") {
          return Unsupported("thinking", where + ".thinking is not supported");
        }
      } else if (key == "tool_name") {
        if (!value.is_null() && !value.is_string()) {
          return OllamaBad("messages", where + ".tool_name must be a string");
        }
        if (!value.is_null()) o["name"] = value;
      } else if (key == "tool_calls") {
        if (value.is_null()) continue;
        if (!value.is_array()) return OllamaBad("messages", where + ".tool_calls must be an array");
        json calls = json::array();
        pending_ids.clear();
        next_answer = 0;
        for (const json& c : value) {
          const json* f = c.is_object() && c.contains("function") ? &c.at("function") : nullptr;
          if (f == nullptr || !f->is_object() || !f->contains("name") ||
              !f->at("name").is_string() || f->at("name").get<std::string>().empty()) {
            return OllamaBad("messages", where +
                                             ".tool_calls: each call needs function.name (a "
                                             "non-empty string)");
          }
          const json args = f->contains("arguments") ? f->at("arguments") : json::object();
          if (!args.is_object()) {
            return OllamaBad("messages",
                             where + ".tool_calls: function.arguments must be an object");
          }
          const std::string id = "call_" + std::to_string(++call_counter);
          pending_ids.push_back(id);
          calls.push_back({{"id", id},
                           {"type", "function"},
                           {"function", {{"name", f->at("name")}, {"arguments", args.dump()}}}});
        }
        o["tool_calls"] = std::move(calls);
      } else {
        return Unknown("message field", key,
                       {"role", "content", "images", "thinking", "tool_name", "tool_calls"});
      }
    }
    if (o.contains("role") && o["role"] == "tool") {
      // Ollama's tool messages do not name the call: they answer the calls in order.
      o["tool_call_id"] = next_answer < pending_ids.size() ? pending_ids[next_answer++]
                                                           : "call_" + std::to_string(i);
    }
    if (o.contains("role") && o["role"] == "assistant" && !o.contains("content")) {
      o["content"] = "";
    }
    list.push_back(std::move(o));
  }
  *out = std::move(list);
  return std::nullopt;
}

}  // namespace

bool IsOllamaLoadRequest(const json& body, bool ollama_chat) {
  if (!body.is_object()) return false;
  auto absent_or_empty = [&](const char* key) {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ||
           (it->is_string() && it->get<std::string>().empty()) || (it->is_array() && it->empty());
  };
  return ollama_chat
             ? absent_or_empty("messages")
             : absent_or_empty("prompt") && absent_or_empty("suffix") && absent_or_empty("images");
}

std::string OllamaModelName(const std::string& name) {
  constexpr std::string_view kLatest = ":latest";
  if (name.size() > kLatest.size() && name.ends_with(kLatest)) {
    return name.substr(0, name.size() - kLatest.size());
  }
  return name;
}

std::optional<ApiError> TranslateOllamaRequest(const json& body, bool ollama_chat,
                                               bool has_template, OllamaRequest* out) {
  if (!body.is_object()) return OllamaBad("", "the request body must be a JSON object");
  static const std::vector<std::string> kGenerate = {
      "model",  "prompt", "suffix",  "system",     "template", "context",  "stream",      "raw",
      "format", "images", "options", "keep_alive", "think",    "logprobs", "top_logprobs"};
  static const std::vector<std::string> kChat = {"model",    "messages",    "tools",      "stream",
                                                 "format",   "options",     "keep_alive", "think",
                                                 "logprobs", "top_logprobs"};
  const std::vector<std::string>& accepted = ollama_chat ? kChat : kGenerate;
  for (const auto& [key, value] : body.items()) {
    if (!Contains(accepted, key)) return Unknown("field", key, accepted);
  }
  auto get = [&](const char* key) -> const json& {
    static const json kNull;
    auto it = body.find(key);
    return it == body.end() ? kNull : *it;
  };
  OllamaRequest r;
  json& o = r.openai;
  o = json::object();
  const json& model = get("model");
  if (!model.is_string() || model.get<std::string>().empty()) {
    return OllamaBad("model", "'model' is required (a model name, see GET /api/tags)");
  }
  o["model"] = OllamaModelName(model.get<std::string>());
  const json& stream = get("stream");
  if (!stream.is_null() && !stream.is_boolean()) {
    return OllamaBad("stream", "'stream' must be a boolean");
  }
  r.stream = stream.is_null() ? true : stream.get<bool>();
  o["stream"] = r.stream;
  if (const json& think = get("think"); !think.is_null() && think != false) {
    return Unsupported("think", "'think' (thinking models) is not supported");
  }
  if (const json& lp = get("logprobs"); !lp.is_null()) {
    if (!lp.is_boolean()) return OllamaBad("logprobs", "'logprobs' must be a boolean");
    if (lp.get<bool>()) {
      return Unsupported("logprobs",
                         "'logprobs' on the Ollama API is not supported yet (the "
                         "OpenAI endpoints return them)");
    }
  }
  if (const json& lp = get("top_logprobs"); !lp.is_null() && !lp.is_number_integer()) {
    return OllamaBad("top_logprobs", "'top_logprobs' must be an integer");
  }
  if (const json& ka = get("keep_alive"); !ka.is_null() && !ka.is_string() && !ka.is_number()) {
    return OllamaBad("keep_alive", "'keep_alive' must be a duration (\"5m\") or seconds");
  }
  if (auto e = ReadOptions(get("options"), &o)) return e;
  if (auto e = ReadFormat(get("format"), &o)) return e;
  if (ollama_chat) {
    if (auto e = ReadMessages(get("messages").is_null() ? json::array() : get("messages"),
                              &o["messages"])) {
      return e;
    }
    if (const json& tools = get("tools"); !tools.is_null()) o["tools"] = tools;
    r.openai_chat = true;
  } else {
    for (const char* key : {"template", "context", "images"}) {
      const json& v = get(key);
      if (!v.is_null() && v != "" && !(v.is_array() && v.empty())) {
        return Unsupported(key, std::string("'") + key + "' is not supported (" +
                                    (std::string_view(key) == "context"
                                         ? "send the whole text: there is no KV cache between "
                                           "requests"
                                     : std::string_view(key) == "images"
                                         ? "no vision models"
                                         : "the model's own chat template is used") +
                                    ")");
      }
    }
    const json& prompt = get("prompt");
    if (!prompt.is_null() && !prompt.is_string()) {
      return OllamaBad("prompt", "'prompt' must be a string");
    }
    const std::string text = prompt.is_null() ? "" : prompt.get<std::string>();
    const json& system = get("system");
    if (!system.is_null() && !system.is_string()) {
      return OllamaBad("system", "'system' must be a string");
    }
    const json& raw = get("raw");
    if (!raw.is_null() && !raw.is_boolean()) return OllamaBad("raw", "'raw' must be a boolean");
    const json& suffix = get("suffix");
    if (!suffix.is_null() && !suffix.is_string()) {
      return OllamaBad("suffix", "'suffix' must be a string");
    }
    const bool infill = suffix.is_string() && !suffix.get<std::string>().empty();
    const bool templated = has_template && !infill && !(raw.is_boolean() && raw.get<bool>());
    if (templated) {
      json messages = json::array();
      if (system.is_string() && !system.get<std::string>().empty()) {
        messages.push_back({{"role", "system"}, {"content", system}});
      }
      messages.push_back({{"role", "user"}, {"content", text}});
      o["messages"] = std::move(messages);
      r.openai_chat = true;
    } else {
      if (system.is_string() && !system.get<std::string>().empty()) {
        return Unsupported("system",
                           "'system' needs the model's chat template (this request is raw, a "
                           "suffix, or the model has no template)");
      }
      o["prompt"] = text;
      if (infill) o["suffix"] = suffix;
      // Ollama generates until done when num_predict is not set; the OpenAI default is 16.
      if (!o.contains("max_tokens")) o["n_predict"] = -1;
    }
  }
  *out = std::move(r);
  return std::nullopt;
}

ApiError InOllamaTerms(ApiError e) {
  // (OpenAI name, Ollama name), longest first where one is a prefix of another.
  static const std::pair<const char*, const char*> kNames[] = {
      {"response_format.json_schema.schema", "format"},
      {"response_format", "format"},
      {"max_tokens", "options.num_predict"},
  };
  auto rename = [](std::string* text, const std::string& from, const std::string& to) {
    for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at)) {
      text->replace(at, from.size(), to);
      at += to.size();
    }
  };
  for (const auto& [from, to] : kNames) {
    if (e.param.rfind(from, 0) == 0) e.param = to + e.param.substr(std::string(from).size());
    rename(&e.message, std::string("'") + from + "'", std::string("'") + to + "'");
    rename(&e.message, std::string("'") + from + ".", std::string("'") + to + ".");
  }
  return e;
}

std::string OllamaTime(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(ns.count() / 1000000000);
  const long long frac = ns.count() % 1000000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

json OllamaDetails(const ModelConfig& config, const std::string& weight_type) {
  const double params = static_cast<double>(config.NumParameters());
  char size[32];
  if (params >= 1e9) {
    std::snprintf(size, sizeof(size), "%.1fB", params / 1e9);
  } else if (params >= 1e6) {
    std::snprintf(size, sizeof(size), "%.2fM", params / 1e6);
  } else {
    std::snprintf(size, sizeof(size), "%.0fK", params / 1e3);
  }
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", config.architecture},
          {"families", json::array({config.architecture})},
          {"parameter_size", size},
          {"quantization_level", weight_type}};
}

json OllamaChunk(const std::string& model, bool chat, const std::string& text) {
  json line = {{"model", model}, {"created_at", OllamaTime(std::chrono::system_clock::now())}};
  if (chat) {
    line["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    line["response"] = text;
  }
  line["done"] = false;
  return line;
}

void AddOllamaStats(const RequestStats& stats, FinishReason finish, json* line) {
  auto ns = [](double ms) { return static_cast<int64_t>(std::llround(std::max(ms, 0.0) * 1e6)); };
  const double prompt_ms = stats.ttft_ms >= 0 ? stats.ttft_ms : stats.total_ms;
  (*line)["done"] = true;
  (*line)["done_reason"] = finish == FinishReason::kStop ? "stop" : "length";
  (*line)["total_duration"] = ns(stats.total_ms);
  (*line)["load_duration"] = 0;
  (*line)["prompt_eval_count"] = stats.prompt_tokens;
  (*line)["prompt_eval_duration"] = ns(prompt_ms - stats.queue_ms);
  (*line)["eval_count"] = stats.completion_tokens;
  (*line)["eval_duration"] = ns(stats.total_ms - prompt_ms);
}

}  // namespace unmask::server
