// Block-causal (SDAR) and Qwen3-layout forwards on tiny random models written by the test
// fixture: the exact-KV-reuse procedure of ALGORITHMS.md §5.1 (prefill whole blocks, then a block
// against the cache) equals one uncached block-causal forward; earlier blocks never see later
// ones; a Qwen3 (causal, q/k norm, head_dim apart from hidden/heads) cached decode equals its
// full forward; and the configuration errors. Tolerance 2e-4 absolute + 2e-4 relative: the same
// f32 math, but GEMMs and attention of different M block their sums differently.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "fixtures/tiny_llada.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

constexpr double kTol = 2e-4;

StatusOr<LoadedModel> Load(const testing::TinyLladaSpec& spec, const std::string& name) {
  const std::string path = testing::TempDir() + "/" + name + ".gguf";
  const std::string err = testing::WriteTinyLlada(spec, path);
  if (!err.empty()) return InternalError(err);
  return LoadModel(path, LoadOptions{});
}

testing::TinyLladaSpec SdarSpec(int64_t block) {
  testing::TinyLladaSpec s;
  s.architecture = "sdar";
  s.hidden = 16;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 8;  // != hidden / heads, as Qwen3 allows
  s.qk_norm = true;
  s.block_length = block;
  s.seed = 7;
  return s;
}

// Logits of `rows` of one forward of `tokens` at pos0 (kv_seq -1: uncached).
std::vector<float> Forward(const LoadedModel& lm, std::span<const int32_t> tokens, int32_t pos0,
                           std::vector<int32_t> rows, KvCache* kv = nullptr, int32_t kv_seq = -1) {
  const int64_t v = lm.model->config().vocab_size;
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{tokens, pos0, rows, kv_seq});
  std::vector<float> out(rows.size() * static_cast<size_t>(v));
  Workspace ws;
  const Status st = lm.model->Forward(
      plan, kv, ws,
      TensorView{out.data(), DType::kF32, Shape{static_cast<int64_t>(rows.size()), v}}, nullptr);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

std::vector<int32_t> Iota(int32_t a, int32_t b) {
  std::vector<int32_t> r(static_cast<size_t>(b - a));
  std::iota(r.begin(), r.end(), a);
  return r;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, size_t got_row,
                size_t want_row, int64_t v, const std::string& what) {
  for (int64_t j = 0; j < v; ++j) {
    const double w = want[want_row * static_cast<size_t>(v) + static_cast<size_t>(j)];
    ASSERT_NEAR(got[got_row * static_cast<size_t>(v) + static_cast<size_t>(j)], w,
                kTol + kTol * std::abs(w))
        << what << " id " << j;
  }
}

TEST(BlockCausalForwardTest, ConfigReadsBlockLengthAndHeadDim) {
  auto lm = Load(SdarSpec(4), "sdar_cfg");
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  const ModelConfig& c = lm->model->config();
  EXPECT_TRUE(c.is_block_diffusion());
  EXPECT_FALSE(c.is_diffusion());
  EXPECT_TRUE(c.needs_mask_token());
  EXPECT_EQ(c.block_length, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rope_layout, RopeLayout::kNeox);
}

TEST(BlockCausalForwardTest, CachedBlocksEqualOneBlockCausalForward) {
  for (int64_t block : {1, 4, 8}) {
    SCOPED_TRACE("block " + std::to_string(block));
    auto lm = Load(SdarSpec(block), "sdar_cache_" + std::to_string(block));
    ASSERT_TRUE(lm.ok()) << lm.status().ToString();
    const int64_t v = lm->model->config().vocab_size;
    std::vector<int32_t> tokens(24);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i * 37 % 256);
    const std::vector<float> full = Forward(*lm, tokens, 0, Iota(0, 24));
    // Prefill the first 16 positions (whole blocks), then feed each later block alone.
    auto kv = lm->model->MakeKvCache(1);
    ASSERT_TRUE(kv.ok());
    const std::span<const int32_t> all(tokens);
    const std::vector<float> pre = Forward(*lm, all.first(16), 0, Iota(0, 16), &*kv, 0);
    for (size_t r = 0; r < 16; ++r)
      ExpectNear(pre, full, r, r, v, "prefill row " + std::to_string(r));
    for (int32_t start = 16; start < 24; start += static_cast<int32_t>(block)) {
      const auto piece = all.subspan(static_cast<size_t>(start), static_cast<size_t>(block));
      const std::vector<float> got =
          Forward(*lm, piece, start, Iota(0, static_cast<int32_t>(block)), &*kv, 0);
      for (int64_t r = 0; r < block; ++r) {
        ExpectNear(got, full, static_cast<size_t>(r), static_cast<size_t>(start + r), v,
                   "position " + std::to_string(start + r));
      }
    }
  }
}

TEST(BlockCausalForwardTest, EarlierBlocksNeverSeeLaterOnesButSeeTheirWholeBlock) {
  auto lm = Load(SdarSpec(4), "sdar_mask");
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  const int64_t v = lm->model->config().vocab_size;
  std::vector<int32_t> a(12, 5), b(12, 5);
  for (size_t i = 0; i < 12; ++i) a[i] = b[i] = static_cast<int32_t>(i * 11 % 256);
  b[10] = 200;  // block 2 differs
  const std::vector<float> la = Forward(*lm, a, 0, Iota(0, 12)),
                           lb = Forward(*lm, b, 0, Iota(0, 12));
  for (size_t r = 0; r < 8; ++r) ExpectNear(lb, la, r, r, v, "row " + std::to_string(r));
  // Position 8 is in block 2: it sees position 10 (bidirectional inside the block).
  double diff = 0;
  for (int64_t j = 0; j < v; ++j)
    diff = std::max(diff, std::abs(double(la[8 * v + j]) - lb[8 * v + j]));
  EXPECT_GT(diff, 1e-3);
}

TEST(BlockCausalForwardTest, UncachedForwardMustStartAtABlockBoundary) {
  auto lm = Load(SdarSpec(4), "sdar_align");
  ASSERT_TRUE(lm.ok());
  const std::vector<int32_t> tokens(4, 3);
  const int64_t v = lm->model->config().vocab_size;
  std::vector<float> out(static_cast<size_t>(v));
  const int32_t row = 0;
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{tokens, 2, std::span<const int32_t>(&row, 1)});
  Workspace ws;
  const Status st =
      lm->model->Forward(plan, ws, TensorView{out.data(), DType::kF32, Shape{1, v}}, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("block boundary"), std::string::npos) << st.message();
}

TEST(BlockCausalForwardTest, Qwen3CachedDecodeEqualsFullForward) {
  testing::TinyLladaSpec s = SdarSpec(4);
  s.architecture = "qwen3";
  auto lm = Load(s, "qwen3_tiny");
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  EXPECT_EQ(lm->model->config().attention, AttentionKind::kCausal);
  const int64_t v = lm->model->config().vocab_size;
  std::vector<int32_t> tokens(10);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i * 29 % 256);
  const std::vector<float> full = Forward(*lm, tokens, 0, Iota(0, 10));
  auto kv = lm->model->MakeKvCache(1);
  ASSERT_TRUE(kv.ok());
  const std::span<const int32_t> all(tokens);
  Forward(*lm, all.first(6), 0, {}, &*kv, 0);
  for (int32_t p = 6; p < 10; ++p) {
    const std::vector<float> got =
        Forward(*lm, all.subspan(static_cast<size_t>(p), 1), p, {0}, &*kv, 0);
    ExpectNear(got, full, 0, static_cast<size_t>(p), v, "position " + std::to_string(p));
  }
}

TEST(BlockCausalForwardTest, QkNormIsRequiredForQwen3Layouts) {
  testing::TinyLladaSpec s = SdarSpec(4);
  s.qk_norm = false;
  auto lm = Load(s, "sdar_no_qk_norm");
  ASSERT_FALSE(lm.ok());
  EXPECT_EQ(lm.status().code(), StatusCode::kNotFound);
  EXPECT_NE(lm.status().message().find("attn_q_norm"), std::string::npos);
}

TEST(BlockCausalForwardTest, BlockLengthOnANonBlockArchitectureIsRefused) {
  testing::TinyLladaSpec s;
  s.edit = [](gguf::GgufWriter& w) { w.Set("diffusion.block_length", gguf::Value::U32(4)); };
  auto lm = Load(s, "llada_block_length");
  ASSERT_FALSE(lm.ok());
  EXPECT_EQ(lm.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(lm.status().message().find("diffusion.block_length"), std::string::npos);
}

}  // namespace
}  // namespace unmask
