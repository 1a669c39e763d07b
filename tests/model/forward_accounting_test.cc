// Per-forward accounting (model/model.h ForwardStats, model/config.h): the byte model's formulas on
// a hand-made configuration, and a real forward on the AR twin reporting weights read once, the
// KV traffic of what it cached and attended to, and an arithmetic intensity that grows with the
// positions fed (the roofline argument: batch-1 decoding is near 1 FLOP/byte for f32 weights,
// a 64-position forward is not).
#include <gtest/gtest.h>

#include <vector>

#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

ModelConfig Tiny() {
  ModelConfig c;
  c.num_layers = 2;
  c.hidden_size = 8;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 4;
  c.ffn_size = 16;
  c.vocab_size = 10;
  return c;
}

TEST(ForwardAccountingTest, KvBytesFormula) {
  const ModelConfig c = Tiny();  // kv_dim 4: K and V of one position and layer = 2 * 4 * 4 bytes
  EXPECT_EQ(c.ForwardKvBytes(3, 0, false), 2 * (3 * 32));
  EXPECT_EQ(c.ForwardKvBytes(3, 5, false), 2 * (8 * 32));
  EXPECT_EQ(c.ForwardKvBytes(3, 5, true), 2 * (8 * 32 + 3 * 32));
}

TEST(ForwardAccountingTest, ActivationBytesFormula) {
  const ModelConfig c = Tiny();
  // Per position and layer: 12 d + 3 q + 2 kv + 6 f floats = 96 + 24 + 8 + 96 = 224.
  EXPECT_EQ(c.ForwardActivationBytes(1, 0), 4.0 * 2 * 224);
  EXPECT_EQ(c.ForwardActivationBytes(3, 2), 4.0 * (3 * 2 * 224 + 2 * 10));
}

TEST(ForwardAccountingTest, RealForwardReportsBytesAndIntensity) {
  auto lm = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf", LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  const Model& m = *lm->model;
  const ModelConfig& c = m.config();
  auto kv = m.MakeKvCache(1);
  ASSERT_TRUE(kv.ok());
  Workspace ws;
  std::vector<int32_t> ids(64, 5);
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  const int32_t last[1] = {63};
  BatchPlan prefill;
  prefill.sequences.push_back(SequenceInput{ids, 0, last, /*kv_seq=*/0});
  ForwardStats big;
  ASSERT_TRUE(m.Forward(prefill, &*kv, ws,
                        TensorView{logits.data(), DType::kF32, Shape{1, c.vocab_size}}, &big)
                  .ok());
  EXPECT_EQ(big.weight_bytes, static_cast<double>(m.weight_bytes()));
  EXPECT_EQ(big.kv_bytes, c.ForwardKvBytes(64, 0, true));
  EXPECT_EQ(big.activation_bytes, c.ForwardActivationBytes(64, 1));
  EXPECT_GT(big.arithmetic_intensity(), 0);
  // One decode step after the prefill: attends to 64 cached positions.
  const int32_t next[1] = {7};
  const int32_t row[1] = {0};
  BatchPlan step;
  step.sequences.push_back(SequenceInput{next, 64, row, 0});
  ForwardStats one;
  ASSERT_TRUE(m.Forward(step, &*kv, ws,
                        TensorView{logits.data(), DType::kF32, Shape{1, c.vocab_size}}, &one)
                  .ok());
  EXPECT_EQ(one.kv_bytes, c.ForwardKvBytes(1, 64, true));
  EXPECT_EQ(one.bytes(), one.weight_bytes + one.kv_bytes + one.activation_bytes);
  // Batch-1 decoding reads every weight for ~2 FLOPs per parameter: a few FLOP/byte at most;
  // 64 positions per forward reuse each weight 64 times.
  EXPECT_LT(one.arithmetic_intensity(), 4);
  EXPECT_GT(big.arithmetic_intensity(), 8 * one.arithmetic_intensity());
}

}  // namespace
}  // namespace unmask
