// Running one arena point: a mode at one batch size (concurrent requests), closed loop — `batch`
// clients each submit a request, wait for it, submit the next, until `requests` have run — through
// the server's engine loop (src/engine/scheduler.h), or, for the batch-1 speculative modes with a
// model drafter, through Engine::Run on the calling thread (the same StepBatch). Temperature 0
// throughout.
#ifndef UNMASK_TOOLS_CLI_ARENA_ARENA_RUN_H_
#define UNMASK_TOOLS_CLI_ARENA_ARENA_RUN_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/arena/arena_modes.h"
#include "core/parallel.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "model/eagle_head.h"
#include "model/loader.h"
#include "model/medusa_heads.h"

namespace unmask::tools {

struct ArenaModels {
  const LoadedModel* diffusion = nullptr;  // the diffusion twin
  const LoadedModel* ar = nullptr;         // the AR twin
  const LoadedModel* draft = nullptr;      // the AR draft model (may be null: ar+draft skipped)
  const LoadedModel* block = nullptr;      // the block-diffusion model (null: no block modes)
  const MedusaHeads* medusa = nullptr;     // beside the AR model (null: ar+medusa skipped)
  const EagleHead* eagle = nullptr;        // beside the AR model (null: ar+eagle skipped)
};

struct ArenaSettings {
  int64_t gen_length = 64;    // max_tokens (diffusion: also the canvas)
  int64_t block_length = 32;  // full-canvas diffusion modes (block modes use the model's block)
};

// The model `mode` runs: the block model for block modes, the diffusion model for diffusion
// modes, else the AR model (may be null when not loaded).
const LoadedModel* ArenaModelOf(const ArenaMode& mode, const ArenaModels& models);

// The request the arena submits for `mode` (the i-th of its point): temperature 0, max_tokens =
// gen_length; diffusion modes take the cache and commit rule of the mode and settings.block_length;
// block modes the SDAR strategy of the mode and the model's trained block length; ar+medusa and
// ar+eagle the heads of `models` (which must hold them and the AR model for those modes).
GenerationRequest MakeArenaRequest(const ArenaMode& mode, const ArenaSettings& settings,
                                   const std::vector<int32_t>& prompt, int64_t i,
                                   const ArenaModels& models = {});

// One request's outcome.
struct ArenaRequest {
  size_t prompt_index = 0;
  RequestStats stats;  // times in ms from submission
  std::vector<int32_t> output;
};

struct ArenaPoint {
  std::string mode;
  int64_t batch = 0;
  double wall_ms = 0;  // first submission -> last completion
  std::vector<ArenaRequest> requests;
  ForwardTotals totals;  // target model forwards
  int64_t drafted = 0, accepted = 0;
  int64_t completion_tokens() const;
};

// f() computed on a temporary thread (core/parallel.h RunOnTemporaryThread): the arena keeps the
// calling thread free of OpenMP pools so that each engine thread has the cores to itself.
template <typename F>
auto OnTemporaryThread(F f) -> decltype(f()) {
  std::optional<decltype(f())> out;
  RunOnTemporaryThread([&] { out.emplace(f()); });
  return std::move(*out);
}

// Called after each finished request with (finished, requests).
using ArenaProgress = std::function<void(int64_t, int64_t)>;

// Runs `requests` requests (prompts taken in order, cycling) with `batch` concurrent clients.
// Errors: InvalidArgument for batch < 1 or a batched-only mode with batch > 1 (see
// ArenaMode::batched) or a missing model; any engine error of a request.
StatusOr<ArenaPoint> RunArenaPoint(const ArenaMode& mode, const ArenaModels& models,
                                   const ArenaSettings& settings,
                                   const std::vector<std::vector<int32_t>>& prompts, int64_t batch,
                                   int64_t requests, const ArenaProgress& progress);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_ARENA_ARENA_RUN_H_
