// The router's policy (engine/router.h) on constructed loads: cheapest model within the latency
// target, the only one within it, the fastest when none is, the load's effect, and the
// block-diffusion cost model.
#include "engine/router.h"

#include <gtest/gtest.h>

namespace unmask {
namespace {

EngineLoad Ar() {
  EngineLoad l;
  l.diffusion = false;
  l.max_batch = 8;
  l.cost = {1.0, 0.01};  // 1 ms per forward + 0.01 ms per position
  return l;
}

EngineLoad Diffusion() {
  EngineLoad l;
  l.diffusion = true;
  l.max_batch = 8;
  l.cost = {1.0, 0.01};
  return l;
}

EngineLoad Block() {
  EngineLoad l;
  l.diffusion = true;  // as the scheduler reports every model that needs a mask token
  l.block_diffusion = true;
  l.max_batch = 8;
  l.cost = {1.0, 0.01};
  return l;
}

RouteRequest Req(double target_ms) {
  RouteRequest r;
  r.prompt_tokens = 10;
  r.max_tokens = 64;
  r.latency_target_ms = target_ms;
  r.diffusion.gen_length = 64;
  r.diffusion.block_length = 32;
  r.diffusion.steps = 16;  // 4 tokens per forward
  return r;
}

TEST(RouterTest, PredictionsFollowTheCostModel) {
  const RouteRequest r = Req(1000);
  // AR idle: prefill of 10 positions + 63 steps of 1 position.
  EXPECT_NEAR(PredictRoute(r, Ar()).latency_ms, (1 + 0.1) + 63 * (1 + 0.01), 1e-9);
  // Diffusion idle, no cache: 16 forwards of the 74-position canvas.
  EXPECT_NEAR(PredictRoute(r, Diffusion()).latency_ms, 16 * (1 + 0.74), 1e-9);
  // Compute per token: positions fed per returned token x ms per position.
  EXPECT_NEAR(PredictRoute(r, Ar()).compute_ms_per_token, 74 * 0.01 / 64, 1e-12);
  EXPECT_NEAR(PredictRoute(r, Diffusion()).compute_ms_per_token, 16 * 74 * 0.01 / 64, 1e-12);
  // A full batch and a queue add waiting time.
  EngineLoad busy = Ar();
  busy.running = 8;
  busy.waiting = 8;
  EXPECT_GT(PredictRoute(r, busy).latency_ms, 2 * PredictRoute(r, Ar()).latency_ms);
}

TEST(RouterTest, QueueUsesTheMeasuredServiceTimeAndOtherModelsSlowEachStep) {
  const RouteRequest r = Req(1000);
  EngineLoad full = Ar();
  full.running = 8;
  full.waiting = 7;  // 8 ahead of it
  const double own = PredictRoute(r, full).latency_ms;
  full.mean_service_ms = 5000;  // the requests ahead are long ones
  // own = queue (8 ahead / 8 x its service) + its service; now the queue is 8 / 8 x 5000 ms.
  EXPECT_NEAR(PredictRoute(r, full).latency_ms, 5000 + own / 2, 1e-6);
  // Another model's 10 ms forwards are added to each of the 64 AR steps.
  EXPECT_NEAR(PredictRoute(r, Ar(), 10).latency_ms - PredictRoute(r, Ar()).latency_ms, 640, 1e-6);
}

TEST(RouterTest, PicksTheCheapestWithinTheTarget) {
  const RouteCandidate c[] = {{0, "llada", Diffusion()}, {1, "ar", Ar()}};
  const RouteDecision d = Route(Req(1000), c);
  EXPECT_EQ(d.name, "ar");
  EXPECT_EQ(d.index, 1u);
  EXPECT_EQ(d.code, "meets_target_cheapest");
  EXPECT_NE(d.reason.find("llada"), std::string::npos) << d.reason;
  ASSERT_EQ(d.predicted_ms.size(), 2u);
}

TEST(RouterTest, PicksTheOnlyModelWithinATightTarget) {
  // AR needs ~65 ms, diffusion ~28 ms: a 40 ms target leaves diffusion.
  const RouteCandidate c[] = {{0, "llada", Diffusion()}, {1, "ar", Ar()}};
  const RouteDecision d = Route(Req(40), c);
  EXPECT_EQ(d.name, "llada");
  EXPECT_EQ(d.code, "only_one_meets_target");
}

TEST(RouterTest, PicksTheFastestWhenNoneMeetsTheTarget) {
  const RouteCandidate c[] = {{0, "llada", Diffusion()}, {1, "ar", Ar()}};
  const RouteDecision d = Route(Req(1), c);
  EXPECT_EQ(d.name, "llada");
  EXPECT_EQ(d.code, "none_meet_target_fastest");
}

TEST(RouterTest, LoadMovesTheChoice) {
  // A busy diffusion engine (big batch already fed) loses the tight-target request to AR.
  EngineLoad busy = Diffusion();
  busy.running = 8;
  busy.waiting = 20;
  busy.running_positions = 600;
  const RouteCandidate c[] = {{0, "llada", busy}, {1, "ar", Ar()}};
  EXPECT_EQ(Route(Req(40), c).name, "ar");
}

TEST(RouterTest, EachCandidateUsesItsOwnPromptLength) {
  RouteCandidate c[] = {{0, "ar", Ar()}};
  const double base = Route(Req(1000), c).predicted_ms[0].second;
  c[0].prompt_tokens = 1010;  // another tokenizer: 1000 more prompt positions to prefill
  EXPECT_NEAR(Route(Req(1000), c).predicted_ms[0].second - base, 1000 * 0.01, 1e-9);
}

TEST(RouterTest, BlockDiffusionWithAFixedQuotaSchedule) {
  RouteRequest r = Req(1000);    // prompt 10, 64 tokens
  r.block = {4, 4, true, true};  // SDAR block 4, 4 steps per block, static, separate stores
  // The prompt's 2 whole blocks are prefilled (8 positions); blocks 2..18 are decoded: 17 blocks
  // (the first holds the prompt's last 2 tokens) of 4 denoising + 1 store forward of 4 positions.
  const double forwards = 17 * 5;
  const RoutePrediction p = PredictRoute(r, Block());
  EXPECT_NEAR(p.latency_ms, (1 + 0.08) + forwards * (1 + 0.04), 1e-9);
  EXPECT_NEAR(p.compute_ms_per_token, (8 + forwards * 4) * 0.01 / 64, 1e-12);
  // Not the full-canvas model: no DiffusionParams are read.
  RouteRequest other = r;
  other.diffusion.steps = 1;
  other.diffusion.cache = CacheMode::kNone;
  EXPECT_DOUBLE_EQ(PredictRoute(other, Block()).latency_ms, p.latency_ms);
  // Another model's 10 ms forwards delay each of its 86 forwards (prefill included).
  EXPECT_NEAR(PredictRoute(r, Block(), 10).latency_ms - p.latency_ms, 86 * 10, 1e-6);
  // A prompt shorter than a block has no prefill: 64 + 3 = 67 positions in 17 blocks.
  r.prompt_tokens = 3;
  EXPECT_NEAR(PredictRoute(r, Block()).latency_ms, 17 * 5 * (1 + 0.04), 1e-9);
}

TEST(RouterTest, BlockDiffusionThresholdRulesUseTheMeasuredTokensPerForward) {
  RouteRequest r = Req(1000);
  r.block = {4, 4, false, true};  // low_confidence_dynamic, separate stores
  EngineLoad l = Block();
  // Nothing measured yet: the upper bound, one token per step (17 blocks x 5 forwards).
  EXPECT_NEAR(PredictRoute(r, l).latency_ms, 1.08 + 85 * 1.04, 1e-9);
  // Measured 1 token per forward: 64 forwards, the prefill among them.
  l.tokens_per_forward_requests = 5;
  l.diffusion_tokens_per_forward = 1.0;
  EXPECT_NEAR(PredictRoute(r, l).latency_ms, 1.08 + 63 * 1.04, 1e-9);
  // 3 per forward would mean 20 forwards: at least one step and the store per block (34).
  l.diffusion_tokens_per_forward = 3.0;
  EXPECT_NEAR(PredictRoute(r, l).latency_ms, 1.08 + 34 * 1.04, 1e-9);
  // 0.5 per forward would exceed the upper bound: held at 85.
  l.diffusion_tokens_per_forward = 0.5;
  EXPECT_NEAR(PredictRoute(r, l).latency_ms, 1.08 + 85 * 1.04, 1e-9);
}

TEST(RouterTest, BlockDiffusionFusedScheduleHasNoPrefillOrStoreForwards) {
  RouteRequest r = Req(1000);     // prompt 10, 64 tokens
  r.block = {4, 4, true, false};  // SDAR block 4, 4 steps per block, static, fused
  // 17 blocks x 4 denoising forwards: the first also feeds the prompt's 8 whole-block positions
  // (12 positions), each later block's first also the block before it (8), the others 4.
  const RoutePrediction p = PredictRoute(r, Block());
  EXPECT_NEAR(p.latency_ms, (1 + 0.12) + 16 * (1 + 0.08) + 51 * (1 + 0.04), 1e-9);
  EXPECT_NEAR(p.compute_ms_per_token, (8 + 68 * 4 + 16 * 4) * 0.01 / 64, 1e-12);
  EXPECT_NEAR(PredictRoute(r, Block(), 10).latency_ms - p.latency_ms, 68 * 10, 1e-6);
  // Threshold rules: measured 2 tokens per forward -> 32 forwards, at least 1 per block (17).
  r.block.fixed_steps = false;
  EngineLoad l = Block();
  l.tokens_per_forward_requests = 3;
  l.diffusion_tokens_per_forward = 2.0;
  EXPECT_NEAR(PredictRoute(r, l).latency_ms, 1.12 + 16 * 1.08 + 15 * 1.04, 1e-9);
  l.diffusion_tokens_per_forward = 8.0;  // 8 forwards: held at one per block
  EXPECT_NEAR(PredictRoute(r, l).latency_ms, 1.12 + 16 * 1.08, 1e-9);
}

TEST(RouterTest, EachBlockCandidateUsesItsOwnBlockParameters) {
  RouteCandidate c[] = {{0, "sdar-4", Block()}, {1, "sdar-8", Block()}, {2, "ar", Ar()}};
  c[0].block = BlockRoute{4, 4, true, true};
  c[1].block = BlockRoute{8, 8, true, true};
  const RouteDecision d = Route(Req(1000), c);
  ASSERT_EQ(d.predicted_ms.size(), 3u);
  // Block 4: 1.08 + 85 x 1.04; block 8: prefill of 8, then 9 blocks (10 + 64 = 74 -> 10 blocks,
  // 1 whole in the prompt) of 9 forwards of 8 positions.
  EXPECT_NEAR(d.predicted_ms[0].second, 1.08 + 85 * 1.04, 1e-9);
  EXPECT_NEAR(d.predicted_ms[1].second, 1.08 + 81 * 1.08, 1e-9);
  // AR (65 ms, 74 positions for 64 tokens) is both faster and cheaper than either block model.
  EXPECT_EQ(d.name, "ar");
  EXPECT_EQ(d.code, "meets_target_cheapest");
  // No model meets 50 ms: the fastest, AR again.
  const RouteDecision tight = Route(Req(50), c);
  EXPECT_EQ(tight.name, "ar");
  EXPECT_EQ(tight.code, "none_meet_target_fastest");
}

TEST(RouterTest, SingleCandidate) {
  const RouteCandidate c[] = {{3, "ar", Ar()}};
  const RouteDecision d = Route(Req(1), c);
  EXPECT_EQ(d.index, 3u);
  EXPECT_EQ(d.code, "single_model");
}

}  // namespace
}  // namespace unmask
