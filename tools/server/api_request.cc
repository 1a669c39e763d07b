#include "server/api_request.h"

#include "common/suggest.h"
#include "decode/dream_params.h"
#include "format/json_scan.h"
#include "server/api_constraint.h"
#include "server/api_tools.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace unmask::server {

using nlohmann::json;

ApiError Bad(const std::string& param, const std::string& message) {
  ApiError e;
  e.status = 400;
  e.param = param;
  e.message = message;
  return e;
}

ApiError Unsupported(const std::string& param, const std::string& message,
                     const std::string& code) {
  ApiError e = Bad(param, message);
  e.code = code;
  return e;
}

namespace {

// Typed readers: absent or null -> nullopt; a wrong type or range -> an error naming the field.
std::optional<ApiError> ReadNumber(const json& j, const char* key, double lo, double hi,
                                   std::optional<double>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return Bad(key, std::string("'") + key + "' must be a number");
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return Bad(key, std::string("'") + key + "' must be in [" + json(lo).dump() + ", " +
                        json(hi).dump() + "], got " + it->dump());
  }
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> ReadInt(const json& j, const char* key, int64_t lo, int64_t hi,
                                std::optional<int64_t>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  const std::string range = std::string("'") + key + "' must be an integer in [" +
                            std::to_string(lo) + ", " + std::to_string(hi) + "], got " + it->dump();
  int64_t v = 0;
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() > static_cast<uint64_t>(hi)) return Bad(key, range);
    v = static_cast<int64_t>(it->get<uint64_t>());
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (it->is_number_float()) {  // 16.0 is 16 (JavaScript clients send floats)
    const double d = it->get<double>();
    if (!std::isfinite(d) || std::floor(d) != d || std::fabs(d) > 9e15) return Bad(key, range);
    v = static_cast<int64_t>(d);
  } else {
    return Bad(key, range);
  }
  if (v < lo || v > hi) return Bad(key, range);
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> ReadBool(const json& j, const char* key, std::optional<bool>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return Bad(key, std::string("'") + key + "' must be a boolean");
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> ReadString(const json& j, const char* key,
                                   std::optional<std::string>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return Bad(key, std::string("'") + key + "' must be a string");
  *out = it->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> ReadIds(const json& arr, const char* key, std::vector<int32_t>* out) {
  for (const json& v : arr) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
        v.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return Bad(key, std::string("'") + key + "' token ids must be non-negative integers");
    }
    out->push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> ReadPrompt(const json& j, ApiRequest* r) {
  auto it = j.find("prompt");
  if (it == j.end() || it->is_null()) {
    return Bad("prompt", j.contains("messages")
                             ? "'prompt' is required (this body has 'messages': chat requests go "
                               "to /v1/chat/completions)"
                             : "'prompt' is required");
  }
  const json& p = *it;
  if (p.is_string()) {
    r->prompt_text = p.get<std::string>();
    return std::nullopt;
  }
  if (!p.is_array()) return Bad("prompt", "'prompt' must be a string or an array");
  if (p.empty()) return Bad("prompt", "'prompt' must not be empty");
  if (p[0].is_number()) {
    r->prompt_is_ids = true;
    return ReadIds(p, "prompt", &r->prompt_ids);
  }
  if (p.size() > 1) {
    return Bad("prompt",
               "only one prompt per request is supported (got " + std::to_string(p.size()) + ")");
  }
  if (p[0].is_string()) {
    r->prompt_text = p[0].get<std::string>();
    return std::nullopt;
  }
  if (p[0].is_array()) {
    r->prompt_is_ids = true;
    if (p[0].empty()) return Bad("prompt", "'prompt' must not be empty");
    return ReadIds(p[0], "prompt", &r->prompt_ids);
  }
  return Bad("prompt", "'prompt' must be a string, a list of token ids, or a list of one of them");
}

std::optional<ApiError> ReadMessages(const json& j, ApiRequest* r) {
  auto it = j.find("messages");
  if (it == j.end() || !it->is_array() || it->empty()) {
    return Bad("messages", it == j.end() && j.contains("prompt")
                               ? "'messages' is required (this body has 'prompt': text "
                                 "completions go to /v1/completions)"
                               : "'messages' must be a non-empty array");
  }
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return Bad(where, where + " must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return Bad(where + ".role", where + ".role must be a string");
    ChatMessage msg;
    msg.role = role->get<std::string>();
    if (!kRoles.count(msg.role)) {
      return Bad(where + ".role", where +
                                      ".role must be system, developer, user, assistant or "
                                      "tool, got '" +
                                      msg.role + "'");
    }
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      msg.content = "";
    } else if (content->is_string()) {
      msg.content = content->get<std::string>();
    } else if (content->is_array()) {
      // Content parts: only text parts are supported.
      for (const json& part : *content) {
        // (value("type", "") would throw on a non-string type.)
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
            !part.contains("text") || !part["text"].is_string()) {
          return Bad(
              where + ".content",
              where + ".content: only {\"type\": \"text\", \"text\": ...} parts are supported");
        }
        msg.content += part["text"].get<std::string>();
      }
    } else {
      return Bad(where + ".content", where + ".content must be a string or an array of parts");
    }
    if (auto e = ReadMessageTools(m, where, &msg)) return e;
    r->messages.push_back(std::move(msg));
  }
  return std::nullopt;
}

}  // namespace

std::span<const std::string> AcceptedFields() {
  static const std::vector<std::string> kFields = [] {
    std::vector<std::string> f = {
        // OpenAI (refused values: see ParseApiRequest).
        "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature",
        "top_p", "frequency_penalty", "presence_penalty", "stop", "seed", "stream",
        "stream_options", "n", "user", "logprobs", "top_logprobs", "echo", "best_of", "suffix",
        "response_format", "tools", "tool_choice", "parallel_tool_calls", "logit_bias",
        // llama-server and vLLM.
        "top_k", "min_p", "repeat_penalty", "repetition_penalty", "repeat_last_n", "ignore_eos",
        "n_predict", "cache_prompt", "skip_special_tokens", "grammar", "json_schema", "guided_json",
        "guided_choice", "guided_grammar", "guided_regex", "guided_decoding_backend",
        "guided_whitespace_pattern",
        // unmask: diffusion decoding, routing, deadline, streaming, speculation.
        "steps", "block_length", "remasking", "denoising_steps", "eb_threshold", "edit_threshold",
        "max_post_edit_steps", "separate_store", "small_block_size", "cache", "commit", "threshold",
        "factor", "low_threshold", "cfg_scale", "early_stop", "alg", "eps", "alg_temp",
        "latency_target_ms", "timeout", "x_canvas", "speculative"};
    std::sort(f.begin(), f.end());
    return f;
  }();
  return kFields;
}

int JsonNestingDepth(const std::string& body) { return format::ScanJsonBrackets(body).deepest; }

std::optional<ApiError> ParseApiRequest(const std::string& body, bool chat, ApiRequest* out) {
  ApiRequest r;
  r.chat = chat;
  if (JsonNestingDepth(body) > kMaxJsonDepth) {
    return Bad("", "the request body nests arrays/objects deeper than " +
                       std::to_string(kMaxJsonDepth) + " levels");
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("", "the request body is not valid JSON");
  if (!j.is_object()) return Bad("", "the request body must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    const auto fields = AcceptedFields();
    if (std::binary_search(fields.begin(), fields.end(), key)) continue;
    const std::string close = tools::ClosestName(key, fields);
    // A long unknown name is echoed cut (at a UTF-8 character boundary), not whole.
    std::string shown = key;
    if (shown.size() > 64) {
      size_t n = 64;
      while (n > 0 && (static_cast<unsigned char>(shown[n]) & 0xC0) == 0x80) --n;
      shown = shown.substr(0, n) + "...";
    }
    return Unsupported(shown,
                       "unknown field '" + shown + "'" +
                           (close.empty() ? "" : " (did you mean '" + close + "'?)") +
                           "; the accepted fields are listed in docs/serving.md",
                       "unknown_parameter");
  }

  std::optional<std::string> model;
  if (auto e = ReadString(j, "model", &model)) return e;
  r.model = model.value_or("");  // "": the server's only model (llama-server), else a 400 there
  if (chat) {
    if (auto e = ReadMessages(j, &r)) return e;
  } else {
    if (auto e = ReadPrompt(j, &r)) return e;
  }
  constexpr int64_t kMaxLen = int64_t{1} << 24;
  std::optional<int64_t> max_tokens, max_completion_tokens, n_predict, n, top_k, steps,
      block_length;
  if (auto e = ReadInt(j, "max_tokens", 1, kMaxLen, &max_tokens)) return e;
  if (auto e = ReadInt(j, "max_completion_tokens", 1, kMaxLen, &max_completion_tokens)) return e;
  if (auto e = ReadInt(j, "n_predict", -1, kMaxLen, &n_predict)) return e;
  if (n_predict && *n_predict == 0) {
    return Bad("n_predict", "'n_predict' must be -1 (until EOS or the context) or at least 1");
  }
  // Two length fields that disagree: which one the client meant is unknowable.
  {
    const std::pair<const char*, std::optional<int64_t>*> lengths[] = {
        {"max_tokens", &max_tokens},
        {"max_completion_tokens", &max_completion_tokens},
        {"n_predict", &n_predict}};
    const char* first = nullptr;
    int64_t value = 0;
    for (const auto& [name, v] : lengths) {
      if (!v->has_value()) continue;
      if (first != nullptr && **v != value) {
        return Bad(name, std::string("'") + name + "' (" + std::to_string(**v) + ") and '" + first +
                             "' (" + std::to_string(value) + ") disagree: give one length");
      }
      first = name;
      value = **v;
    }
  }
  r.max_tokens = max_completion_tokens ? *max_completion_tokens
                 : max_tokens          ? *max_tokens
                 : n_predict           ? *n_predict
                 : chat                ? ApiRequest::kUntilDone
                                       : 16;
  if (auto e = ReadInt(j, "n", 1, kMaxChoices, &n)) return e;
  r.n = n.value_or(1);
  if (j.contains("best_of") && !j["best_of"].is_null() &&
      !(j["best_of"].is_number_integer() && j["best_of"].get<int64_t>() == 1)) {
    return Unsupported("best_of", "'best_of' is not supported (only 1)");
  }
  std::optional<bool> echo;
  if (auto e = ReadBool(j, "echo", &echo)) return e;
  r.echo = echo.value_or(false);
  if (r.echo && chat) {
    return Unsupported("echo",
                       "'echo' applies to /v1/completions (chat responses do not repeat "
                       "the messages)");
  }
  // logprobs: an integer k (completions, the legacy API) or a boolean with top_logprobs = k
  // (chat).
  if (auto it = j.find("logprobs"); it != j.end() && !it->is_null()) {
    if (chat) {
      if (!it->is_boolean()) return Bad("logprobs", "'logprobs' must be a boolean (chat)");
      if (it->get<bool>()) r.logprobs = 0;
    } else if (it->is_boolean()) {
      if (it->get<bool>()) r.logprobs = 0;
    } else {
      std::optional<int64_t> k;
      if (auto e = ReadInt(j, "logprobs", 0, 20, &k)) return e;
      r.logprobs = static_cast<int32_t>(*k);
    }
  }
  if (auto it = j.find("top_logprobs"); it != j.end() && !it->is_null()) {
    std::optional<int64_t> k;
    if (auto e = ReadInt(j, "top_logprobs", 0, 20, &k)) return e;
    if (!chat && *k > 0) {
      return Unsupported("top_logprobs",
                         "'top_logprobs' is a chat field: completions take 'logprobs': k");
    }
    if (r.logprobs < 0 && *k > 0)
      return Bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (r.logprobs >= 0) r.logprobs = static_cast<int32_t>(*k);
  }
  if (r.echo && r.logprobs >= 0) {
    return Unsupported("logprobs",
                       "'logprobs' with 'echo' (the prompt's log-probabilities) is not supported");
  }
  if (auto it = j.find("suffix"); it != j.end() && !it->is_null()) {
    if (chat) {
      return Unsupported("suffix", "'suffix' (infilling) is a completions field, not a chat one");
    }
    if (!it->is_string()) return Bad("suffix", "'suffix' must be a string");
    if (r.echo) return Unsupported("suffix", "'suffix' with 'echo' is not supported");
    r.suffix = it->get<std::string>();
  }
  if (auto e = ReadOutputConstraint(body, j, &r.constraint)) return e;
  if (auto e = ReadTools(body, j, chat, &r.tools)) return e;
  if (auto it = j.find("logit_bias"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return Bad("logit_bias", "'logit_bias' must be an object");
    if (!it->empty()) return Unsupported("logit_bias", "'logit_bias' is not supported yet");
  }
  if (auto it = j.find("skip_special_tokens"); it != j.end() && !it->is_null()) {
    if (*it != true) {
      return Unsupported("skip_special_tokens",
                         "'skip_special_tokens' may only be true: special tokens are never "
                         "returned as text");
    }
  }
  std::optional<bool> cache_prompt, ignore_eos;
  if (auto e = ReadBool(j, "cache_prompt", &cache_prompt)) return e;
  if (auto e = ReadBool(j, "ignore_eos", &ignore_eos)) return e;
  r.ignore_eos = ignore_eos.value_or(false);
  std::optional<std::string> user;
  if (auto e = ReadString(j, "user", &user)) return e;
  r.user = user.value_or("");
  std::optional<double> repeat_penalty, repetition_penalty;
  if (auto e = ReadNumber(j, "repeat_penalty", 1e-6, 100, &repeat_penalty)) return e;
  if (auto e = ReadNumber(j, "repetition_penalty", 1e-6, 100, &repetition_penalty)) return e;
  if (repeat_penalty && repetition_penalty && *repeat_penalty != *repetition_penalty) {
    return Bad("repetition_penalty",
               "'repeat_penalty' (llama-server) and 'repetition_penalty' (vLLM) are the same "
               "penalty: give one");
  }
  if (auto e = ReadInt(j, "repeat_last_n", -1, kMaxLen, &r.repeat_last_n)) return e;
  r.repeat_penalty = repeat_penalty ? repeat_penalty : repetition_penalty;
  // vLLM's repetition_penalty looks at the whole prompt and output.
  if (repetition_penalty && !repeat_penalty && !r.repeat_last_n) r.repeat_last_n = -1;
  if (auto e = ReadNumber(j, "temperature", 0, 100, &r.temperature)) return e;
  if (auto e = ReadNumber(j, "top_p", 1e-9, 1, &r.top_p)) return e;
  if (auto e = ReadInt(j, "top_k", -1, kMaxLen, &top_k)) return e;
  r.top_k = top_k;
  if (auto e = ReadNumber(j, "min_p", 0, 1, &r.min_p)) return e;
  if (auto e = ReadNumber(j, "frequency_penalty", -2, 2, &r.frequency_penalty)) return e;
  if (auto e = ReadNumber(j, "presence_penalty", -2, 2, &r.presence_penalty)) return e;
  if (auto it = j.find("stop"); it != j.end() && !it->is_null()) {
    if (it->is_string()) {
      if (!it->get<std::string>().empty()) r.stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      if (it->size() > 4) return Bad("stop", "'stop' may hold at most 4 strings (OpenAI's limit)");
      for (const json& s : *it) {
        if (!s.is_string()) return Bad("stop", "'stop' must be a string or a list of strings");
        if (!s.get<std::string>().empty()) r.stop.push_back(s.get<std::string>());
      }
    } else {
      return Bad("stop", "'stop' must be a string or a list of strings");
    }
  }
  if (auto it = j.find("seed"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) return Bad("seed", "'seed' must be an integer");
    if (it->is_number_unsigned()) {
      r.seed = it->get<uint64_t>();
    } else if (it->get<int64_t>() == -1) {
      // -1: a random seed, as llama-server reads it.
    } else if (it->get<int64_t>() < 0) {
      return Bad("seed", "'seed' must be a non-negative integer (-1: random)");
    } else {
      r.seed = static_cast<uint64_t>(it->get<int64_t>());
    }
  }
  std::optional<bool> stream, x_canvas;
  if (auto e = ReadBool(j, "stream", &stream)) return e;
  r.stream = stream.value_or(false);
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return Bad("stream_options", "'stream_options' must be an object");
    std::optional<bool> usage;
    if (auto e = ReadBool(*it, "include_usage", &usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
    r.include_usage = usage.value_or(false);
  }
  // Extensions.
  if (auto e = ReadInt(j, "steps", 1, kMaxLen, &steps)) return e;
  if (auto e = ReadInt(j, "block_length", 1, kMaxLen, &block_length)) return e;
  r.steps = steps;
  r.block_length = block_length;
  if (auto e = ReadString(j, "remasking", &r.remasking)) return e;
  if (auto e = ReadInt(j, "denoising_steps", 1, kMaxLen, &r.denoising_steps)) return e;
  if (auto e = ReadInt(j, "small_block_size", 1, kMaxLen, &r.small_block_size)) return e;
  if (auto e = ReadNumber(j, "eb_threshold", 1e-9, 1e6, &r.eb_threshold)) return e;
  if (auto e = ReadNumber(j, "edit_threshold", 0, 1, &r.edit_threshold)) return e;
  if (auto e = ReadInt(j, "max_post_edit_steps", 0, 4096, &r.max_post_edit_steps)) return e;
  if (auto e = ReadString(j, "cache", &r.cache)) return e;
  if (auto e = ReadString(j, "commit", &r.commit)) return e;
  if (auto e = ReadNumber(j, "threshold", 1e-9, 1, &r.threshold)) return e;
  if (auto e = ReadNumber(j, "factor", 1e-9, 1e6, &r.factor)) return e;
  if (auto e = ReadNumber(j, "low_threshold", 0, 1, &r.low_threshold)) return e;
  if (auto e = ReadNumber(j, "cfg_scale", 0, 1e3, &r.cfg_scale)) return e;
  if (auto e = ReadBool(j, "early_stop", &r.early_stop)) return e;
  if (auto e = ReadBool(j, "separate_store", &r.separate_store)) return e;
  if (auto e = ReadString(j, "alg", &r.alg)) return e;
  if (r.alg && !DreamAlgFromName(*r.alg)) {
    return Bad("alg", "'alg' must be origin, maskgit_plus, topk_margin or entropy");
  }
  if (auto e = ReadNumber(j, "eps", 1e-9, 1 - 1e-9, &r.eps)) return e;
  if (auto e = ReadNumber(j, "alg_temp", 0, 1e3, &r.alg_temp)) return e;
  if (auto e = ReadNumber(j, "latency_target_ms", 1e-3, 1e9, &r.latency_target_ms)) return e;
  if (auto e = ReadNumber(j, "timeout", 1e-3, 1e7, &r.timeout_s)) return e;
  if (auto e = ReadBool(j, "x_canvas", &x_canvas)) return e;
  r.x_canvas = x_canvas.value_or(false);
  if (auto e = ReadString(j, "speculative", &r.speculative)) return e;
  if (r.speculative && *r.speculative != "none" && *r.speculative != "lookup" &&
      *r.speculative != "medusa" && *r.speculative != "eagle") {
    return Bad("speculative",
               "'speculative' must be \"none\", \"lookup\", \"medusa\" or \"eagle\"");
  }
  *out = std::move(r);
  return std::nullopt;
}

}  // namespace unmask::server
