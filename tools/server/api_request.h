// Parsing and validation of OpenAI request bodies (/v1/completions, /v1/chat/completions) into an
// ApiRequest, with the llama-server and vLLM extensions unmask honours and its own (docs/serving.md
// "Request fields"). Every field is either honoured or refused with a 400 naming it: a field that
// is not known, or a value unmask cannot honour (a JSON schema keyword it cannot compile,
// logit_bias), is an error, never silently dropped. No model is needed here: everything that
// depends on the model (prompt length, context, which decoder uses which field) is checked later.
#ifndef UNMASK_TOOLS_SERVER_API_REQUEST_H_
#define UNMASK_TOOLS_SERVER_API_REQUEST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace unmask::server {

// An OpenAI-style error: HTTP status and the fields of {"error": {...}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // "" -> null
  std::string code;   // "" -> null
};

// A 400 about `param` (type invalid_request_error, code null) / one with a code
// ("unsupported_parameter" by default): a known field whose value cannot be honoured.
ApiError Bad(const std::string& param, const std::string& message);
ApiError Unsupported(const std::string& param, const std::string& message,
                     const std::string& code = "unsupported_parameter");

// Structured output (api_constraint.h): the grammar every choice's text must match.
struct OutputConstraint {
  std::shared_ptr<const grammar::Grammar> grammar;
  std::string field;  // the request field it came from: "response_format", "guided_json", ...
  std::string kind;   // "json_object" | "json_schema" | "grammar" | "choice"
};

struct ApiRequest {
  bool chat = false;
  std::string model;  // "" when absent: the only loaded model (as llama-server), else an error
  // Completions: a text prompt, or token ids. Chat: messages.
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  bool prompt_is_ids = false;
  std::vector<ChatMessage> messages;

  // Tokens to generate: max_completion_tokens, max_tokens or n_predict (llama-server) when given;
  // else 16 for completions (OpenAI, vLLM). kUntilDone (chat without a length, n_predict -1):
  // until EOS or the context for AR and block-diffusion models, a canvas of
  // ServerOptions::diffusion_max_tokens for full-canvas diffusion models.
  static constexpr int64_t kUntilDone = -1;
  int64_t max_tokens = 16;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> frequency_penalty;
  std::optional<double> presence_penalty;
  // llama-server's repeat_penalty (over the last repeat_last_n tokens, default 64) or vLLM's
  // repetition_penalty (over the whole prompt and output unless repeat_last_n is given).
  std::optional<double> repeat_penalty;
  std::optional<int64_t> repeat_last_n;
  bool ignore_eos = false;  // llama-server, vLLM: generate past end-of-generation tokens
  std::string user;         // OpenAI: an end-user id, logged
  int64_t n = 1;            // choices: n requests on one model (seeds seed, seed + 1, ...)
  bool echo = false;        // completions: the prompt text before each choice's text
  // Completions: infilling, the text after the generated span (OpenAI's suffix; the text between
  // prompt and suffix is returned). nullopt when absent or null.
  std::optional<std::string> suffix;
  // -1: off; k >= 0: each token's log-probability and k alternatives (completions: logprobs = k;
  // chat: logprobs true, top_logprobs = k). Diffusion models: at commit time.
  int32_t logprobs = -1;
  std::vector<std::string> stop;
  std::optional<uint64_t> seed;
  bool stream = false;
  bool include_usage = false;

  // Extensions: diffusion parameters (unset: the server's defaults).
  std::optional<int64_t> steps;
  std::optional<int64_t> block_length;
  std::optional<std::string> remasking;
  std::optional<int64_t> denoising_steps;      // block-diffusion models (SDAR)
  std::optional<double> eb_threshold;          // block-diffusion models, entropy_bounded
  std::optional<double> edit_threshold;        // block-diffusion models, joint_threshold
  std::optional<int64_t> max_post_edit_steps;  // block-diffusion models, joint_threshold
  std::optional<bool> separate_store;          // block-diffusion models: SDAR's store forwards
  std::optional<int64_t> small_block_size;     // Fast-dLLM v2 models
  std::optional<std::string> cache;
  std::optional<std::string> commit;
  std::optional<double> threshold;
  std::optional<double> factor;
  std::optional<double> low_threshold;
  std::optional<double> cfg_scale;
  std::optional<bool> early_stop;
  // Extensions: Dream's reference sampler (Dream models without block-decoder fields).
  std::optional<std::string> alg;  // origin | maskgit_plus | topk_margin | entropy
  std::optional<double> eps;
  std::optional<double> alg_temp;
  // Extensions: routing, deadline, streaming, speculation.
  std::optional<double> latency_target_ms;
  std::optional<double> timeout_s;
  bool x_canvas = false;
  std::optional<std::string> speculative;  // "none" | "lookup"
  // Structured output: response_format json_object / json_schema, llama-server's grammar and
  // json_schema, vLLM's guided_json / guided_choice / guided_grammar (AR models only).
  std::optional<OutputConstraint> constraint;
  // Tool calling (chat): the tools offered and how they may be called; nullopt without tools or
  // with tool_choice "none" (then the tools are left out of the prompt).
  std::optional<chat::ToolRequest> tools;
};

// Deepest nesting of arrays and objects in `body` (strings skipped; a quick scan, not a
// validation). Request bodies deeper than kMaxJsonDepth are refused before parsing: parsing one
// nested array per byte of an 8 MiB body would take hundreds of MiB.
int JsonNestingDepth(const std::string& body);
inline constexpr int kMaxJsonDepth = 64;
// The most choices (n) one request may ask for.
inline constexpr int64_t kMaxChoices = 64;

// Every top-level field a request may carry (OpenAI's, the accepted llama-server and vLLM ones,
// unmask's extensions), sorted.
std::span<const std::string> AcceptedFields();

// Parses `body` as a completions (chat = false) or chat completions request. Returns the error to
// send or nullopt: 400 for malformed JSON, wrong types, out-of-range values, an unknown field
// (code "unknown_parameter", with the closest accepted name), a value that cannot be honoured
// (code "unsupported_parameter": n above kMaxChoices, echo on chat, echo with logprobs, a JSON
// schema keyword the compiler does not support, guided_regex, tools on completions, logit_bias,
// skip_special_tokens false), a malformed grammar or schema.
std::optional<ApiError> ParseApiRequest(const std::string& body, bool chat, ApiRequest* out);

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_API_REQUEST_H_
