// The engines `unmask bench arena` compares: AR, AR with each speculative drafter, the exact
// LLaDA reference, the accelerated diffusion modes (Fast-dLLM, dInfer) and the block-diffusion
// (SDAR) strategies, by name.
#ifndef UNMASK_TOOLS_CLI_ARENA_ARENA_MODES_H_
#define UNMASK_TOOLS_CLI_ARENA_ARENA_MODES_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "decode/block_params.h"
#include "decode/diffusion_params.h"
#include "plan/planner.h"

namespace unmask::tools {

// kMedusa / kEagle: the Medusa heads or EAGLE draft layer beside the AR model (MODEL.medusa.gguf,
// MODEL.eagle.gguf), batched like lookup.
enum class ArenaDrafter { kNone, kLookup, kModel, kDiffusion, kMedusa, kEagle };

// A block-diffusion mode's SDAR decoding (decode/block_params.h): the strategy, its threshold and
// the denoising steps per block; the block length is the model's trained one.
struct ArenaBlockMode {
  BlockRemasking remasking = BlockRemasking::kLowConfidenceDynamic;
  double threshold = -1;        // low_confidence_dynamic's threshold; < 0: SDAR's 0.85
  int64_t denoising_steps = 0;  // per block; 0: the factory's default, one per block position
};

struct ArenaMode {
  std::string name;         // "ar", "ar+lookup", "diffusion-exact", "block-default", ...
  std::string description;  // the flags it corresponds to
  bool diffusion = false;   // runs the full-canvas diffusion model (LLaDA/Dream)
  bool block = false;       // runs the block-diffusion model (SDAR); neither: the AR model
  ArenaDrafter drafter = ArenaDrafter::kNone;
  // Through the server's engine loop (continuous batching / batched denoising) at every batch
  // size; false: the synchronous engine run (Engine::Run with a model drafter), batch 1 only.
  bool batched = true;
  DiffusionParams diffusion_params;  // cache and commit rule (gen/steps/block set per run)
  int32_t draft_max = 3;             // AR speculation: tokens drafted per step
  ArenaBlockMode block_mode;         // block: the SDAR strategy
};

// Every mode, in the default order.
std::vector<ArenaMode> ArenaModes();
// Names of the modes run by default; the block modes (block-*) only with `with_block` (a block
// model was given).
std::vector<std::string> DefaultArenaModeNames(bool with_block = false);
// Errors: NotFound listing the known names.
StatusOr<ArenaMode> FindArenaMode(std::string_view name);

// The planner's description of `mode` with the statistics only a run can give: diffusion and
// block-diffusion tokens per forward, AR+spec tokens per verify forward, and the drafter's cost
// relative to a target forward (0 for prompt lookup). block_length: the diffusion mode's block, or
// the block model's trained block for a block mode.
plan::EngineSpec ArenaPlannerSpec(const ArenaMode& mode, int64_t block_length,
                                  double tokens_per_forward, double draft_cost);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_ARENA_ARENA_MODES_H_
