// `unmask serve`: the HTTP front end (cpp-httplib) over the engine (engine/engine.h: its models,
// scheduler and router).
// Routes: POST /v1/completions, /v1/chat/completions, /tokenize, /detokenize; GET /v1/models,
// /health, /metrics, / (playground); Ollama's POST /api/generate, /api/chat, /api/show and GET
// /api/tags, /api/ps, /api/version. docs/serving.md is the user's reference.
#ifndef UNMASK_TOOLS_SERVER_SERVER_H_
#define UNMASK_TOOLS_SERVER_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/diffusion_params.h"
#include "engine/engine.h"
#include "engine/metrics.h"
#include "engine/router.h"
#include "grammar/token_constraint.h"
#include "model/eagle_head.h"
#include "model/loader.h"
#include "model/medusa_heads.h"
#include "server/api_request.h"
#include "server/http_gate.h"

namespace httplib {
class Server;
class Request;
class Response;
}  // namespace httplib

namespace unmask::server {

struct Exchange;  // server/response_stream.h

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  std::vector<std::string> model_paths;
  std::vector<std::string> aliases;  // model ids, in the order of model_paths (default: file stem)
  std::string chat_template_file;    // --chat-template-file: the chat template of the (one) model
  WeightMode weight_mode = WeightMode::kAuto;
  std::shared_ptr<Backend> backend;  // of every model; null: DefaultBackend()
  SchedulerOptions scheduler;
  DiffusionParams diffusion;  // defaults of diffusion requests (gen_length, steps unused)
  // Default temperature when a request gives none: the model file's recommended one
  // (general.sampling.temp, generation_config.json) unless temperature_given (serve
  // --temperature), else this (OpenAI: 1).
  double temperature = 1.0;
  bool temperature_given = false;
  // Tokens of a full-canvas diffusion request (LLaDA, Dream) that gives no max_tokens (chat):
  // the canvas costs every position on every step, so it is not the whole context.
  int64_t diffusion_max_tokens = 128;
  // llama-server's -c / --ctx-size: the context every request may use (0: each model's own; a
  // larger value is capped at the model's, with a warning at load).
  int64_t context_length = 0;
  // Non-empty: the /v1 endpoints, /tokenize, /detokenize and /metrics need the header
  // "Authorization: Bearer <api_key>" (401 invalid_api_key otherwise); /health, /v1/health and the
  // playground page stay open.
  std::string api_key;
  double latency_target_ms = 2000;  // router default
  double request_timeout_s = 600;   // default deadline
  double drain_timeout_s = 30;      // SIGTERM: how long running requests may finish (Drain)
  // SIGTERM: the least time the server stays up answering 503 + /health draining, so that a load
  // balancer's health checks see it before the port closes (HAProxy's inter 1 s x fall 2 + 1).
  double drain_grace_s = 3;
  bool speculative_lookup = false;  // AR default: prompt-lookup drafting
  bool speculative_medusa = false;  // AR default: Medusa drafting, for models with heads
  bool speculative_eagle = false;   // AR default: EAGLE drafting, for models with a draft layer
  // --draft-heads: "[MODEL_ID=]FILE" Medusa heads or EAGLE draft layers instead of the files
  // beside the models (server/draft_files.h).
  std::vector<std::string> draft_heads;
  // Threads that run requests (each streamed response holds one; slow and idle connections hold
  // none: http_gate.h). 0: max_queue + models x max_batch + 8.
  int http_threads = 0;
  size_t max_body_bytes = 8 << 20;
};

struct ServedModel {
  std::string id;
  std::string path;
  const LoadedModel* loaded = nullptr;  // owned by the engine
  size_t index = 0;                     // engine (and scheduler) model index
  int64_t context_length = 0;           // what requests may use: min(serve -c, the model's)
  // AR models: the Medusa heads of --draft-heads or found beside the model file
  // (MODEL.medusa.gguf), null when none; requests with "speculative": "medusa" draft with them.
  std::unique_ptr<const MedusaHeads> medusa_heads;
  // AR models: the EAGLE draft layer of --draft-heads or found beside the model file
  // (MODEL.eagle.gguf), null when none; requests with "speculative": "eagle" draft trees with it.
  std::unique_ptr<const EagleHead> eagle_head;
  // The vocabulary as a byte trie for structured output, built by the first request that needs
  // it (VocabTrie()).
  std::shared_ptr<const grammar::VocabTrie> VocabTrie() const {
    std::lock_guard<std::mutex> lock(vocab_mu);
    if (vocab_trie == nullptr) vocab_trie = grammar::VocabTrie::Build(*loaded->tokenizer);
    return vocab_trie;
  }
  mutable std::mutex vocab_mu;
  mutable std::shared_ptr<const grammar::VocabTrie> vocab_trie;
  // Any diffusion kind (full-canvas or block): decoded by denoising masks.
  bool diffusion() const { return loaded->model->config().needs_mask_token(); }
  // "ar" | "diffusion" | "block_diffusion" | "fast_dllm_v2" (x_unmask.engine, /v1/models,
  // metrics labels).
  const char* engine_name() const {
    const ModelConfig& c = loaded->model->config();
    if (c.is_block_diffusion())
      return c.architecture == "fast_dllm_v2" ? "fast_dllm_v2" : "block_diffusion";
    return c.is_diffusion() ? "diffusion" : "ar";
  }
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();

  // Binds the listening socket. Returns the port (the chosen one for port 0).
  // Errors: Unavailable-like FailedPrecondition naming host:port when binding fails.
  StatusOr<int> Bind();
  // Loads every model and starts the engine; /health turns 200 after it. `progress(i, n, id)` is
  // called before each model. Errors: the first model that fails to load, naming its file.
  Status LoadModels(const std::function<void(size_t, size_t, const std::string&)>& progress);
  // Serves until Stop() (blocks).
  void Serve();
  void Stop();
  // Graceful shutdown (SIGTERM, a rolling restart): new requests get 503 with Retry-After and
  // /health answers 503 {"status": "draining"} (so a load balancer stops sending here), while the
  // requests already admitted run to their end; returns when none is left or after `timeout_s`
  // (those still running are then aborted by Stop()), but not before drain_grace_s. Returns the
  // number still running.
  int64_t Drain(double timeout_s);
  bool ready() const { return ready_.load(); }
  bool draining() const { return draining_.load(); }

 private:
  void InstallRoutes();
  void HandleGeneration(const httplib::Request& req, httplib::Response& res, bool chat);
  void HandleTokenize(const httplib::Request& req, httplib::Response& res, bool detokenize);
  void HandleModels(httplib::Response& res);
  // The model a request names ("auto" -> routed later); nullptr when unknown.
  const ServedModel* FindModel(const std::string& id) const;
  // Prompt ids of `r` for model `m`, or the error to send.
  std::optional<ApiError> PromptIds(const ApiRequest& r, const ServedModel& m,
                                    std::vector<int32_t>* ids) const;
  // The engine request of `r` on `m` and the decoder the factory built for it (the request's one
  // validation), or the error to send.
  std::optional<ApiError> BuildGeneration(const ApiRequest& r, const ServedModel& m,
                                          GenerationRequest* g, BuiltDecoder* built) const;
  // Routes (model "auto"), builds and submits a parsed request: *out is the exchange whose
  // streams the response reads. The error to send otherwise (429: the queue is full).
  std::optional<ApiError> StartGeneration(ApiRequest& r, bool chat, SteadyClock::time_point arrival,
                                          std::shared_ptr<Exchange>* out);
  // Ollama's API (ollama_api.h): /api/generate (chat false) and /api/chat; /api/tags, /api/ps,
  // /api/show, /api/version.
  void HandleOllamaGeneration(const httplib::Request& req, httplib::Response& res, bool chat);
  void HandleOllamaModels(httplib::Response& res, bool running);
  void HandleOllamaShow(const httplib::Request& req, httplib::Response& res);
  // An OpenAI error object (429 with Retry-After).
  void SendError(httplib::Response& res, const ApiError& e);

  ServerOptions options_;
  std::unique_ptr<GatedServer> http_;  // cpp-httplib behind the connection gate (http_gate.h)
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;                    // models, scheduler, router inputs
  std::vector<std::unique_ptr<ServedModel>> models_;  // written before ready_ is set
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> open_responses_{0};  // generation responses not finished yet
  std::atomic<uint64_t> next_id_{1};
};

// The playground page (tools/server/playground/index.html, embedded at build time).
extern const char* const kPlaygroundHtml;

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_SERVER_H_
