// Loading LLaDA GGUF files written by unmask's own writer: hyper-parameters, forward-pass
// invariants, weight modes, and every load/forward error path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "fixtures/tiny_llada.h"
#include "model/loader.h"
#include "ops/linear.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::TinyLladaSpec;

std::string Write(const TinyLladaSpec& spec, const std::string& name) {
  const std::string path = testing::TempDir() + "/" + name + ".gguf";
  const std::string err = testing::WriteTinyLlada(spec, path);
  EXPECT_EQ(err, "");
  return path;
}

LoadedModel Load(const std::string& path, WeightMode mode = WeightMode::kAuto) {
  LoadOptions o;
  o.weight_mode = mode;
  auto m = LoadModel(path, o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// Logits for the given rows of one sequence.
std::vector<float> RunForward(const Model& m, const std::vector<int32_t>& tokens,
                              const std::vector<int32_t>& rows, int32_t pos0 = 0) {
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{tokens, pos0, rows});
  const int64_t v = m.config().vocab_size;
  std::vector<float> out(rows.size() * static_cast<size_t>(v));
  Workspace ws;
  const Status s = m.Forward(
      plan, ws, TensorView{out.data(), DType::kF32, Shape{static_cast<int64_t>(rows.size()), v}},
      nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double{a[i]} - b[i]));
  return m;
}

TEST(LladaModelTest, LoadsHyperParametersAndTokenizer) {
  LoadedModel lm = Load(Write(TinyLladaSpec{}, "basic"));
  const ModelConfig& c = lm.model->config();
  EXPECT_EQ(c.architecture, "llada");
  EXPECT_EQ(c.hidden_size, 16);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.ffn_size, 24);
  EXPECT_EQ(c.vocab_size, testing::kTinyVocab);
  EXPECT_EQ(c.context_length, 64);
  EXPECT_TRUE(c.is_diffusion());
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ(lm.tokenizer->special().mask, testing::kTinyMask);
  EXPECT_EQ(lm.tokenizer->special().eos, testing::kTinyEos);
  EXPECT_EQ(lm.tokenizer->special().eot, testing::kTinyEot);
  // 2 layers x (q 16x16 + k,v 8x16 + o 16x16 + 3 x 24x16 + 2 norms) + 2 x 260x16 + final norm.
  EXPECT_EQ(c.NumParameters(), 2 * (256 + 2 * 128 + 256 + 3 * 384 + 32) + 2 * 260 * 16 + 16);
}

TEST(LladaModelTest, LogitRowsAreIndependentOfWhichOthersAreRequested) {
  LoadedModel lm = Load(Write(TinyLladaSpec{}, "rows"));
  const std::vector<int32_t> tokens = {256, 72, 105, 259, 259, 259, 33, 259};
  const std::vector<float> all = RunForward(*lm.model, tokens, {0, 1, 2, 3, 4, 5, 6, 7});
  const std::vector<float> some = RunForward(*lm.model, tokens, {3, 6});
  const int64_t v = lm.model->config().vocab_size;
  for (int64_t j = 0; j < v; ++j) {
    EXPECT_NEAR(some[static_cast<size_t>(j)], all[static_cast<size_t>(3 * v + j)], 1e-4);
    EXPECT_NEAR(some[static_cast<size_t>(v + j)], all[static_cast<size_t>(6 * v + j)], 1e-4);
  }
  for (float x : all) ASSERT_TRUE(std::isfinite(x));
}

TEST(LladaModelTest, AttentionIsBidirectional) {
  // Changing a later token changes the logits of an earlier position.
  LoadedModel lm = Load(Write(TinyLladaSpec{}, "bidir"));
  const std::vector<float> a = RunForward(*lm.model, {256, 72, 105, 33}, {0});
  const std::vector<float> b = RunForward(*lm.model, {256, 72, 105, 34}, {0});
  EXPECT_GT(MaxAbsDiff(a, b), 1e-4);
}

TEST(LladaModelTest, LlamaArchitectureIsCausal) {
  // The same layout under general.architecture = "llama": earlier positions never see later ones.
  TinyLladaSpec spec;
  spec.architecture = "llama";
  LoadedModel lm = Load(Write(spec, "llama"));
  EXPECT_EQ(lm.model->config().attention, AttentionKind::kCausal);
  EXPECT_FALSE(lm.model->config().is_diffusion());
  const std::vector<float> a = RunForward(*lm.model, {256, 72, 105, 33}, {0, 2, 3});
  const std::vector<float> b = RunForward(*lm.model, {256, 72, 105, 34}, {0, 2, 3});
  const size_t v = static_cast<size_t>(lm.model->config().vocab_size);
  const std::vector<float> a_prefix(a.begin(), a.begin() + 2 * v),
      b_prefix(b.begin(), b.begin() + 2 * v);
  EXPECT_LT(MaxAbsDiff(a_prefix, b_prefix), 1e-6);
  const std::vector<float> a_last(a.begin() + 2 * v, a.end()), b_last(b.begin() + 2 * v, b.end());
  EXPECT_GT(MaxAbsDiff(a_last, b_last), 1e-4);
}

TEST(LladaModelTest, SequencesInABatchDoNotInteract) {
  LoadedModel lm = Load(Write(TinyLladaSpec{}, "batch"));
  const std::vector<int32_t> s1 = {256, 72, 259, 259}, s2 = {259, 1, 2};
  const std::vector<int32_t> r1 = {2, 3}, r2 = {0, 2};
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{s1, 0, r1});
  plan.sequences.push_back(SequenceInput{s2, 0, r2});
  const int64_t v = lm.model->config().vocab_size;
  std::vector<float> out(4 * static_cast<size_t>(v));
  Workspace ws;
  ForwardStats stats;
  ASSERT_TRUE(
      lm.model->Forward(plan, ws, TensorView{out.data(), DType::kF32, Shape{4, v}}, &stats).ok());
  const std::vector<float> alone1 = RunForward(*lm.model, s1, r1),
                           alone2 = RunForward(*lm.model, s2, r2);
  std::vector<float> both(alone1);
  both.insert(both.end(), alone2.begin(), alone2.end());
  EXPECT_LT(MaxAbsDiff(out, both), 1e-4);
  EXPECT_EQ(stats.num_positions, 7);
  EXPECT_EQ(stats.num_logit_rows, 4);
  EXPECT_GT(stats.flops, 0);
}

TEST(LladaModelTest, WeightModesAndDtypesAgree) {
  TinyLladaSpec spec;
  spec.hidden = 32;  // Q8_0 needs rows of whole 32-blocks
  spec.ffn = 64;
  const std::vector<int32_t> tokens = {256, 10, 20, 259, 259};
  const std::vector<int32_t> rows = {3, 4};
  spec.weight_type = gguf::GgmlType::kF32;
  const std::vector<float> ref = RunForward(*Load(Write(spec, "f32")).model, tokens, rows);
  const std::vector<float> otf =
      RunForward(*Load(Write(spec, "f32b"), WeightMode::kOnTheFly).model, tokens, rows);
  EXPECT_LT(MaxAbsDiff(ref, otf), 1e-4);
  // Lower-precision copies of the same random weights stay close (f16: 2^-11 relative per weight).
  // Native Q8_0 at M <= 16 multiplies int8 activations by default (QuantActivations::kInt8, as the
  // 4-bit types): exact agreement with the packed weights holds with f32 activations, and the int8
  // ones stay within the reference's distance.
  for (auto type : {gguf::GgmlType::kF16, gguf::GgmlType::kBF16, gguf::GgmlType::kQ8_0}) {
    spec.weight_type = type;
    const std::string path = Write(spec, "typed");
    const std::vector<float> packed =
        RunForward(*Load(path, WeightMode::kPacked).model, tokens, rows);
    const std::vector<float> native_int8x =
        RunForward(*Load(path, WeightMode::kOnTheFly).model, tokens, rows);
    SetQuantActivations(QuantActivations::kF32);
    const std::vector<float> native =
        RunForward(*Load(path, WeightMode::kOnTheFly).model, tokens, rows);
    SetQuantActivations(QuantActivations::kInt8);
    EXPECT_LT(MaxAbsDiff(packed, native), 1e-4) << static_cast<int>(type);
    EXPECT_LT(MaxAbsDiff(packed, ref), 0.5) << static_cast<int>(type);
    EXPECT_LT(MaxAbsDiff(native_int8x, ref), 0.5) << static_cast<int>(type);
  }
}

TEST(LladaModelTest, TiedOutputUsesTheEmbedding) {
  TinyLladaSpec spec;
  spec.tied = true;
  LoadedModel lm = Load(Write(spec, "tied"));
  EXPECT_TRUE(lm.model->config().tied_output);
  const std::vector<float> l = RunForward(*lm.model, {256, 5}, {1});
  for (float x : l) ASSERT_TRUE(std::isfinite(x));
}

struct BadModelCase {
  std::string name;
  std::function<void(TinyLladaSpec&)> edit;
  StatusCode code;
  std::string must_mention;
};

void PrintTo(const BadModelCase& c, std::ostream* os) { *os << c.name; }

class BadModelTest : public ::testing::TestWithParam<BadModelCase> {};

TEST_P(BadModelTest, FailsWithAClearError) {
  TinyLladaSpec spec;
  GetParam().edit(spec);
  const std::string path = Write(spec, "bad_" + GetParam().name);
  auto m = LoadModel(path, LoadOptions{});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), GetParam().code) << m.status().ToString();
  EXPECT_NE(m.status().message().find(GetParam().must_mention), std::string::npos)
      << m.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadModelTest,
    ::testing::Values(
        BadModelCase{"missing_tensor",
                     [](TinyLladaSpec& s) { s.skip_tensor = "blk.1.ffn_up.weight"; },
                     StatusCode::kNotFound, "blk.1.ffn_up.weight"},
        BadModelCase{"wrong_shape",
                     [](TinyLladaSpec& s) { s.misshape_tensor = "blk.0.attn_k.weight"; },
                     StatusCode::kInvalidArgument, "blk.0.attn_k.weight"},
        BadModelCase{"unknown_arch", [](TinyLladaSpec& s) { s.architecture = "gpt-neox"; },
                     StatusCode::kUnimplemented, "gpt-neox"},
        BadModelCase{"heads_not_dividing",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.attention.head_count", gguf::Value::U32(3));
                       };
                     },
                     StatusCode::kInvalidArgument, "head_count"},
        BadModelCase{"kv_heads_not_dividing",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.attention.head_count_kv", gguf::Value::U32(3));
                       };
                     },
                     StatusCode::kInvalidArgument, "head_count_kv"},
        BadModelCase{"missing_key",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.block_count", gguf::Value::String("two"));
                       };
                     },
                     StatusCode::kInvalidArgument, "llada.block_count"},
        BadModelCase{"zero_layers",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.block_count", gguf::Value::U32(0));
                       };
                     },
                     StatusCode::kInvalidArgument, "block_count"},
        BadModelCase{"causal_flag",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.attention.causal", gguf::Value::Bool(true));
                       };
                     },
                     StatusCode::kInvalidArgument, "attention.causal"},
        BadModelCase{"shifted_logits",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("diffusion.shift_logits", gguf::Value::Bool(true));
                       };
                     },
                     StatusCode::kUnimplemented, "shift_logits"},
        BadModelCase{"huge_block_count",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.block_count", gguf::Value::U32(4000));
                       };
                     },
                     StatusCode::kInvalidArgument, "tensors"},
        BadModelCase{"absurd_block_count",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.block_count", gguf::Value::U32(2147483648u));
                       };
                     },
                     StatusCode::kInvalidArgument, "block_count"},
        BadModelCase{"absurd_context",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.context_length", gguf::Value::U32(1u << 30));
                       };
                     },
                     StatusCode::kInvalidArgument, "context_length"},
        BadModelCase{"vocab_size_mismatch",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.vocab_size", gguf::Value::U32(1000));
                       };
                     },
                     StatusCode::kInvalidArgument, "vocab_size"},
        BadModelCase{"odd_head_dim",
                     [](TinyLladaSpec& s) {
                       s.hidden = 12;  // head size 3: RoPE pairs need an even size
                       s.heads = 4;
                       s.kv_heads = 4;
                     },
                     StatusCode::kInvalidArgument, "even"},
        BadModelCase{"infinite_rope_base",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("llada.rope.freq_base",
                               gguf::Value::F32(std::numeric_limits<float>::infinity()));
                       };
                     },
                     StatusCode::kInvalidArgument, "freq_base"},
        BadModelCase{"no_mask_token", [](TinyLladaSpec& s) { s.with_mask_token = false; },
                     StatusCode::kFailedPrecondition, "mask"},
        BadModelCase{"unknown_tokenizer",
                     [](TinyLladaSpec& s) {
                       s.edit = [](gguf::GgufWriter& w) {
                         w.Set("tokenizer.ggml.model", gguf::Value::String("wordpiece-x"));
                       };
                     },
                     StatusCode::kUnimplemented, "wordpiece-x"}),
    [](const ::testing::TestParamInfo<BadModelCase>& param_info) { return param_info.param.name; });

TEST(LladaModelLoadTest, MissingAndTruncatedFiles) {
  auto missing = LoadModel(testing::TempDir() + "/does-not-exist.gguf", LoadOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("does-not-exist.gguf"), std::string::npos);
  const std::string path = Write(TinyLladaSpec{}, "truncated");
  const auto size = std::filesystem::file_size(path);
  for (double frac : {0.001, 0.1, 0.5, 0.9, 0.999}) {
    std::filesystem::resize_file(path, static_cast<uintmax_t>(static_cast<double>(size) * frac));
    auto m = LoadModel(path, LoadOptions{});
    EXPECT_FALSE(m.ok()) << frac;
    ASSERT_EQ(testing::WriteTinyLlada(TinyLladaSpec{}, path), "");
  }
}

TEST(LladaModelForwardTest, RejectsBadPlans) {
  LoadedModel lm = Load(Write(TinyLladaSpec{}, "plans"));
  const Model& m = *lm.model;
  const int64_t v = m.config().vocab_size;
  std::vector<float> out(2 * static_cast<size_t>(v));
  Workspace ws;
  auto forward = [&](const std::vector<int32_t>& tokens, const std::vector<int32_t>& rows,
                     int32_t pos0, int64_t out_rows) {
    BatchPlan plan;
    plan.sequences.push_back(SequenceInput{tokens, pos0, rows});
    return m.Forward(plan, ws, TensorView{out.data(), DType::kF32, Shape{out_rows, v}}, nullptr);
  };
  EXPECT_EQ(forward({1, 999}, {0}, 0, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(forward({1, -1}, {0}, 0, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(forward({1, 2}, {0}, 63, 1).code(), StatusCode::kInvalidArgument);  // past context
  EXPECT_EQ(forward({1, 2}, {0}, -1, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(forward({1, 2}, {1, 0}, 0, 2).code(), StatusCode::kInvalidArgument);  // unsorted
  EXPECT_EQ(forward({1, 2}, {2}, 0, 1).code(), StatusCode::kInvalidArgument);     // out of range
  EXPECT_EQ(forward({1, 2}, {0, 1}, 0, 1).code(), StatusCode::kInvalidArgument);  // logits shape
  EXPECT_TRUE(forward({1, 2}, {0, 1}, 0, 2).ok());
}

}  // namespace
}  // namespace unmask
