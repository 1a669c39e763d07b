// The engine (ARCHITECTURE.md "Data flow of one request"): the loaded models, the decoder
// factory, the one step function (engine/step.h) and the scheduler that serves requests on its
// own thread. Tools create an Engine and drive it:
//   - synchronously: `generate` and `bench` build decoders with MakeDecoder and run them to
//     completion with Run (each step a StepBatch on the calling thread);
//   - served: `serve` and the arena call StartServing and submit requests to scheduler(); its
//     thread runs the same StepBatch for every model in turn.
#ifndef UNMASK_ENGINE_ENGINE_H_
#define UNMASK_ENGINE_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/decoder.h"
#include "decode/decoder_factory.h"
#include "engine/metrics.h"
#include "engine/request.h"
#include "engine/router.h"
#include "engine/scheduler.h"
#include "engine/step.h"
#include "model/loader.h"

namespace unmask {

// Work and timings of one synchronous run (one decoder or a batch). Times in milliseconds.
struct GenerationStats {
  int64_t prompt_tokens = 0;      // summed over the decoders
  int64_t generated_tokens = 0;   // AR: tokens generated; diffusion, Dream: gen_length (canvas)
  int64_t first_step_tokens = 0;  // AR: committed by the first forward (more than 1 drafting)
  int64_t nfe = 0;                // forward passes (a batched forward counts once)
  int64_t forward_positions = 0;  // positions fed, summed over forwards (CFG: both canvases)
  double ttft_ms = 0;             // start -> end of the first step (AR: the prefill)
  double forward_ms = 0;          // time inside Model::Forward
  double decode_ms = 0;           // time inside the decoders' Update (sampling, commit)
  double plan_ms = 0;             // time inside Plan (AR drafters run here)
  double total_ms = 0;            // wall time of the whole run
  double flops = 0;               // FLOPs of the forwards (ModelConfig::ForwardFlops)
  double bytes = 0;               // bytes the forwards moved (ForwardStats::bytes)
  // Mixture-of-experts models (zeros for dense ones), summed over the forwards:
  int64_t moe_layer_forwards = 0;  // MoE layers run (ForwardStats::moe_layers)
  int64_t experts_hit = 0;         // distinct experts with rows, per layer (ForwardStats)
  double expert_bytes = 0;         // bytes of the hit experts' weights (counted in `bytes`)
  SpeculativeStats speculative;    // AR with a drafter (summed)
  DrafterStats drafter;            // the AR decoders' drafters (summed; zeros without one)

  double tokens_per_second() const {
    return total_ms > 0 ? 1000.0 * static_cast<double>(generated_tokens) / total_ms : 0;
  }
  // Generated tokens per second after the first step (the decode phase; 0 when the first step
  // committed everything).
  double decode_tokens_per_second() const {
    const double ms = total_ms - ttft_ms;
    const int64_t n = generated_tokens - first_step_tokens;
    return n > 0 && ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0;
  }
  double tokens_per_forward() const {
    return nfe > 0 ? static_cast<double>(generated_tokens) / static_cast<double>(nfe) : 0;
  }
  double gflops_per_second() const { return forward_ms > 0 ? flops / forward_ms / 1e6 : 0; }
  // FLOPs per byte moved over the whole run (the roofline's x axis).
  double arithmetic_intensity() const { return bytes > 0 ? flops / bytes : 0; }
  // Mean distinct experts a MoE layer's forward read (0 for dense models).
  double experts_per_layer_forward() const {
    return moe_layer_forwards > 0
               ? static_cast<double>(experts_hit) / static_cast<double>(moe_layer_forwards)
               : 0;
  }
};

// Called after each decoder's Update with its state; returning false stops that decoder
// (Decoder::Stop: e.g. a stop string was found in its text).
using StepCallback = std::function<bool(const Decoder&, const DecodeStep&)>;

// Runs `decoders` on `model` until every one is Done, one StepBatch per step on the calling
// thread. Decoder i uses KV cache sequence i (a cache is made when any decoder needs one; AR
// decoders' sequences start empty). `buffers` (may be null) are reused across calls.
// Errors: InvalidArgument for an empty batch or a null decoder; the first decoder error or any
// Forward error, with the step.
StatusOr<GenerationStats> RunToCompletion(const Model& model, std::span<Decoder* const> decoders,
                                          const StepCallback& on_step,
                                          StepBuffers* buffers = nullptr);

struct EngineOptions {
  BackendOptions backend;  // the backend Engine::Create makes (device, threads, GEMM provider)
  SchedulerOptions scheduler;
};

class Engine {
 public:
  // Creates the engine and its backend from options.backend. Errors: CreateBackend's
  // (InvalidArgument for an unknown device or GEMM provider, Unimplemented for a device this
  // build lacks, FailedPrecondition when the provider's library cannot be loaded).
  static StatusOr<std::unique_ptr<Engine>> Create(EngineOptions options,
                                                  MetricsRegistry* metrics = nullptr);
  // An engine on `backend` (null: DefaultBackend(); options.backend is then not used).
  // `metrics` (may be null, not owned) receives the scheduler's metrics.
  explicit Engine(EngineOptions options = {}, MetricsRegistry* metrics = nullptr,
                  std::shared_ptr<Backend> backend = nullptr);
  ~Engine();  // stops the scheduler; every request left ends with kAbort
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The backend the engine loads models onto.
  const std::shared_ptr<Backend>& backend() const { return backend_; }
  // Loads the model file at `path` onto the engine's backend and adds it under `name`; returns
  // its index. `progress(done, total)` is called as tensors are prepared (may be empty).
  // Errors: LoadModel's (model/loader.h), naming the file.
  StatusOr<size_t> LoadModel(std::string name, const std::string& path, WeightMode mode,
                             std::function<void(int, int)> progress = nullptr);
  // Adds a model under `name` and returns its index; the engine owns it. Models are added before
  // StartServing (later ones are not served).
  size_t AddModel(std::string name, LoadedModel model);
  // The same for a model the caller owns (it must outlive the engine).
  size_t AddModel(std::string name, const LoadedModel* model);
  size_t num_models() const { return models_.size(); }
  const std::string& name(size_t index) const { return models_.at(index).name; }
  const LoadedModel& model(size_t index) const { return *models_.at(index).loaded; }
  // The model as the decoder factory sees it (config, mask/EOS/EOT ids, name).
  DecoderModel decoder_model(size_t index) const;

  // Settles `options` for model `index` and builds the decoder (decode/decoder_factory.h).
  StatusOr<BuiltDecoder> MakeDecoder(size_t index, std::span<const int32_t> prompt,
                                     const DecodeOptions& options) const;
  // RunToCompletion on model `index`.
  StatusOr<GenerationStats> Run(size_t index, std::span<Decoder* const> decoders,
                                const StepCallback& on_step, StepBuffers* buffers = nullptr) const;

  // Registers every model with the scheduler (measuring its forward cost) and starts the engine
  // thread; model index i is scheduler index i. Errors: Scheduler::AddModel's.
  Status StartServing();
  // Stops the scheduler (when started): every waiting or running request ends with kAbort.
  void Shutdown();
  bool serving() const { return scheduler_ != nullptr; }
  // After StartServing.
  Scheduler& scheduler() { return *scheduler_; }
  const Scheduler& scheduler() const { return *scheduler_; }

  // The router's choice among the models that can run a request: `settled[i]` is the request as
  // built for model i (its prompt tokenized with model i's tokenizer), or null when model i cannot
  // run it. The candidates' loads, the shared engine thread's cost and the diffusion parameters
  // come from the engine. Errors: InvalidArgument when no model can run it; FailedPrecondition
  // before StartServing.
  StatusOr<RouteDecision> Route(std::span<const GenerationRequest* const> settled,
                                double latency_target_ms) const;

 private:
  struct Entry {
    std::string name;
    std::shared_ptr<const LoadedModel> loaded;
  };
  EngineOptions options_;
  MetricsRegistry* metrics_;
  std::shared_ptr<Backend> backend_;
  std::vector<Entry> models_;
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace unmask

#endif  // UNMASK_ENGINE_ENGINE_H_
