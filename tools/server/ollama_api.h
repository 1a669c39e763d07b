// Ollama's REST API (github.com/ollama/ollama, docs/api.md) over the same engine as the OpenAI
// one: a request to /api/generate or /api/chat is translated into the OpenAI request body the
// server already validates (so every field is honoured or refused the same way), and the
// response is written in Ollama's shape: NDJSON lines {"model", "created_at", "response" |
// "message", "done": false} and a last line with done true, done_reason and the durations (ns).
//
// Field mapping (Ollama -> OpenAI / unmask):
//   model ("name" or "name:latest")          -> model ("auto" routes, as on /v1)
//   prompt, suffix, system, raw               -> /api/generate: without raw and with a chat
//                                                template, a chat request (system + user
//                                                messages), as Ollama renders its template;
//                                                otherwise a completion of `prompt` (`system`
//                                                then refused); `suffix` makes it a completion
//   messages (images refused), tools          -> messages (tool_calls' arguments as objects ->
//                                                JSON text; tool_name -> name), tools
//   format "json" | a JSON schema             -> response_format json_object | json_schema
//   stream (default true, as Ollama)          -> stream
//   options.num_predict (-1: until done)      -> max_tokens (absent: until EOS or the context, or
//                                                a canvas of serve --diffusion-max-tokens)
//   options.temperature, top_p, top_k, min_p, seed, stop, repeat_penalty, repeat_last_n,
//   presence_penalty, frequency_penalty       -> the same fields
//   options.steps, block_length, remasking, threshold, cfg_scale, ... (unmask's diffusion fields)
//                                             -> the same fields
//   options.num_ctx, num_thread, num_gpu, main_gpu, num_batch, num_keep, use_mmap, use_mlock,
//   numa, low_vram                            -> accepted, no effect (how the runner is set up;
//                                                serve -c / -t decide here)
//   options.typical_p, tfs_z, mirostat*, penalize_newline -> 400 unless neutral (not
//                                                implemented)
//   keep_alive                                -> accepted (models stay loaded); context (the old
//                                                KV-cache tokens), images, think, template -> 400
#ifndef UNMASK_TOOLS_SERVER_OLLAMA_API_H_
#define UNMASK_TOOLS_SERVER_OLLAMA_API_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "model/config.h"
#include "server/api_request.h"

namespace unmask::server {

// A translated request: the OpenAI body and which endpoint it is for.
struct OllamaRequest {
  // The /v1 request body (model included), keys in the client's order (a schema's properties
  // come out in that order; the tools are rendered into the prompt as given).
  nlohmann::ordered_json openai;
  bool openai_chat = false;  // /v1/chat/completions (else /v1/completions)
  bool stream = true;
};

// The model name of an Ollama request without its ":latest" tag (other tags are kept, and then
// name no loaded model).
std::string OllamaModelName(const std::string& name);

// Translates the body of /api/generate (ollama_chat false) or /api/chat. `has_template`: the
// named model has a chat template (decides what /api/generate without raw becomes).
// Errors (400, `param` naming the Ollama field): not an object, a field of the wrong type, an
// unknown top-level field or option (with the closest accepted name), an option or field that
// cannot be honoured (above).
std::optional<ApiError> TranslateOllamaRequest(const nlohmann::ordered_json& body, bool ollama_chat,
                                               bool has_template, OllamaRequest* out);

// An error of the OpenAI request a translated Ollama request became, in the Ollama request's
// field names: response_format -> format, max_tokens -> options.num_predict (param and the
// quoted names in the message).
ApiError InOllamaTerms(ApiError e);

// Ollama's time format: RFC 3339 in UTC with nanoseconds, e.g. "2026-12-03T19:20:00.123456789Z".
std::string OllamaTime(std::chrono::system_clock::time_point t);

// The `details` object of /api/tags, /api/ps and /api/show: format gguf, family (the
// architecture), parameter_size ("2.95M", "8.0B"), quantization_level (the most common weight
// type, e.g. "F16", "Q4_1").
nlohmann::ordered_json OllamaDetails(const ModelConfig& config, const std::string& weight_type);

// One streamed line before the last: {"model", "created_at", "response": text, "done": false}
// (generate) or {..., "message": {"role": "assistant", "content": text}, "done": false} (chat).
nlohmann::ordered_json OllamaChunk(const std::string& model, bool chat, const std::string& text);

// The statistics of the last line: done_reason ("stop" | "length"), total_duration,
// load_duration (0: models are loaded at start-up), prompt_eval_count, prompt_eval_duration (the
// time to the first token), eval_count, eval_duration (ns).
void AddOllamaStats(const RequestStats& stats, FinishReason finish, nlohmann::ordered_json* line);

// An empty /api/generate prompt or /api/chat without messages: Ollama loads the model and
// answers at once with done_reason "load" (Open WebUI preloads models this way).
bool IsOllamaLoadRequest(const nlohmann::ordered_json& body, bool ollama_chat);

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_OLLAMA_API_H_
