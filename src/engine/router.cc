#include "engine/router.h"

#include <algorithm>
#include <cstdio>

namespace unmask {
namespace {

std::string Ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f ms", v);
  return buf;
}

// Forwards after the prefill of a block-diffusion request (router.h): n blocks, each of at most
// steps (+ 1 store forward when stores are separate) forwards, at least 1 (+ 1).
double BlockForwards(const BlockRoute& b, const EngineLoad& load, double blocks, int64_t tokens,
                     bool has_prefill) {
  const double store = b.separate_store ? 1.0 : 0.0;
  const double upper =
      blocks * (static_cast<double>(std::max<int64_t>(b.steps_per_block, 1)) + store);
  if (b.fixed_steps || load.tokens_per_forward_requests == 0) return upper;
  const double measured =
      static_cast<double>(tokens) / std::max(load.diffusion_tokens_per_forward, 1e-3) -
      (has_prefill && b.separate_store ? 1.0 : 0.0);
  return std::clamp(measured, (1 + store) * blocks, upper);
}

}  // namespace

RoutePrediction PredictRoute(const RouteRequest& req, const EngineLoad& load,
                             double shared_step_ms) {
  const double running = static_cast<double>(load.running);
  const double tokens = static_cast<double>(std::max<int64_t>(req.max_tokens, 1));
  double service = 0;
  double positions = 0;  // this request's positions fed over its whole life
  const double fed = static_cast<double>(load.running_positions);  // by the batch already
  if (load.block_diffusion) {
    const int64_t l = std::max<int64_t>(req.block.block_length, 1);
    const int64_t whole = req.prompt_tokens / l * l;  // the prompt's whole blocks
    const auto blocks =
        static_cast<double>((req.prompt_tokens + std::max<int64_t>(req.max_tokens, 1) + l - 1) / l -
                            req.prompt_tokens / l);
    const double after =
        BlockForwards(req.block, load, blocks, std::max<int64_t>(req.max_tokens, 1), whole > 0);
    const double block = static_cast<double>(l);
    const double w = static_cast<double>(whole);
    if (req.block.separate_store) {
      if (whole > 0) service += load.cost.Ms(fed + w) + shared_step_ms;
      service += after * (load.cost.Ms(fed + block) + shared_step_ms);
      positions = w + after * block;
    } else {
      // The first forward carries the prompt's whole blocks, each later block's first forward
      // the block before it.
      service += load.cost.Ms(fed + w + block) + (blocks - 1) * load.cost.Ms(fed + 2 * block) +
                 (after - blocks) * load.cost.Ms(fed + block) + after * shared_step_ms;
      positions = w + after * block + (blocks - 1) * block;
    }
  } else if (load.diffusion) {
    const DiffusionParams& p = req.diffusion;
    const double gen = static_cast<double>(std::max<int64_t>(p.gen_length, 1));
    const double nfe = p.commit == CommitRule::kFixed
                           ? static_cast<double>(std::max<int64_t>(p.steps, 1))
                           : gen / std::max(1.0, load.diffusion_tokens_per_forward);
    const double canvas = static_cast<double>(req.prompt_tokens) + gen;
    const double per_step =
        p.cache == CacheMode::kNone ? canvas : static_cast<double>(p.block_length);
    service = nfe * (load.cost.Ms(static_cast<double>(load.running_positions) + per_step) +
                     shared_step_ms);
    positions = nfe * per_step;
  } else {
    const double prompt = static_cast<double>(req.prompt_tokens);
    service = load.cost.Ms(prompt + running) + (tokens - 1) * load.cost.Ms(running + 1) +
              tokens * shared_step_ms;
    positions = prompt + tokens;
  }
  const double ahead = static_cast<double>(load.waiting) +
                       std::max(0.0, running + 1 - static_cast<double>(load.max_batch));
  const double queue = ahead / static_cast<double>(std::max<int64_t>(load.max_batch, 1)) *
                       std::max(service, load.mean_service_ms);
  return {queue + service, positions * load.cost.ms_per_position / tokens};
}

RouteDecision Route(const RouteRequest& req, std::span<const RouteCandidate> candidates) {
  RouteDecision d;
  std::vector<RoutePrediction> pred;
  for (const RouteCandidate& c : candidates) {
    RouteRequest mine = req;
    if (c.prompt_tokens >= 0) mine.prompt_tokens = c.prompt_tokens;
    if (c.max_tokens >= 0) mine.max_tokens = c.max_tokens;
    if (c.block) mine.block = *c.block;
    pred.push_back(PredictRoute(mine, c.load, c.shared_step_ms));
    d.predicted_ms.emplace_back(c.name, pred.back().latency_ms);
  }
  size_t best = 0;
  int meets = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (pred[i].latency_ms <= req.latency_target_ms) ++meets;
  }
  if (meets > 0) {
    bool found = false;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (pred[i].latency_ms > req.latency_target_ms) continue;
      if (!found || pred[i].compute_ms_per_token < pred[best].compute_ms_per_token) best = i;
      found = true;
    }
  } else {
    for (size_t i = 1; i < candidates.size(); ++i) {
      if (pred[i].latency_ms < pred[best].latency_ms) best = i;
    }
  }
  d.index = candidates[best].index;
  d.name = candidates[best].name;
  std::string others;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i == best) continue;
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s%s %s, %.3g ms/token", others.empty() ? "" : "; ",
                  candidates[i].name.c_str(), Ms(pred[i].latency_ms).c_str(),
                  pred[i].compute_ms_per_token);
    others += buf;
  }
  char head[256];
  std::snprintf(head, sizeof(head), "%s: predicted %s, %.3g ms of compute per token",
                d.name.c_str(), Ms(pred[best].latency_ms).c_str(), pred[best].compute_ms_per_token);
  const std::string target = Ms(req.latency_target_ms);
  if (candidates.size() == 1) {
    d.code = "single_model";
    d.reason = std::string(head) + " (the only model)";
  } else if (meets > 1) {
    d.code = "meets_target_cheapest";
    d.reason = std::string(head) + "; cheapest of the models within the " + target + " target (" +
               others + ")";
  } else if (meets == 1) {
    d.code = "only_one_meets_target";
    d.reason =
        std::string(head) + "; the only model within the " + target + " target (" + others + ")";
  } else {
    d.code = "none_meet_target_fastest";
    d.reason =
        std::string(head) + "; no model meets the " + target + " target, fastest (" + others + ")";
  }
  return d;
}

}  // namespace unmask
