// The planner's mixture-of-experts model (MODELS.md §6.4): the MoE presets have their published
// sizes, the expected experts touched follow E (1 - (1 - k/E)^N) (the table of §6.4), and a
// forward's bytes count the dense weights once plus only the experts its positions reach, so a
// 32-position block of a fine-grained MoE reads far more than one AR token while a dense model's
// bytes do not depend on the positions fed.
#include <gtest/gtest.h>

#include <cmath>

#include "plan/model_presets.h"
#include "plan/planner.h"

namespace unmask::plan {
namespace {

ModelConfig Preset(const char* id) { return FindModelPreset(id).value().config; }

TEST(MoePlannerTest, PresetsHaveTheirPublishedSizes) {
  // ActiveParameters counts the output projection but not the input embedding (a row gather);
  // model cards' "activated" figures count both tables, so they are one vocab x hidden larger.
  const auto embedding = [](const ModelConfig& c) {
    return static_cast<double>(c.vocab_size * c.hidden_size) / 1e9;
  };
  // LLaDA2.0-mini: 16.26 B total, ~1.1 B active with the output projection (MODELS.md §3.1).
  const ModelConfig mini = Preset("llada2.0-mini");
  EXPECT_NEAR(static_cast<double>(mini.NumParameters()) / 1e9, 16.26, 0.05);
  EXPECT_NEAR(static_cast<double>(mini.ActiveParameters()) / 1e9, 1.1, 0.05);
  EXPECT_TRUE(mini.is_block_diffusion());
  EXPECT_EQ(mini.block_length, 32);
  // LLaDA-MoE-7B-A1B: 7.36 B (14.7 GB in BF16), ~1.4 B active.
  const ModelConfig lm = Preset("llada-moe-7b-a1b");
  EXPECT_NEAR(static_cast<double>(lm.NumParameters()) / 1e9, 7.36, 0.05);
  EXPECT_TRUE(lm.is_diffusion());
  // Qwen3-30B-A3B: 30.5 B total, 3.3 B activated (its card, both embedding tables).
  const ModelConfig q = Preset("qwen3-30b-a3b");
  EXPECT_NEAR(static_cast<double>(q.NumParameters()) / 1e9, 30.5, 0.1);
  EXPECT_NEAR(static_cast<double>(q.ActiveParameters()) / 1e9 + embedding(q), 3.3, 0.1);
  // LLaDA2.0-flash: ~100 B, ~6 B activated (100B-A6B; shapes UNVERIFIED).
  const ModelConfig f = Preset("llada2.0-flash");
  EXPECT_NEAR(static_cast<double>(f.NumParameters()) / 1e9, 103, 3);
  EXPECT_NEAR(static_cast<double>(f.ActiveParameters()) / 1e9 + embedding(f), 6.1, 0.3);
}

TEST(MoePlannerTest, ExpectedExpertsFollowTheUniformRoutingFormula) {
  // MODELS.md §6.4 table: LLaDA2-mini (256, top-8) 8 / 30.5 / 163 / 256 at N = 1 / 4 / 32 / 256;
  // LLaDA-MoE (64, top-8) 8 / 26.5 / 63.1 / 64.
  const ModelConfig mini = Preset("llada2.0-mini");
  EXPECT_NEAR(mini.ExpectedExpertsHit(1), 8, 1e-9);
  EXPECT_NEAR(mini.ExpectedExpertsHit(4), 30.5, 0.1);
  EXPECT_NEAR(mini.ExpectedExpertsHit(32), 163, 1);
  EXPECT_NEAR(mini.ExpectedExpertsHit(256), 256, 0.5);
  const ModelConfig lm = Preset("llada-moe-7b-a1b");
  EXPECT_NEAR(lm.ExpectedExpertsHit(4), 26.5, 0.1);
  EXPECT_NEAR(lm.ExpectedExpertsHit(32), 63.1, 0.1);
  EXPECT_EQ(lm.ExpectedExpertsHit(0), 0);
  EXPECT_EQ(Preset("llama-3-8b").ExpectedExpertsHit(32), 0);
}

TEST(MoePlannerTest, BytesPerForwardGrowWithThePositionsAMoeForwardRoutes) {
  MachineRates m;
  m.flops_per_second = 989e12;
  m.bytes_per_second = 3.35e12;
  m.weight_bytes_per_parameter = 2;
  m.kv_bytes_per_element = m.activation_bytes_per_element = 2;
  const ModelConfig q = Preset("qwen3-30b-a3b");
  const Workload w{1, 2};  // prefill 1 token, then one decode forward
  const EngineSpec ar{.name = "ar", .kind = EngineKind::kAr};
  auto p = Project(q, ar, w, m, 1);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // Two forwards of one position: 8 experts per layer each.
  EXPECT_NEAR(p->experts_hit_per_layer, 8, 1e-9);
  const double expert = static_cast<double>(q.ExpertParameters()) * 2;
  EXPECT_NEAR(p->expert_bytes, 2 * 48 * 8 * expert, 1.0);
  const double dense =
      static_cast<double>(q.NumParameters() - 48 * q.num_experts * q.ExpertParameters()) * 2;
  EXPECT_GT(p->bytes, 2 * dense + p->expert_bytes);  // plus KV cache and activations
  EXPECT_LT(p->bytes, 2 * static_cast<double>(q.NumParameters()) * 2);  // far below all experts
  // Batch 64: 64 positions per forward reach (nearly) every expert.
  auto b64 = Project(q, ar, w, m, 64);
  ASSERT_TRUE(b64.ok());
  EXPECT_NEAR(b64->experts_hit_per_layer, q.ExpectedExpertsHit(64), 1e-9);
  EXPECT_GT(b64->experts_hit_per_layer, 124);
  // A block-diffusion forward of 32 positions touches ~163 of LLaDA2.0-mini's 256 experts.
  const ModelConfig mini = Preset("llada2.0-mini");
  const EngineSpec block{.name = "block",
                         .kind = EngineKind::kBlockDiffusion,
                         .block_length = 32,
                         .tokens_per_forward = 1};
  auto bd = Project(mini, block, Workload{32, 32}, m, 1);
  ASSERT_TRUE(bd.ok()) << bd.status().ToString();
  EXPECT_GT(bd->experts_hit_per_layer, 150);
  // A dense model reads no experts.
  auto dense_p = Project(Preset("llama-3-8b"), ar, w, m, 1);
  ASSERT_TRUE(dense_p.ok());
  EXPECT_EQ(dense_p->expert_bytes, 0);
  EXPECT_EQ(dense_p->experts_hit_per_layer, 0);
}

}  // namespace
}  // namespace unmask::plan
