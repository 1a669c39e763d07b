// The engines `unmask bench arena` compares: AR, AR with each speculative drafter, the exact
// LLaDA reference and the accelerated diffusion modes (Fast-dLLM, dInfer), by name.
#ifndef UNMASK_TOOLS_CLI_ARENA_ARENA_MODES_H_
#define UNMASK_TOOLS_CLI_ARENA_ARENA_MODES_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "decode/diffusion_params.h"
#include "plan/planner.h"

namespace unmask::tools {

enum class ArenaDrafter { kNone, kLookup, kModel, kDiffusion };

struct ArenaMode {
  std::string name;         // "ar", "ar+lookup", "diffusion-exact", ...
  std::string description;  // the flags it corresponds to
  bool diffusion = false;   // runs the diffusion model (else the AR model)
  ArenaDrafter drafter = ArenaDrafter::kNone;
  // Through the server's engine loop (continuous batching / batched denoising) at every batch
  // size; false: the synchronous engine run (Engine::Run with a model drafter), batch 1 only.
  bool batched = true;
  DiffusionParams diffusion_params;  // cache and commit rule (gen/steps/block set per run)
  int32_t draft_max = 3;             // AR speculation: tokens drafted per step
};

// Every mode, in the default order.
std::vector<ArenaMode> ArenaModes();
// Names of the modes run by default.
std::vector<std::string> DefaultArenaModeNames();
// Errors: NotFound listing the known names.
StatusOr<ArenaMode> FindArenaMode(std::string_view name);

// The planner's description of `mode` with the statistics only a run can give: diffusion tokens
// per forward, AR+spec tokens per verify forward, and the drafter's cost relative to a target
// forward (0 for prompt lookup).
plan::EngineSpec ArenaPlannerSpec(const ArenaMode& mode, int64_t block_length,
                                  double tokens_per_forward, double draft_cost);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_ARENA_ARENA_MODES_H_
