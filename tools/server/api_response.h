// JSON bodies of the OpenAI API responses (completion, chat completion, stream chunks, errors),
// with unmask's `x_unmask` extension object (docs/serving.md "Responses").
#ifndef UNMASK_TOOLS_SERVER_API_RESPONSE_H_
#define UNMASK_TOOLS_SERVER_API_RESPONSE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/router.h"
#include "server/api_request.h"

namespace unmask::server {

// {"error": {"message", "type", "param", "code"}}.
std::string ErrorBody(const ApiError& e);
ApiError MakeError(int status, std::string message, std::string type = "", std::string param = "");

// What every response of one request shares.
struct ResponseHead {
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;    // the model that ran
  bool chat = false;
};

// OpenAI finish_reason of an engine finish ("stop" | "length"; deadline -> "length"); a reply
// parsed into tool calls that stopped by itself finishes with "tool_calls" instead.
const char* ApiFinishReason(FinishReason r);

nlohmann::ordered_json UsageJson(const RequestStats& s);
// x_unmask: model, engine, nfe, tokens_per_forward, forward_positions, queue_ms, ttft_ms, total_ms,
// finish_detail (deadline), speculative counters, router (when routed).
nlohmann::ordered_json XUnmaskJson(const ResponseHead& head, const char* engine,
                                   FinishReason finish, const RequestStats& s,
                                   const std::optional<RouteDecision>& route);

// One choice of a response (a request with n > 1 has n).
struct ChoiceResult {
  std::string text;
  FinishReason finish = FinishReason::kStop;
  nlohmann::ordered_json logprobs;  // null, or OpenAI's logprobs object
  // Chat with tools: null, or the parsed calls [{"id", "type": "function", "function": {"name",
  // "arguments"}}] (then an empty content is null, and finish_reason is "tool_calls" unless the
  // reply was cut: "length").
  nlohmann::ordered_json tool_calls;
};

// The non-streaming body: choices[i] has index i.
nlohmann::ordered_json CompletionBody(const ResponseHead& head,
                                      const std::vector<ChoiceResult>& choices,
                                      const nlohmann::ordered_json& usage,
                                      const nlohmann::ordered_json& x_unmask);
// A streaming chunk of choice `index`: `text` (nullptr: none), the first chat chunk carries the
// role, `finish` (nullptr: none yet).
nlohmann::ordered_json ChunkBody(const ResponseHead& head, const std::string* text, bool first,
                                 const char* finish, int64_t index = 0);
// The chunk that carries choice `index`'s tool calls whole: delta.tool_calls[k] = {"index": k,
// "id", "type", "function": {"name", "arguments"}} (clients accumulate deltas; one is complete).
nlohmann::ordered_json ToolCallsChunkBody(const ResponseHead& head,
                                          const nlohmann::ordered_json& tool_calls, int64_t index);
// The usage chunk (empty choices).
nlohmann::ordered_json UsageChunkBody(const ResponseHead& head, const nlohmann::ordered_json& usage,
                                      const nlohmann::ordered_json& x_unmask);

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_API_RESPONSE_H_
