// The workload router behind `model: "auto"` (ARCHITECTURE.md "Router"; SERVING.md §4.3 [rec]):
// for each loaded model it predicts the request's end-to-end latency from the scheduler's forward
// cost model (ms = overhead + ms_per_position * positions, measured on this machine) and the live
// load, then
//   1. among the models predicted to meet the latency target, picks the one that spends the least
//      compute per returned token (positions fed per token x ms per position): the cheaper
//      engine serves it when both are fast enough;
//   2. when none meets the target, picks the lowest predicted latency.
// Predictions (ms), with B the running batch and P the positions the batch already feeds:
//   AR:        queue + prefill (prompt + B positions) + (max_tokens - 1) decode steps of B + 1
//   diffusion: queue + NFE x forward(P + positions per step), NFE = steps (fixed commit rule) or
//              gen_length / measured tokens per forward (dynamic rules); positions per step = the
//              canvas (no cache) or the block (cached modes)
//   block diffusion (SDAR, Fast-dLLM v2; blocks of L positions aligned to position 0), with
//              n = the blocks decoded (the first holds the prompt's tail) and W = the prompt's
//              whole blocks' positions:
//              separate stores (SDAR's schedule, Fast-dLLM v2): queue + [prefill forward(P + W),
//              when W > 0] + F x forward(P + L), F = n x (steps per block + 1 store forward) for
//              a fixed quota schedule (SDAR's static and sequential strategies), else (threshold
//              rules) max_tokens / the measured tokens per forward of the model's finished
//              requests minus the prefill, clamped to [2n, n x (steps + 1)], or n x (steps + 1)
//              before any request finished (the rule commits at least the quota per step: an
//              upper bound);
//              fused (SDAR's default here, decoder_block_diffusion.h): queue + forward(P + W + L)
//              + (n - 1) x forward(P + 2L) (each block's first forward also stores the one
//              before) + (F - n) x forward(P + L), F = n x steps (fixed quota), else max_tokens /
//              the measured tokens per forward clamped to [n, n x steps], or n x steps
//   queue:     requests ahead / max_batch x the larger of the request's own service time and the
//              measured mean service time of the model's completed requests
// and every step also waits for the other models' forwards (one engine thread steps them all).
#ifndef UNMASK_ENGINE_ROUTER_H_
#define UNMASK_ENGINE_ROUTER_H_

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "decode/diffusion_params.h"
#include "engine/scheduler.h"

namespace unmask {

// How a block-diffusion engine would run a request (Engine::Route settles it per model with the
// factory's rules).
struct BlockRoute {
  int64_t block_length = 4;     // L: positions of a block, fed by every forward after the prefill
  int64_t steps_per_block = 4;  // denoising forwards per block, at most (SDAR: denoising_steps;
                                // Fast-dLLM v2: L, one token per step at worst)
  bool fixed_steps = true;      // every block takes exactly steps_per_block (SDAR static and
                                // sequential); false: threshold rules, measured
  bool separate_store = true;   // a prefill forward and a store forward per block (SDAR's own
                                // schedule, Fast-dLLM v2); false: SDAR fused (the default)
};

struct RouteRequest {
  int64_t prompt_tokens = 0;
  int64_t max_tokens = 16;
  double latency_target_ms = 2000;
  DiffusionParams diffusion;  // as the diffusion engine would run it (gen_length, steps resolved)
  BlockRoute block;           // as a block-diffusion engine would run it (RouteCandidate::block)
};

struct RouteCandidate {
  size_t index = 0;  // scheduler model index
  std::string name;
  EngineLoad load;
  // Time the other models add to each of this model's steps: one engine thread steps every model
  // in turn, so a step waits for the other models' forwards (the sum of their last forward times
  // while they have running requests).
  double shared_step_ms = 0;
  // The request's prompt length with this model's tokenizer (-1: RouteRequest::prompt_tokens).
  int64_t prompt_tokens = -1;
  // This block-diffusion model's settled parameters (none: RouteRequest::block).
  std::optional<BlockRoute> block = std::nullopt;
  // Tokens the request will generate on this model (-1: RouteRequest::max_tokens).
  int64_t max_tokens = -1;
};

// The length the router assumes for a request that runs until EOS or the context
// (GenerationRequest::until_done): the context left is an upper bound no answer comes near, so
// the prediction uses at most this many tokens.
inline constexpr int64_t kRouteUntilDoneTokens = 256;

struct RoutePrediction {
  double latency_ms = 0;            // predicted end-to-end
  double compute_ms_per_token = 0;  // machine time per returned token
};
// The prediction for `req` on a model with `load` (the cost model above; load.block_diffusion
// selects the block-diffusion one, else load.diffusion the full-canvas one). shared_step_ms: see
// RouteCandidate.
RoutePrediction PredictRoute(const RouteRequest& req, const EngineLoad& load,
                             double shared_step_ms = 0);

struct RouteDecision {
  size_t index = 0;    // chosen candidate's model index
  std::string name;    // chosen model
  std::string code;    // "meets_target_cheapest" | "only_one_meets_target" |
                       // "none_meet_target_fastest" | "single_model"
  std::string reason;  // one human-readable sentence with the numbers
  std::vector<std::pair<std::string, double>> predicted_ms;  // per candidate
};

// `candidates` must not be empty.
RouteDecision Route(const RouteRequest& req, std::span<const RouteCandidate> candidates);

}  // namespace unmask

#endif  // UNMASK_ENGINE_ROUTER_H_
