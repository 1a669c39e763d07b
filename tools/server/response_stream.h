// The HTTP side of one generation request: the streams of its choices and how their events
// become an OpenAI response, streamed (SSE chunks, interleaved by choice index, an SSE comment
// after 200 ms of silence) or whole (a single space after 200 ms without an event and at least
// every second, until the body is ready, which lets the handler notice a client that went away).
// Written from httplib content providers.
#ifndef UNMASK_TOOLS_SERVER_RESPONSE_STREAM_H_
#define UNMASK_TOOLS_SERVER_RESPONSE_STREAM_H_

#include <httplib.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "engine/request.h"
#include "engine/router.h"
#include "server/api_response.h"
#include "tokenizer/tokenizer.h"

namespace unmask::server {

// `j` as one line of JSON (invalid UTF-8 from byte-level pieces replaced, never thrown).
// Bodies are ordered_json: keys in the order written (OpenAI's top_logprobs dicts are most
// likely first).
std::string Dump(const nlohmann::ordered_json& j);

// Everything the content provider needs, kept alive by the provider's shared_ptr.
struct Exchange {
  std::vector<std::shared_ptr<RequestStream>> streams;  // one per choice (n)
  ResponseHead head;
  const char* engine = "ar";
  bool stream_mode = false;
  bool include_usage = false;
  std::string echo;       // completions with echo: the prompt text, before each choice's text
  bool logprobs = false;  // the request asked for log-probabilities
  int32_t last_prompt_token = -1;  // the token the first generated piece continues
  int32_t mask_id = -1;
  const Tokenizer* tokenizer = nullptr;
  std::optional<RouteDecision> route;
  std::string log_prefix;
  // Tool calling: the tools of the request (replies are parsed into tool_calls) and the format of
  // the model's template.
  std::optional<chat::ToolRequest> tools;
  chat::ToolCallFormat tool_format = chat::ToolCallFormat::kGeneric;
  // Whole responses: when the last keep-alive space was written (NextEvent).
  std::chrono::steady_clock::time_point last_keep_alive{};
  // Released with the exchange, when its response is over (Server::Drain waits for these).
  std::shared_ptr<void> open_token;
  void CancelAll() {
    for (auto& s : streams) s->Cancel();
  }
};

// Collects every choice of a whole (non-streaming) response and returns its body (*status: its
// HTTP status), or nullopt when the client is gone (a failed keep-alive write; `sink` null: no
// keep-alive, for HTTP/1.0).
std::optional<std::string> CollectWhole(Exchange& x, httplib::DataSink* sink, int* status);
// The whole streaming response; false when the client is gone.
bool ProvideStream(Exchange& x, httplib::DataSink& sink);
// The whole non-streaming response; false when the client is gone.
bool ProvideWhole(Exchange& x, httplib::DataSink& sink);

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_RESPONSE_STREAM_H_
