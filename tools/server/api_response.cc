#include "server/api_response.h"

namespace unmask::server {

using json = nlohmann::ordered_json;

std::string ErrorBody(const ApiError& e) {
  json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
  return json{{"error", err}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

ApiError MakeError(int status, std::string message, std::string type, std::string param) {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  if (type.empty()) {
    type = status == 404   ? "not_found_error"
           : status == 429 ? "rate_limit_error"
           : status == 503 ? "service_unavailable"
           : status >= 500 ? "internal_error"
                           : "invalid_request_error";
  }
  e.type = std::move(type);
  e.param = std::move(param);
  return e;
}

const char* ApiFinishReason(FinishReason r) { return r == FinishReason::kStop ? "stop" : "length"; }

json UsageJson(const RequestStats& s) {
  return {{"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.completion_tokens},
          {"total_tokens", s.prompt_tokens + s.completion_tokens}};
}

json XUnmaskJson(const ResponseHead& head, const char* engine, FinishReason finish,
                 const RequestStats& s, const std::optional<RouteDecision>& route) {
  json x = {{"model", head.model},
            {"engine", engine},
            {"nfe", s.nfe},
            {"tokens_per_forward", s.tokens_per_forward()},
            {"forward_positions", s.forward_positions},
            {"queue_ms", s.queue_ms},
            {"ttft_ms", s.ttft_ms >= 0 ? json(s.ttft_ms) : json(nullptr)},
            {"total_ms", s.total_ms},
            {"finish_detail", std::string(FinishReasonName(finish))}};
  if (s.drafted > 0) {
    x["speculative"] = {{"drafted", s.drafted}, {"accepted", s.accepted}};
  }
  if (route) {
    json predicted = json::object();
    for (const auto& [name, ms] : route->predicted_ms) predicted[name] = ms;
    x["router"] = {{"choice", route->name},
                   {"code", route->code},
                   {"reason", route->reason},
                   {"predicted_ms", predicted}};
  }
  return x;
}

json CompletionBody(const ResponseHead& head, const std::vector<ChoiceResult>& choices,
                    const json& usage, const json& x_unmask) {
  json all = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const bool calls = choices[i].tool_calls.is_array() && !choices[i].tool_calls.empty();
    json choice = {{"index", i},
                   // A reply cut by max_tokens stays "length" (its last call may be cut).
                   {"finish_reason", calls && choices[i].finish == FinishReason::kStop
                                         ? "tool_calls"
                                         : ApiFinishReason(choices[i].finish)}};
    if (head.chat) {
      choice["message"] = {
          {"role", "assistant"},
          {"content", calls && choices[i].text.empty() ? json(nullptr) : json(choices[i].text)}};
      if (calls) choice["message"]["tool_calls"] = choices[i].tool_calls;
    } else {
      choice["text"] = choices[i].text;
    }
    choice["logprobs"] = choices[i].logprobs;
    all.push_back(std::move(choice));
  }
  return {{"id", head.id},           {"object", head.chat ? "chat.completion" : "text_completion"},
          {"created", head.created}, {"model", head.model},
          {"choices", all},          {"usage", usage},
          {"x_unmask", x_unmask}};
}

json ChunkBody(const ResponseHead& head, const std::string* text, bool first, const char* finish,
               int64_t index) {
  json choice = {{"index", index},
                 {"finish_reason", finish ? json(finish) : json(nullptr)},
                 {"logprobs", nullptr}};
  if (head.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (text != nullptr) delta["content"] = *text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text != nullptr ? *text : "";
  }
  return {{"id", head.id},
          {"object", head.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", head.created},
          {"model", head.model},
          {"choices", json::array({choice})},
          {"usage", nullptr}};
}

json ToolCallsChunkBody(const ResponseHead& head, const json& tool_calls, int64_t index) {
  json deltas = json::array();
  for (size_t k = 0; k < tool_calls.size(); ++k) {
    json d = tool_calls.at(k);
    d["index"] = k;
    deltas.push_back(std::move(d));
  }
  json choice = {{"index", index},
                 {"finish_reason", nullptr},
                 {"logprobs", nullptr},
                 {"delta", {{"tool_calls", deltas}}}};
  return {{"id", head.id},       {"object", "chat.completion.chunk"}, {"created", head.created},
          {"model", head.model}, {"choices", json::array({choice})},  {"usage", nullptr}};
}

json UsageChunkBody(const ResponseHead& head, const json& usage, const json& x_unmask) {
  return {{"id", head.id},
          {"object", head.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", head.created},
          {"model", head.model},
          {"choices", json::array()},
          {"usage", usage},
          {"x_unmask", x_unmask}};
}

}  // namespace unmask::server
