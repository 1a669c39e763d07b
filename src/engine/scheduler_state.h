// Internal to the scheduler (scheduler.cc, scheduler_step.cc): the state of one running request
// and of one served model, and the parameters a request runs with.
#ifndef UNMASK_ENGINE_SCHEDULER_STATE_H_
#define UNMASK_ENGINE_SCHEDULER_STATE_H_

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "decode/decoder_ar.h"
#include "decode/decoder_diffusion.h"
#include "decode/drafter.h"
#include "engine/scheduler.h"
#include "engine/text_stream.h"

namespace unmask {

inline double MsBetween(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The diffusion parameters a request runs with: the canvas is max_tokens rounded up to a multiple
// of block_length; steps <= 0 means one step per token (the LLaDA default, steps == gen_length).
DiffusionParams RequestDiffusionParams(const GenerationRequest& req);
// The AR parameters a request runs with (n_predict = max_tokens).
ArParams RequestArParams(const GenerationRequest& req);
// The committed prefix of a diffusion canvas: the generated positions before the first one still
// masked (what can be streamed).
inline std::span<const int32_t> CommittedPrefix(const DiffusionDecoder& d) {
  const auto gen = d.generated();
  const auto first_mask = std::find(gen.begin(), gen.end(), d.token_ids().mask);
  return gen.first(static_cast<size_t>(first_mask - gen.begin()));
}

struct Scheduler::Active {
  GenerationRequest req;
  std::shared_ptr<RequestStream> stream;
  int32_t slot = 0;
  std::unique_ptr<Drafter> drafter;
  std::optional<ArDecoder> ar;
  std::optional<DiffusionDecoder> diffusion;
  std::optional<TextStream> text;
  RequestStats stats;
  SteadyClock::time_point last_text;
  bool sent_text = false;
};

struct Scheduler::ModelState {
  EngineModel m;
  bool diffusion = false;
  std::deque<Pending> waiting;                   // guarded by mu_
  EngineLoad load;                               // guarded by mu_
  std::vector<std::unique_ptr<Active>> running;  // engine thread only
  std::vector<char> slot_used;
  std::optional<KvCache> kv;
  Workspace ws;
  Tensor logits;
  BatchPlan batch;
  double tpf_sum = 0;  // diffusion tokens per forward of finished requests
  int64_t tpf_count = 0;
  const char* engine() const { return diffusion ? "diffusion" : "ar"; }
};

}  // namespace unmask

#endif  // UNMASK_ENGINE_SCHEDULER_STATE_H_
