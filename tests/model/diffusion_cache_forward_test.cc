// Cached forwards of a bidirectional model (the diffusion twin,
// models/unmask-tinystories-llada.gguf) for the Fast-dLLM / dInfer cache modes: with an unchanged
// canvas, a prefix-cached or in-place (kv_replace) forward of part of the canvas gives the logits
// of the full forward; an in-place forward rewrites exactly the fed rows of the cache and leaves
// every other row as it was; and the fed rows' first-layer keys equal those of a full forward of
// the new canvas (layer 0 sees only the tokens), while later layers see the stale rows. Tolerance
// as kv_forward_test.cc: 2e-4 absolute + relative (same f32 math, GEMMs of different M block their
// sums differently).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

constexpr double kTol = 2e-4;

class DiffusionCacheForwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto lm =
        LoadModel(testing::SourceDir() + "/models/unmask-tinystories-llada.gguf", LoadOptions{});
    ASSERT_TRUE(lm.ok()) << lm.status().ToString();
    lm_ = std::move(lm).value();
    v_ = lm_.model->config().vocab_size;
    canvas_ = lm_.tokenizer->Encode("Once upon a time, there was a little dog named Max. He", true,
                                    false);
    const int32_t mask = lm_.tokenizer->special().mask;
    for (int i = 0; i < 16; ++i) canvas_.push_back(mask);
  }
  // Runs one sequence and returns logits of `rows` (indices into tokens).
  std::vector<float> Run(std::span<const int32_t> tokens, int32_t pos0,
                         const std::vector<int32_t>& rows, KvCache* kv, bool replace,
                         Status* status = nullptr) {
    BatchPlan plan;
    SequenceInput s{tokens, pos0, rows};
    s.kv_seq = kv != nullptr ? 0 : -1;
    s.kv_replace = replace;
    plan.sequences.push_back(s);
    std::vector<float> out(std::max<size_t>(rows.size(), 1) * static_cast<size_t>(v_));
    const Status st = lm_.model->Forward(
        plan, kv, ws_,
        TensorView{out.data(), DType::kF32, Shape{static_cast<int64_t>(rows.size()), v_}}, nullptr);
    if (status != nullptr) {
      *status = st;
    } else {
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    return out;
  }
  static std::vector<int32_t> Range(int32_t a, int32_t b) {
    std::vector<int32_t> r(static_cast<size_t>(b - a));
    std::iota(r.begin(), r.end(), a);
    return r;
  }
  void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], kTol + kTol * std::abs(want[i])) << "index " << i;
    }
  }
  int32_t L() const { return static_cast<int32_t>(canvas_.size()); }

  LoadedModel lm_;
  Workspace ws_;
  int64_t v_ = 0;
  std::vector<int32_t> canvas_;
};

TEST_F(DiffusionCacheForwardTest, PrefixAndInPlaceForwardsOfAnUnchangedCanvasMatchTheFullForward) {
  const int32_t s = L() - 16, e = L() - 8;  // the "block": first half of the masks
  const std::vector<float> full = Run(canvas_, 0, Range(s, e), nullptr, false);
  auto kv = lm_.model->MakeKvCache(1);
  ASSERT_TRUE(kv.ok());
  Run(canvas_, 0, {}, &*kv, false);  // refresh: every position's K/V
  const std::span<const int32_t> c(canvas_);
  // Prefix: feed [s, L) after the cached [0, s).
  ExpectNear(Run(c.subspan(s), s, Range(0, e - s), &*kv, false), full);
  EXPECT_EQ(kv->length(0), L());
  // Dual: feed [s, e) in place, attend to all L cached rows.
  ExpectNear(Run(c.subspan(s, e - s), s, Range(0, e - s), &*kv, true), full);
  EXPECT_EQ(kv->length(0), L());
  // Vicinity: a window [s - 4, e + 3).
  ExpectNear(Run(c.subspan(s - 4, e - s + 7), s - 4, Range(4, 4 + e - s), &*kv, true), full);
}

TEST_F(DiffusionCacheForwardTest, InPlaceForwardRewritesOnlyTheFedRows) {
  const int64_t kv_dim = lm_.model->config().num_kv_heads * lm_.model->config().head_dim;
  const int64_t layers = lm_.model->config().num_layers;
  auto kv = lm_.model->MakeKvCache(1);
  ASSERT_TRUE(kv.ok());
  Run(canvas_, 0, {}, &*kv, false);
  auto snapshot = [&](int64_t layer) {
    const float* k = kv->Keys(0, layer);
    return std::vector<float>(k, k + L() * kv_dim);
  };
  std::vector<std::vector<float>> before;
  for (int64_t l = 0; l < layers; ++l) before.push_back(snapshot(l));
  // Commit two tokens inside the window [s, e) and refresh only the window.
  std::vector<int32_t> next = canvas_;
  const int32_t s = L() - 16, e = L() - 8;
  next[static_cast<size_t>(s)] = 42;
  next[static_cast<size_t>(s + 3)] = 77;
  Run(std::span<const int32_t>(next).subspan(s, e - s), s, {0}, &*kv, true);
  for (int64_t l = 0; l < layers; ++l) {
    const std::vector<float> after = snapshot(l);
    for (int64_t p = 0; p < L(); ++p) {
      const bool inside = p >= s && p < e;
      bool same = true;
      for (int64_t j = 0; j < kv_dim; ++j)
        same &= after[p * kv_dim + j] == before[l][p * kv_dim + j];
      if (!inside) {
        EXPECT_TRUE(same) << "layer " << l << " position " << p << " was rewritten";
      }
      if (inside && (p == s || p == s + 3 || l > 0)) {
        EXPECT_FALSE(same) << "layer " << l << " position " << p << " was not refreshed";
      }
    }
  }
  // Layer 0 keys depend only on the token and position: they match a fresh full forward of the
  // new canvas.
  auto fresh = lm_.model->MakeKvCache(1);
  ASSERT_TRUE(fresh.ok());
  Run(next, 0, {}, &*fresh, false);
  for (int64_t j = s * kv_dim; j < e * kv_dim; ++j) {
    ASSERT_NEAR(kv->Keys(0, 0)[j], fresh->Keys(0, 0)[j], 1e-5);
  }
}

TEST_F(DiffusionCacheForwardTest, BadInPlacePlansAreErrors) {
  Status st;
  // kv_replace without a cache.
  Run(canvas_, 0, {0}, nullptr, true, &st);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  auto kv = lm_.model->MakeKvCache(1);
  ASSERT_TRUE(kv.ok());
  // Nothing cached yet: an in-place window is out of the cached range.
  Run(std::span<const int32_t>(canvas_).subspan(0, 4), 0, {0}, &*kv, true, &st);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  Run(std::span<const int32_t>(canvas_).subspan(0, 8), 0, {}, &*kv, false);
  Run(std::span<const int32_t>(canvas_).subspan(4, 8), 4, {0}, &*kv, true, &st);  // [4, 12) > 8
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(kv->PlanReplace(0, 2, 7).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(kv->PlanReplace(1, 0, 1).status().code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(kv->PlanReplace(0, 2, 6).ok());
}

}  // namespace
}  // namespace unmask
