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

#include "core/clock.h"
#include "decode/decoder.h"
#include "engine/scheduler.h"
#include "engine/step.h"
#include "engine/text_stream.h"

namespace unmask {

struct Scheduler::Active {
  GenerationRequest req;
  std::shared_ptr<RequestStream> stream;
  int32_t slot = 0;
  std::unique_ptr<Decoder> decoder;
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
  StepBuffers buffers;
  std::vector<StepSlot> slots;  // [running.size()] this step's slots
  double tpf_sum = 0;           // diffusion tokens per forward of finished requests
  int64_t tpf_count = 0;
  const char* engine() const { return diffusion ? "diffusion" : "ar"; }
};

}  // namespace unmask

#endif  // UNMASK_ENGINE_SCHEDULER_STATE_H_
