// The roofline planner: its projections follow the arithmetic-intensity argument of SERVING.md
// §4.3 on hand-checkable cases, and bad inputs are errors.
#include "plan/planner.h"

#include <gtest/gtest.h>

#include <cmath>

#include "plan/model_presets.h"

namespace unmask::plan {
namespace {

MachineRates H100Like() {
  MachineRates m;
  m.flops_per_second = 989e12;
  m.bytes_per_second = 3.35e12;
  m.weight_bytes_per_parameter = 2;
  m.kv_bytes_per_element = m.activation_bytes_per_element = 2;
  return m;
}

ModelConfig Llama8b() { return FindModelPreset("llama-3-8b").value().config; }
ModelConfig Llada8b() { return FindModelPreset("llada-8b").value().config; }

EngineSpec Ar() { return {.name = "ar", .kind = EngineKind::kAr}; }
EngineSpec Exact() {
  return {
      .name = "exact", .kind = EngineKind::kDiffusion, .block_length = 32, .tokens_per_forward = 1};
}

TEST(PlannerTest, PresetsHaveTheirPublishedSizes) {
  EXPECT_NEAR(static_cast<double>(Llama8b().NumParameters()) / 1e9, 8.03, 0.01);
  EXPECT_NEAR(static_cast<double>(Llada8b().NumParameters()) / 1e9, 8.02, 0.01);
  EXPECT_NEAR(static_cast<double>(FindModelPreset("dream-7b")->config.NumParameters()) / 1e9, 7.62,
              0.01);
  EXPECT_FALSE(Llama8b().is_diffusion());
  EXPECT_TRUE(Llada8b().is_diffusion());
  EXPECT_EQ(FindModelPreset("gpt-5").status().code(), StatusCode::kNotFound);
  EXPECT_NE(FindModelPreset("gpt-5").status().message().find("llada-8b"), std::string::npos);
}

TEST(PlannerTest, ArBatchOneIsBoundByReadingTheWeightsOncePerToken) {
  // SERVING.md §4.3: an 8B model in bf16 (16 GB) on 3.35 TB/s decodes ~209 tokens/s at batch 1.
  const Workload w{.prompt_length = 1, .gen_length = 512};
  const Projection p = Project(Llama8b(), Ar(), w, H100Like(), 1).value();
  const double weight_ms = 1000.0 * 2.0 * static_cast<double>(Llama8b().NumParameters()) / 3.35e12;
  EXPECT_NEAR(p.tpot_ms, weight_ms, 0.05 * weight_ms);
  EXPECT_NEAR(p.tokens_per_second, 1000.0 / weight_ms, 0.06 * 1000.0 / weight_ms);
  EXPECT_NEAR(p.arithmetic_intensity(), 1.0, 0.1);  // ~1 FLOP per byte
  EXPECT_LT(p.compute_bound_fraction, 0.01);
  EXPECT_DOUBLE_EQ(p.tokens_per_forward, 1.0);
  EXPECT_DOUBLE_EQ(p.forwards, 512);
}

TEST(PlannerTest, ArThroughputGrowsWithBatchUntilComputeBound) {
  const Workload w{.prompt_length = 16, .gen_length = 128};
  const double t1 = Project(Llama8b(), Ar(), w, H100Like(), 1)->tokens_per_second;
  const double t16 = Project(Llama8b(), Ar(), w, H100Like(), 16)->tokens_per_second;
  EXPECT_GT(t16, 12 * t1);  // memory-bound: the weights are shared by the batch
  const Projection big = Project(Llama8b(), Ar(), w, H100Like(), 1024).value();
  EXPECT_GT(big.compute_bound_fraction, 0.5);
}

TEST(PlannerTest, ExactDiffusionIsComputeBoundAndFlatWithBatch) {
  // Each forward runs the whole canvas: 32 prompt + 128 output positions -> intensity ~ 160.
  const Workload w{.prompt_length = 32, .gen_length = 128};
  MachineRates m = H100Like();
  m.flops_per_second = 100e12;  // ridge 30 FLOP/byte: compute-bound already at batch 1
  const Projection p1 = Project(Llada8b(), Exact(), w, m, 1).value();
  const Projection p8 = Project(Llada8b(), Exact(), w, m, 8).value();
  EXPECT_DOUBLE_EQ(p1.forwards, 128);
  EXPECT_GT(p1.compute_bound_fraction, 0.99);
  EXPECT_NEAR(p8.tokens_per_second, p1.tokens_per_second, 0.01 * p1.tokens_per_second);
  // Time per forward = canvas FLOPs / rate.
  const double flops = Llada8b().ForwardFlops(160, 32, true);
  EXPECT_NEAR(p1.e2e_ms / 128, 1000.0 * flops / 100e12, 0.6 * 1000.0 * flops / 100e12);
}

TEST(PlannerTest, FastDiffusionFeedsTheBlockAfterOneRefreshPerBlock) {
  const Workload w{.prompt_length = 32, .gen_length = 64};
  EngineSpec fast = Exact();
  fast.tokens_per_forward = 4;
  fast.cache = DiffusionCache::kDual;
  const Projection p = Project(Llada8b(), fast, w, H100Like(), 1).value();
  EXPECT_DOUBLE_EQ(p.forwards, 16);  // 2 blocks x 32 / 4
  EXPECT_DOUBLE_EQ(p.tokens_per_forward, 4);
  const Projection exact = Project(Llada8b(), Exact(), w, H100Like(), 1).value();
  EXPECT_LT(p.e2e_ms, exact.e2e_ms / 3);
  EXPECT_LT(p.flops, exact.flops / 4);
}

TEST(PlannerTest, SpeculationCommitsTauTokensPerVerify) {
  const Workload w{.prompt_length = 8, .gen_length = 101};
  EngineSpec spec{
      .name = "spec", .kind = EngineKind::kArSpeculative, .draft_max = 3, .tokens_per_verify = 2.5};
  const Projection p = Project(Llama8b(), spec, w, H100Like(), 1).value();
  EXPECT_DOUBLE_EQ(p.forwards, 41);  // prefill + ceil(100 / 2.5)
  const Projection ar = Project(Llama8b(), Ar(), w, H100Like(), 1).value();
  EXPECT_GT(p.tokens_per_second, 2.3 * ar.tokens_per_second);
  // A drafter costing a tenth of the target per draft: 3 drafts per verify slow it down.
  spec.draft_cost = 0.1;
  EXPECT_LT(Project(Llama8b(), spec, w, H100Like(), 1)->tokens_per_second, p.tokens_per_second);
}

TEST(PlannerTest, MemoryCapacityIsChecked) {
  MachineRates m = H100Like();
  m.memory_bytes = 20e9;  // 16 GB of weights + KV caches
  const Workload w{.prompt_length = 1024, .gen_length = 1024};
  EXPECT_TRUE(Project(Llama8b(), Ar(), w, m, 1)->fits_memory);
  EXPECT_FALSE(Project(Llama8b(), Ar(), w, m, 64)->fits_memory);
}

TEST(PlannerTest, FlopsCurveIsInterpolatedInLogRows) {
  MachineRates m;
  m.flops_per_second = 1e12;
  EXPECT_DOUBLE_EQ(m.FlopsAt(7), 1e12);
  m.flops_curve = {{1, 1e10}, {4, 3e10}, {16, 5e10}};
  EXPECT_DOUBLE_EQ(m.FlopsAt(0.5), 1e10);
  EXPECT_DOUBLE_EQ(m.FlopsAt(2), 2e10);
  EXPECT_DOUBLE_EQ(m.FlopsAt(8), 4e10);
  EXPECT_DOUBLE_EQ(m.FlopsAt(1000), 5e10);
}

TEST(PlannerTest, CrossoverIsTheFirstBatchWhereArCatchesUp) {
  const std::vector<EngineSpec> engines = {Ar(), Exact()};
  auto row = [](const char* e, int64_t b, double tps) {
    Projection p;
    p.engine = e;
    p.batch = b;
    p.tokens_per_second = tps;
    return p;
  };
  std::vector<Projection> rows = {row("ar", 1, 100),    row("exact", 1, 300), row("ar", 2, 200),
                                  row("exact", 2, 300), row("ar", 4, 400),    row("exact", 4, 300)};
  EXPECT_EQ(CrossoverBatch(engines, rows, {1, 2, 4}), 4);
  rows[0].tokens_per_second = 500;
  EXPECT_EQ(CrossoverBatch(engines, rows, {1, 2, 4}), 1);
  rows[0].tokens_per_second = 100;
  rows[4].tokens_per_second = 100;
  EXPECT_EQ(CrossoverBatch(engines, rows, {1, 2, 4}), -1);
}

ModelConfig Sdar8b() {  // LLaDA-8B's shape with SDAR's block-causal attention, block 4
  ModelConfig c = Llada8b();
  c.attention = AttentionKind::kBlockCausal;
  c.block_length = 4;
  return c;
}

EngineSpec BlockSpec(double tokens_per_forward, bool separate_store = true) {
  return {.name = "block",
          .kind = EngineKind::kBlockDiffusion,
          .block_length = 4,
          .tokens_per_forward = tokens_per_forward,
          .block_separate_store = separate_store};
}

TEST(PlannerTest, BlockDiffusionFeedsOneBlockPerForwardAfterThePrefill) {
  // Prompt 10 (2 whole blocks prefilled), 64 tokens: blocks 2..18 (17, the first holds the prompt's
  // tail), one token per step: 4 denoising + 1 store forward each, 86 forwards with the prefill.
  const Workload w{.prompt_length = 10, .gen_length = 64};
  const ModelConfig c = Sdar8b();
  const Projection p = Project(c, BlockSpec(64.0 / 86.0), w, H100Like(), 1).value();
  EXPECT_DOUBLE_EQ(p.forwards, 86);
  EXPECT_DOUBLE_EQ(p.tokens_per_forward, 64.0 / 86.0);
  double flops = c.ForwardFlops(8, 0, true, 0);
  for (int64_t b = 0; b < 17; ++b) {
    flops += 4 * c.ForwardFlops(4, 4, true, 8 + 4 * b) + c.ForwardFlops(4, 0, true, 8 + 4 * b);
  }
  EXPECT_NEAR(p.flops, flops, 1e-9 * flops);
  // Four positions per forward: memory-bound like AR decoding, and the batch shares the weights.
  EXPECT_LT(p.compute_bound_fraction, 0.01);
  EXPECT_GT(Project(c, BlockSpec(64.0 / 86.0), w, H100Like(), 16)->tokens_per_second,
            12 * p.tokens_per_second);
  // TTFT: the prefill and the first block's 5 forwards.
  EXPECT_LT(p.ttft_ms, p.e2e_ms / 10);
  // More tokens per forward: fewer forwards, but never under one step and the store per block.
  EXPECT_DOUBLE_EQ(Project(c, BlockSpec(64.0 / 43.0), w, H100Like(), 1)->forwards, 43);
  EXPECT_DOUBLE_EQ(Project(c, BlockSpec(4), w, H100Like(), 1)->forwards, 1 + 34);
  // A block engine is on the diffusion side of the crossover.
  Projection ar, block;
  ar.engine = "ar", block.engine = "block";
  ar.batch = block.batch = 1;
  ar.tokens_per_second = 100, block.tokens_per_second = 200;
  EXPECT_EQ(CrossoverBatch({Ar(), BlockSpec(1)}, {ar, block}, {1}), -1);
  block.tokens_per_second = 50;
  EXPECT_EQ(CrossoverBatch({Ar(), BlockSpec(1)}, {ar, block}, {1}), 1);
  EXPECT_FALSE(ValidateEngineSpec(BlockSpec(0)).ok());
  EXPECT_FALSE(ValidateEngineSpec(BlockSpec(5)).ok());
  EXPECT_TRUE(ValidateEngineSpec(BlockSpec(0.8)).ok());
}

TEST(PlannerTest, FusedBlockDiffusionFoldsThePrefillAndStoresIntoTheNextForward) {
  // Prompt 10, 64 tokens, one token per step: 17 blocks x 4 forwards, no prefill or stores; the
  // first forward feeds the prompt's 8 whole-block positions with block 2, each later block's
  // first forward the block before it.
  const Workload w{.prompt_length = 10, .gen_length = 64};
  const ModelConfig c = Sdar8b();
  const Projection p = Project(c, BlockSpec(64.0 / 68.0, false), w, H100Like(), 1).value();
  EXPECT_DOUBLE_EQ(p.forwards, 68);
  EXPECT_DOUBLE_EQ(p.tokens_per_forward, 64.0 / 68.0);
  double flops = 0;
  for (int64_t b = 0; b < 17; ++b) {
    flops += b == 0 ? c.ForwardFlops(12, 4, true, 0) : c.ForwardFlops(8, 4, true, 4 + 4 * b);
    flops += 3 * c.ForwardFlops(4, 4, true, 8 + 4 * b);
  }
  EXPECT_NEAR(p.flops, flops, 1e-9 * flops);
  // Fewer forwards than SDAR's schedule at the same commits (86): faster at batch 1.
  EXPECT_GT(p.tokens_per_second,
            Project(c, BlockSpec(64.0 / 86.0), w, H100Like(), 1)->tokens_per_second);
  // At most 4 tokens per forward, at least one forward per block.
  EXPECT_DOUBLE_EQ(Project(c, BlockSpec(4, false), w, H100Like(), 1)->forwards, 17);
}

TEST(PlannerTest, UsdPerMillionTokens) {
  // SERVING.md §4.5: 1,000 tokens/s at $2.69/h -> $0.75 per million.
  EXPECT_NEAR(UsdPerMillionTokens(2.69, 1000), 0.747, 0.001);
  EXPECT_TRUE(std::isinf(UsdPerMillionTokens(2.69, 0)));
}

TEST(PlannerTest, BadInputsAreErrors) {
  const Workload w;
  EXPECT_EQ(Project(Llama8b(), Ar(), w, H100Like(), 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(Project(Llama8b(), Ar(), {.prompt_length = 0, .gen_length = 4}, H100Like(), 1).ok());
  EXPECT_FALSE(Project(Llama8b(), Ar(), w, MachineRates{}, 1).ok());
  EngineSpec bad = Exact();
  bad.tokens_per_forward = 64;  // more than the block
  EXPECT_FALSE(Project(Llada8b(), bad, w, H100Like(), 1).ok());
  bad.tokens_per_forward = 0.5;
  EXPECT_FALSE(ValidateEngineSpec(bad).ok());
  EngineSpec spec{
      .name = "spec", .kind = EngineKind::kArSpeculative, .draft_max = 3, .tokens_per_verify = 5};
  EXPECT_FALSE(ValidateEngineSpec(spec).ok());
  spec.tokens_per_verify = 2;
  spec.draft_cost = -1;
  EXPECT_FALSE(ValidateEngineSpec(spec).ok());
  EXPECT_FALSE(Project(ModelConfig{}, Ar(), w, H100Like(), 1).ok());
}

}  // namespace
}  // namespace unmask::plan
