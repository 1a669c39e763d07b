// Parsing and validation of OpenAI request bodies (/v1/completions, /v1/chat/completions) into an
// ApiRequest, with unmask's documented extensions (docs/serving.md). No model is needed here:
// everything that depends on the model (prompt length, context) is checked later.
#ifndef UNMASK_TOOLS_SERVER_API_REQUEST_H_
#define UNMASK_TOOLS_SERVER_API_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

struct ApiRequest {
  bool chat = false;
  std::string model;
  // Completions: a text prompt, or token ids. Chat: messages.
  std::string prompt_text;
  std::vector<int32_t> prompt_ids;
  bool prompt_is_ids = false;
  std::vector<ChatMessage> messages;

  int64_t max_tokens = 16;  // completions default 16 (OpenAI); chat default 128
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> frequency_penalty;
  std::optional<double> presence_penalty;
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

  std::vector<std::string> ignored_fields;  // unknown top-level fields (logged)
};

// Deepest nesting of arrays and objects in `body` (strings skipped; a quick scan, not a
// validation). Request bodies deeper than kMaxJsonDepth are refused before parsing: parsing one
// nested array per byte of an 8 MiB body would take hundreds of MiB.
int JsonNestingDepth(const std::string& body);
inline constexpr int kMaxJsonDepth = 64;

// Parses `body` as a completions (chat = false) or chat completions request. Returns the error to
// send (400 for malformed JSON, wrong types, out-of-range values, n != 1) or nullopt.
std::optional<ApiError> ParseApiRequest(const std::string& body, bool chat, ApiRequest* out);

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_API_REQUEST_H_
