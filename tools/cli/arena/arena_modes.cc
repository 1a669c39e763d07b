#include "cli/arena/arena_modes.h"

#include <algorithm>

#include "decode/drafter.h"

namespace unmask::tools {
namespace {

ArenaMode Diffusion(std::string name, std::string description, CacheMode cache, CommitRule commit) {
  ArenaMode m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.diffusion = true;
  m.diffusion_params.cache = cache;
  m.diffusion_params.commit = commit;
  return m;
}

ArenaMode Ar(std::string name, std::string description, ArenaDrafter drafter, bool batched,
             int32_t draft_max) {
  ArenaMode m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.drafter = drafter;
  m.batched = batched;
  m.draft_max = draft_max;
  return m;
}

ArenaMode Block(std::string name, std::string description, BlockRemasking remasking,
                double threshold) {
  ArenaMode m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.block = true;
  m.block_mode.remasking = remasking;
  m.block_mode.threshold = threshold;
  return m;
}

}  // namespace

std::vector<ArenaMode> ArenaModes() {
  ArenaMode factor = Diffusion("diffusion-dual-factor", "--cache dual --factor 1 (Fast-dLLM)",
                               CacheMode::kDual, CommitRule::kFactor);
  factor.diffusion_params.factor = 1.0;
  ArenaMode prefix =
      Diffusion("diffusion-prefix-threshold", "--cache prefix --threshold 0.9 (Fast-dLLM)",
                CacheMode::kPrefix, CommitRule::kThreshold);
  ArenaMode early = Diffusion("diffusion-dual-threshold-early-stop",
                              "--cache dual --threshold 0.9 --early-stop (Fast-dLLM + dInfer)",
                              CacheMode::kDual, CommitRule::kThreshold);
  early.diffusion_params.early_stop = true;
  return {
      Ar("ar", "greedy, one token per forward (continuous batching)", ArenaDrafter::kNone, true, 3),
      Ar("ar+lookup", "--spec lookup --draft-max 3 (prompt lookup, continuous batching)",
         ArenaDrafter::kLookup, true, 3),
      Ar("ar+draft", "--spec draft --draft-max 3 with the AR draft twin (batch 1)",
         ArenaDrafter::kModel, false, 3),
      Ar("ar+diffusion", "--spec diffusion --draft-max 4 with the diffusion twin (batch 1)",
         ArenaDrafter::kDiffusion, false, 4),
      Ar("ar+medusa",
         "--spec medusa --draft-max 3: the Medusa heads beside the AR model (continuous batching)",
         ArenaDrafter::kMedusa, true, 3),
      Ar("ar+eagle",
         "--spec eagle: the EAGLE draft layer beside the AR model, EAGLE-2 trees of 6 nodes "
         "(depth 4, top-k 2), continuous batching",
         ArenaDrafter::kEagle, true, EagleDrafterParams{}.total_tokens),
      Diffusion("diffusion-exact", "steps = gen_length, no cache (LLaDA reference)",
                CacheMode::kNone, CommitRule::kFixed),
      Diffusion("diffusion-dual-threshold", "--cache dual --threshold 0.9 (Fast-dLLM)",
                CacheMode::kDual, CommitRule::kThreshold),
      factor,
      Diffusion("diffusion-dual-credit", "--cache dual --commit credit (dInfer)", CacheMode::kDual,
                CommitRule::kCredit),
      prefix,
      early,
      // Block diffusion: every strategy is token-identical to SDAR's reference generate
      // (decoding.md "Block diffusion"); the default one is the reference's default settings.
      Block("block-default",
            "SDAR's defaults: --remasking low_confidence_dynamic --threshold 0.85, one denoising "
            "step per block position",
            BlockRemasking::kLowConfidenceDynamic, -1),
      Block("block-static",
            "--remasking low_confidence_static: one token per denoising step (the baseline)",
            BlockRemasking::kLowConfidenceStatic, -1),
      Block("block-dynamic-0.9", "--remasking low_confidence_dynamic --threshold 0.9",
            BlockRemasking::kLowConfidenceDynamic, 0.9),
      Block("block-dynamic-0.7", "--remasking low_confidence_dynamic --threshold 0.7",
            BlockRemasking::kLowConfidenceDynamic, 0.7),
      Block("block-dynamic-0.5", "--remasking low_confidence_dynamic --threshold 0.5",
            BlockRemasking::kLowConfidenceDynamic, 0.5),
  };
}

std::vector<std::string> DefaultArenaModeNames(bool with_block) {
  std::vector<std::string> names = {"ar",
                                    "ar+lookup",
                                    "ar+draft",
                                    "ar+diffusion",
                                    "ar+medusa",
                                    "ar+eagle",
                                    "diffusion-exact",
                                    "diffusion-dual-threshold",
                                    "diffusion-dual-factor",
                                    "diffusion-dual-credit"};
  if (with_block) {
    for (const char* n : {"block-default", "block-static", "block-dynamic-0.9", "block-dynamic-0.7",
                          "block-dynamic-0.5"}) {
      names.push_back(n);
    }
  }
  return names;
}

StatusOr<ArenaMode> FindArenaMode(std::string_view name) {
  std::string known;
  for (const ArenaMode& m : ArenaModes()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  return NotFoundError("unknown arena mode '" + std::string(name) + "' (known: " + known + ")");
}

plan::EngineSpec ArenaPlannerSpec(const ArenaMode& mode, int64_t block_length,
                                  double tokens_per_forward, double draft_cost) {
  plan::EngineSpec e;
  e.name = mode.name;
  if (mode.block) {
    // Tokens per forward over all of a request's forwards. The arena runs the decoder's default
    // fused schedule (no prefill or store forwards of their own: one token per step gives 1).
    e.kind = plan::EngineKind::kBlockDiffusion;
    e.block_length = std::max<int64_t>(block_length, 1);
    e.tokens_per_forward =
        std::clamp(tokens_per_forward, 1e-3, static_cast<double>(e.block_length));
    return e;
  }
  if (mode.diffusion) {
    e.kind = plan::EngineKind::kDiffusion;
    e.block_length = block_length;
    e.tokens_per_forward = std::clamp(tokens_per_forward, 1.0,
                                      static_cast<double>(std::max<int64_t>(block_length, 1)));
    switch (mode.diffusion_params.cache) {
      case CacheMode::kNone:
        e.cache = plan::DiffusionCache::kNone;
        break;
      case CacheMode::kPrefix:
        e.cache = plan::DiffusionCache::kPrefix;
        break;
      // Vicinity refresh feeds the block plus a window: costed as the dual cache (a lower bound).
      case CacheMode::kDual:
      case CacheMode::kVicinity:
        e.cache = plan::DiffusionCache::kDual;
        break;
    }
    return e;
  }
  if (mode.drafter == ArenaDrafter::kNone) {
    e.kind = plan::EngineKind::kAr;
    return e;
  }
  e.kind = plan::EngineKind::kArSpeculative;
  e.draft_max = mode.draft_max;
  e.tokens_per_verify =
      std::clamp(tokens_per_forward, 1.0, static_cast<double>(mode.draft_max + 1));
  e.draft_cost = draft_cost;
  // One pass proposes the whole draft: the diffusion drafter's forward, the Medusa heads; an EAGLE
  // layer makes one per tree level; a draft model one per token (draft_max).
  switch (mode.drafter) {
    case ArenaDrafter::kDiffusion:
    case ArenaDrafter::kMedusa:
      e.draft_passes = 1;
      break;
    case ArenaDrafter::kEagle:
      e.draft_passes = EagleDrafterParams{}.depth;
      break;
    default:
      break;
  }
  return e;
}

}  // namespace unmask::tools
