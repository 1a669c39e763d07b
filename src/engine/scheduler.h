// The engine loop of the server (ARCHITECTURE.md "Scheduler"): one thread steps every loaded model
// in turn. Per model, each step is one StepBatch (engine/step.h): ONE forward for all its running
// requests —
//   AR: continuous batching (Orca, OSDI'22): requests join and leave between steps; a step feeds
//       each request's prompt (prefill) or its last token (plus drafts with prompt lookup);
//   diffusion (block decoder or Dream's sampler): batched denoising: every running request's
//       planned canvas window side by side, each with its own KV-cache slot;
// then each request's decoder consumes its logit rows and the committed text (Decoder::committed)
// is sent on the request's stream. Admission is FIFO per model, bounded by max_batch running
// requests and a token budget (positions per forward); the waiting queue is bounded (Submit fails
// when full). Cancelled and expired requests leave at the next step and their KV slot is cleared.
#ifndef UNMASK_ENGINE_SCHEDULER_H_
#define UNMASK_ENGINE_SCHEDULER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "decode/decoder_factory.h"
#include "engine/metrics.h"
#include "engine/request.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace unmask {

struct SchedulerOptions {
  int64_t max_batch = 8;              // running requests per model (KV-cache slots)
  int64_t max_queue = 64;             // waiting requests over all models; more: Submit fails
  int64_t max_batched_tokens = 4096;  // positions fed per forward (the token budget); a request
                                      // larger than the budget still runs, alone
};

// A model the scheduler serves (not owned; must outlive the scheduler).
struct EngineModel {
  std::string name;
  const Model* model = nullptr;
  const Tokenizer* tokenizer = nullptr;
};

// Forward time model of one model on this machine: ms = overhead_ms + ms_per_position * positions,
// fitted at AddModel from two timed forwards and refined by every forward the engine runs.
struct ForwardCostModel {
  double overhead_ms = 0;
  double ms_per_position = 0;
  double Ms(double positions) const { return overhead_ms + ms_per_position * positions; }
};

// Work of every forward a model has run since AddModel (the timing forwards excluded).
struct ForwardTotals {
  int64_t forwards = 0;
  int64_t positions = 0;
  double flops = 0;
  double bytes = 0;       // weights + KV cache + activations (ForwardStats::bytes)
  double forward_ms = 0;  // wall time inside Model::Forward
  // Mixture-of-experts models (zeros for dense ones), summed over the forwards (ForwardStats):
  int64_t moe_layer_forwards = 0;  // MoE layers run
  int64_t experts_hit = 0;         // distinct experts with rows, summed over the layers
  double expert_bytes = 0;         // bytes of the hit experts' weights (counted in `bytes`)
  // What uniform independent routing would hit, ModelConfig::ExpectedExpertsHit(positions of
  // each forward), summed like experts_hit: the measured routing's upper-bound baseline.
  double experts_uniform = 0;
};

// Live load of one model (for the router and /metrics).
struct EngineLoad {
  bool diffusion = false;         // a diffusion model, full-canvas or block (needs a mask token)
  bool block_diffusion = false;   // a block-diffusion (block-causal) model
  int64_t waiting = 0;            // queued, not yet running
  int64_t running = 0;            // in the running batch
  int64_t running_positions = 0;  // positions fed by the last forward
  int64_t max_batch = 0;
  ForwardCostModel cost;
  double diffusion_tokens_per_forward = 1;  // running average over finished diffusion requests
  int64_t tokens_per_forward_requests = 0;  // finished requests in that average (0: none yet)
  double last_forward_ms = 0;               // wall time of the last forward
  double mean_service_ms = 0;  // admission -> finish of completed requests (EMA, weight 0.2)
  ForwardTotals totals;
};

class Scheduler {
 public:
  // `metrics` may be null; not owned.
  Scheduler(SchedulerOptions options, MetricsRegistry* metrics);
  ~Scheduler();  // Shutdown()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Registers a model and measures its forward cost (two short forwards). Allowed while the loop
  // runs. Returns the model's index. Errors: InvalidArgument for a null model or tokenizer; any
  // forward or KV-cache error.
  StatusOr<size_t> AddModel(const EngineModel& m);
  size_t num_models() const;
  const EngineModel& model(size_t index) const;

  // Settles `req` for model `index` and builds its decoder (decode/decoder_factory.h): this is
  // the request's validation, done once. Errors: OutOfRange for a bad index; InvalidArgument /
  // OutOfRange from the factory (parameters, prompt ids, context).
  StatusOr<BuiltDecoder> Build(size_t index, const GenerationRequest& req) const;
  // Queues `req` for model `index` with the decoder Build made for it (null: built here).
  // Errors: Build's; ResourceExhausted when max_queue requests are waiting; FailedPrecondition
  // after Shutdown; OutOfRange for a bad index.
  StatusOr<std::shared_ptr<RequestStream>> Submit(size_t index, GenerationRequest req,
                                                  std::unique_ptr<Decoder> decoder = nullptr);

  EngineLoad Load(size_t index) const;
  // Starts the engine thread (idempotent).
  void Start();
  // Stops the thread; every waiting or running request ends with kAbort.
  void Shutdown();

 private:
  struct Pending {
    GenerationRequest req;
    std::unique_ptr<Decoder> decoder;
    std::shared_ptr<RequestStream> stream;
  };
  struct Active;
  struct ModelState;

  void Loop();
  // Moves admissible waiting requests of `ms` into its running batch; ends cancelled or expired
  // waiting ones.
  void Admit(ModelState& ms);
  // One StepBatch for all running requests of `ms`, then their text, canvas and finish events.
  void Step(ModelState& ms);
  // Ends cancelled and expired running requests; returns true when any remain.
  bool DropStopped(ModelState& ms);
  // Sends `text` (when non-empty) on a's stream and records TTFT / inter-token latency.
  void SendText(ModelState& ms, Active& a, std::string text);
  // Sends the kDone event, updates metrics, clears the KV slot.
  void Finish(ModelState& ms, Active& a, FinishReason reason, Status status = Status::Ok());
  void FinishPending(ModelState& ms, Pending& p, FinishReason reason);
  void RecordForward(ModelState& ms, const ForwardStats& fs);
  void UpdateGauges(ModelState& ms);

  SchedulerOptions options_;
  MetricsRegistry* metrics_;
  mutable std::mutex mu_;  // guards models_ (the vector), waiting queues, load fields, flags
  std::condition_variable cv_;
  std::vector<std::unique_ptr<ModelState>> models_;
  int64_t total_waiting_ = 0;
  bool shutdown_ = false;
  std::thread thread_;
};

}  // namespace unmask

#endif  // UNMASK_ENGINE_SCHEDULER_H_
