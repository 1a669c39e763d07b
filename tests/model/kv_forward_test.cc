// The KV-cached causal forward equals the uncached one: feeding a sequence in pieces (prefill,
// then one or several tokens per forward) gives the logits of one full forward, also with two
// sequences in one batch and with pruned, non-consecutive logit rows. The AR twin
// (models/unmask-tinystories-ar.gguf) is the model. Tolerance: 2e-4 absolute + 2e-4 relative —
// the same f32 math, but GEMMs of different M block their sums differently (measured max
// difference ~1e-5 on logits of magnitude ~10).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "kv/kv_cache.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

constexpr double kTol = 2e-4;

class KvForwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto lm = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf", LoadOptions{});
    ASSERT_TRUE(lm.ok()) << lm.status().ToString();
    lm_ = std::move(lm).value();
    v_ = lm_.model->config().vocab_size;
    ids_ = lm_.tokenizer->Encode("Once upon a time, there was a little dog named Max. He", true,
                                 false);
  }
  // Logits of every position of ids_ from one uncached forward.
  std::vector<float> Full() {
    std::vector<int32_t> rows(ids_.size());
    std::iota(rows.begin(), rows.end(), 0);
    BatchPlan plan;
    plan.sequences.push_back(SequenceInput{ids_, 0, rows});
    std::vector<float> out(rows.size() * static_cast<size_t>(v_));
    Workspace ws;
    EXPECT_TRUE(lm_.model
                    ->Forward(plan, ws,
                              TensorView{out.data(), DType::kF32,
                                         Shape{static_cast<int64_t>(rows.size()), v_}},
                              nullptr)
                    .ok());
    return out;
  }
  void ExpectRowNear(const float* got, const std::vector<float>& full, size_t pos) {
    for (int64_t j = 0; j < v_; ++j) {
      const double want = full[pos * static_cast<size_t>(v_) + static_cast<size_t>(j)];
      ASSERT_NEAR(got[j], want, kTol + kTol * std::abs(want)) << "position " << pos << " id " << j;
    }
  }

  LoadedModel lm_;
  int64_t v_ = 0;
  std::vector<int32_t> ids_;
};

TEST_F(KvForwardTest, IncrementalEqualsFull) {
  const std::vector<float> full = Full();
  auto kv = lm_.model->MakeKvCache(1);
  ASSERT_TRUE(kv.ok());
  Workspace ws;
  std::vector<float> out(4 * static_cast<size_t>(v_));
  // Prefill 5 tokens (logits of the last), then pieces of 1, 3 and 1 tokens (logits of each).
  const std::vector<std::pair<size_t, size_t>> pieces = {{0, 5}, {5, 6}, {6, 9}, {9, 10}};
  for (auto [a, b] : pieces) {
    std::vector<int32_t> rows;
    for (size_t r = (a == 0 ? b - a - 1 : 0); r < b - a; ++r)
      rows.push_back(static_cast<int32_t>(r));
    BatchPlan plan;
    plan.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(a, b - a),
                                           static_cast<int32_t>(a), rows, 0});
    ASSERT_TRUE(lm_.model
                    ->Forward(plan, &*kv, ws,
                              TensorView{out.data(), DType::kF32,
                                         Shape{static_cast<int64_t>(rows.size()), v_}},
                              nullptr)
                    .ok());
    for (size_t i = 0; i < rows.size(); ++i) {
      ExpectRowNear(out.data() + i * static_cast<size_t>(v_), full,
                    a + static_cast<size_t>(rows[i]));
    }
    EXPECT_EQ(kv->length(0), static_cast<int64_t>(b));
  }
  // Rewind (speculative rollback): feed positions 7.. again from the cache of 0..6.
  BatchPlan plan;
  const int32_t rows[2] = {0, 2};  // non-consecutive pruned rows
  plan.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(7, 3), 7, rows, 0});
  ASSERT_TRUE(
      lm_.model->Forward(plan, &*kv, ws, TensorView{out.data(), DType::kF32, Shape{2, v_}}, nullptr)
          .ok());
  ExpectRowNear(out.data(), full, 7);
  ExpectRowNear(out.data() + v_, full, 9);
}

// Speculative verification feeds k + 1 tokens in one forward; with native (on-the-fly) weights
// every row is computed exactly as in a one-token forward (fused kernels up to 16 rows, per-query
// attention), so the logits are bit-identical and greedy speculative decoding equals plain
// decoding token for token.
TEST_F(KvForwardTest, MultiTokenForwardIsBitIdenticalToTokenByToken) {
  std::vector<std::string> models = {testing::SourceDir() + "/models/unmask-tinystories-ar.gguf"};
  if (auto smol = testing::FindSmolLM2()) models.push_back(*smol);  // Q4_1: int8 activations
  for (const std::string& path : models) {
    LoadOptions native;
    native.weight_mode = WeightMode::kOnTheFly;
    auto lm = LoadModel(path, native);
    ASSERT_TRUE(lm.ok()) << lm.status().ToString();
    const int64_t v = lm->model->config().vocab_size;
    const std::vector<int32_t> ids = lm->tokenizer->Encode(
        "Once upon a time, there was a little dog named Max. He liked to run.", true, false);
    ASSERT_GE(ids.size(), 14u);
    const size_t prefix = ids.size() - 9;  // then 9 tokens: one by one, or all at once
    auto run = [&](bool one_by_one) {
      auto kv = lm->model->MakeKvCache(1);
      EXPECT_TRUE(kv.ok());
      Workspace ws;
      std::vector<float> out(9 * static_cast<size_t>(v)), row(static_cast<size_t>(v));
      const int32_t last[1] = {static_cast<int32_t>(prefix) - 1};
      BatchPlan pre;
      pre.sequences.push_back(
          SequenceInput{std::span<const int32_t>(ids).subspan(0, prefix), 0, last, 0});
      EXPECT_TRUE(
          lm->model
              ->Forward(pre, &*kv, ws, TensorView{row.data(), DType::kF32, Shape{1, v}}, nullptr)
              .ok());
      if (one_by_one) {
        const int32_t zero[1] = {0};
        for (size_t i = 0; i < 9; ++i) {
          BatchPlan p;
          p.sequences.push_back(SequenceInput{std::span<const int32_t>(ids).subspan(prefix + i, 1),
                                              static_cast<int32_t>(prefix + i), zero, 0});
          EXPECT_TRUE(lm->model
                          ->Forward(p, &*kv, ws,
                                    TensorView{out.data() + i * static_cast<size_t>(v), DType::kF32,
                                               Shape{1, v}},
                                    nullptr)
                          .ok());
        }
      } else {
        const int32_t rows[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
        BatchPlan p;
        p.sequences.push_back(SequenceInput{std::span<const int32_t>(ids).subspan(prefix, 9),
                                            static_cast<int32_t>(prefix), rows, 0});
        EXPECT_TRUE(
            lm->model
                ->Forward(p, &*kv, ws, TensorView{out.data(), DType::kF32, Shape{9, v}}, nullptr)
                .ok());
      }
      return out;
    };
    const std::vector<float> a = run(true), b = run(false);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i], b[i]) << path << ": row " << i / static_cast<size_t>(v) << " id "
                            << i % static_cast<size_t>(v);
    }
  }
}

TEST_F(KvForwardTest, TwoSequencesInOneBatch) {
  const std::vector<float> full = Full();
  auto kv = lm_.model->MakeKvCache(2);
  ASSERT_TRUE(kv.ok());
  Workspace ws;
  std::vector<float> out(2 * static_cast<size_t>(v_));
  const int32_t last4[1] = {3}, last6[1] = {5}, zero[1] = {0};
  // Sequence 0 prefills 4 tokens, sequence 1 prefills 6; then both take one more token.
  BatchPlan p1;
  p1.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(0, 4), 0, last4, 0});
  p1.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(0, 6), 0, last6, 1});
  ASSERT_TRUE(
      lm_.model->Forward(p1, &*kv, ws, TensorView{out.data(), DType::kF32, Shape{2, v_}}, nullptr)
          .ok());
  ExpectRowNear(out.data(), full, 3);
  ExpectRowNear(out.data() + v_, full, 5);
  BatchPlan p2;
  p2.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(4, 1), 4, zero, 0});
  p2.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(6, 1), 6, zero, 1});
  ASSERT_TRUE(
      lm_.model->Forward(p2, &*kv, ws, TensorView{out.data(), DType::kF32, Shape{2, v_}}, nullptr)
          .ok());
  ExpectRowNear(out.data(), full, 4);
  ExpectRowNear(out.data() + v_, full, 6);
}

TEST_F(KvForwardTest, BadPlansAreErrors) {
  auto kv = lm_.model->MakeKvCache(1);
  ASSERT_TRUE(kv.ok());
  Workspace ws;
  std::vector<float> out(static_cast<size_t>(v_));
  const TensorView logits{out.data(), DType::kF32, Shape{1, v_}};
  const int32_t zero[1] = {0};
  BatchPlan gap;  // position 3 with nothing cached
  gap.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(0, 1), 3, zero, 0});
  EXPECT_EQ(lm_.model->Forward(gap, &*kv, ws, logits, nullptr).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(lm_.model->Forward(gap, nullptr, ws, logits, nullptr).code(),
            StatusCode::kInvalidArgument);  // kv_seq without a cache
  BatchPlan twice;
  twice.sequences.push_back(
      SequenceInput{std::span<const int32_t>(ids_).subspan(0, 1), 0, zero, 0});
  twice.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(0, 1), 0, {}, 0});
  EXPECT_EQ(lm_.model->Forward(twice, &*kv, ws, logits, nullptr).code(),
            StatusCode::kInvalidArgument);
  BatchPlan other_seq;
  other_seq.sequences.push_back(
      SequenceInput{std::span<const int32_t>(ids_).subspan(0, 1), 0, zero, 5});
  EXPECT_EQ(lm_.model->Forward(other_seq, &*kv, ws, logits, nullptr).code(),
            StatusCode::kInvalidArgument);
  auto small = KvCache::Create({1, 8, 16, 1});  // shaped for another model
  ASSERT_TRUE(small.ok());
  BatchPlan ok;
  ok.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(0, 1), 0, zero, 0});
  EXPECT_EQ(lm_.model->Forward(ok, &*small, ws, logits, nullptr).code(),
            StatusCode::kInvalidArgument);
}

// A batch is checked whole before any cache changes: when its second sequence cannot be written
// (past this cache's positions, which only the cache knows), the first sequence's cache — which
// the batch would rewind from 6 to 3 positions — keeps its length and its rows.
TEST_F(KvForwardTest, FailedBatchLeavesEveryCacheUntouched) {
  const ModelConfig& c = lm_.model->config();
  auto kv = KvCache::Create({c.num_layers, c.num_kv_heads * c.head_dim, 8, 2});
  ASSERT_TRUE(kv.ok());
  ASSERT_GE(ids_.size(), 9u);
  Workspace ws;
  std::vector<float> out(2 * static_cast<size_t>(v_));
  const int32_t last6[1] = {5}, last4[1] = {3}, zero[1] = {0};
  BatchPlan prefill;
  prefill.sequences.push_back(
      SequenceInput{std::span<const int32_t>(ids_).subspan(0, 6), 0, last6, 0});
  prefill.sequences.push_back(
      SequenceInput{std::span<const int32_t>(ids_).subspan(0, 4), 0, last4, 1});
  ASSERT_TRUE(
      lm_.model
          ->Forward(prefill, &*kv, ws, TensorView{out.data(), DType::kF32, Shape{2, v_}}, nullptr)
          .ok());
  ASSERT_EQ(kv->length(0), 6);
  ASSERT_EQ(kv->length(1), 4);
  const int64_t d = c.num_kv_heads * c.head_dim;
  const std::vector<float> keys0(kv->Keys(0, 0), kv->Keys(0, 0) + 6 * d);

  BatchPlan bad;
  bad.sequences.push_back(SequenceInput{std::span<const int32_t>(ids_).subspan(2, 1), 2, zero, 0});
  bad.sequences.push_back(
      SequenceInput{std::span<const int32_t>(ids_).subspan(4, 5), 4, zero, 1});  // [4, 9) > 8
  EXPECT_EQ(
      lm_.model->Forward(bad, &*kv, ws, TensorView{out.data(), DType::kF32, Shape{2, v_}}, nullptr)
          .code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(kv->length(0), 6);
  EXPECT_EQ(kv->length(1), 4);
  for (size_t i = 0; i < keys0.size(); ++i) ASSERT_EQ(kv->Keys(0, 0)[i], keys0[i]) << i;
}

}  // namespace
}  // namespace unmask
