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
//   queue:     requests ahead / max_batch x the larger of the request's own service time and the
//              measured mean service time of the model's completed requests
// and every step also waits for the other models' forwards (one engine thread steps them all).
#ifndef UNMASK_ENGINE_ROUTER_H_
#define UNMASK_ENGINE_ROUTER_H_

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "decode/diffusion_params.h"
#include "engine/scheduler.h"

namespace unmask {

struct RouteRequest {
  int64_t prompt_tokens = 0;
  int64_t max_tokens = 16;
  double latency_target_ms = 2000;
  DiffusionParams diffusion;  // as the diffusion engine would run it (gen_length, steps resolved)
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
};

struct RoutePrediction {
  double latency_ms = 0;            // predicted end-to-end
  double compute_ms_per_token = 0;  // machine time per returned token
};
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
