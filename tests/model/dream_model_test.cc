// The "dream" architecture (Qwen2 layout: q/k/v biases, NEOX RoPE, shifted logits): the forward
// pass against the independent numpy reference (tests/data/golden/dream_forward, made by
// scripts/make_dream_goldens.py), the hyper-parameters, and every bad-input path of the biases.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixtures/tiny_llada.h"
#include "golden_util.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::TinyLladaSpec;

StatusOr<LoadedModel> LoadDreamFile(const std::string& name) {
  return LoadModel(testing::TestDataPath("models/" + name), LoadOptions{});
}

TEST(DreamModelTest, ReadsTheDreamHyperParameters) {
  auto lm = LoadDreamFile("dream-tiny-gqa2-f32.gguf");
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  const ModelConfig& c = lm->model->config();
  EXPECT_EQ(c.architecture, "dream");
  EXPECT_EQ(c.attention, AttentionKind::kBidirectional);
  EXPECT_EQ(c.rope_layout, RopeLayout::kNeox);
  EXPECT_TRUE(c.shift_logits) << "no diffusion.shift_logits key: Dream's default is shifted";
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ(lm->tokenizer->TokenText(lm->tokenizer->special().mask), "<|mask|>");
}

// Tolerance (from the golden file): |got - ref| <= atol + rtol |ref| with atol 1e-3, rtol 1e-4.
// The reference is float64; a float32 numpy run of the same forward differs by the amount in the
// file's tolerance_note (~1e-5 here), so the bound leaves ~100x headroom for summation order,
// while a wrong RoPE layout, a missing bias or a GQA mix-up moves logits by O(1).
TEST(DreamModelTest, ForwardMatchesTheReferenceLogits) {
  const std::string dir = testing::TestDataPath("golden/dream_forward");
  ASSERT_TRUE(std::filesystem::exists(dir));
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    const nlohmann::json g = nlohmann::json::parse(in);
    auto lm = LoadDreamFile(g.at("model").get<std::string>());
    ASSERT_TRUE(lm.ok()) << lm.status().ToString();
    EXPECT_EQ(lm->model->config().shift_logits, g.at("shift_logits").get<bool>());
    ASSERT_GE(testing::ExpectForwardNear(*lm->model, g.at("input_ids"), g.at("logits"),
                                         g.at("atol"), g.at("rtol"), e.path().filename().string()),
              0);
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// A tiny "dream" file from unmask's writer with biases added by `edit`.
std::string WriteDream(const std::string& name, std::function<void(gguf::GgufWriter&)> edit) {
  TinyLladaSpec spec;  // hidden 16, 4 heads, 2 KV heads: q bias 16, k/v bias 8
  spec.architecture = "dream";
  spec.edit = std::move(edit);
  const std::string path = testing::TempDir() + "/dream_" + name + ".gguf";
  EXPECT_EQ(testing::WriteTinyLlada(spec, path), "");
  return path;
}

// Bias data that outlives the writer.
const std::vector<float>& Ones(size_t n) {
  static std::vector<float> ones(1024, 1.0f);
  EXPECT_LE(n, ones.size());
  return ones;
}

void AddBiases(gguf::GgufWriter& w, int64_t k_len = 8) {
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.AddTensor(p + "attn_q.bias", gguf::GgmlType::kF32, {16}, Ones(16).data(), 16 * 4);
    w.AddTensor(p + "attn_k.bias", gguf::GgmlType::kF32, {k_len}, Ones(8).data(),
                static_cast<size_t>(k_len) * 4);
    w.AddTensor(p + "attn_v.bias", gguf::GgmlType::kF32, {8}, Ones(8).data(), 8 * 4);
  }
}

TEST(DreamModelTest, BiasesChangeTheOutputAndShiftKeyIsRead) {
  const std::string plain = WriteDream("plain", nullptr);
  const std::string biased = WriteDream("biased", [](gguf::GgufWriter& w) { AddBiases(w); });
  auto a = LoadModel(plain, LoadOptions{});
  auto b = LoadModel(biased, LoadOptions{});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  // The fixture writes diffusion.shift_logits = false, which overrides Dream's default.
  EXPECT_FALSE(a->model->config().shift_logits);
  const std::vector<int32_t> ids = {1, 2, 3, 4};
  const std::vector<int32_t> rows = {0, 3};
  std::vector<float> la(2 * testing::kTinyVocab), lb(la.size());
  for (auto [m, out] : {std::pair{a->model.get(), &la}, std::pair{b->model.get(), &lb}}) {
    BatchPlan plan;
    plan.sequences.push_back(SequenceInput{ids, 0, rows});
    Workspace ws;
    ASSERT_TRUE(m->Forward(plan, ws,
                           TensorView{out->data(), DType::kF32, Shape{2, testing::kTinyVocab}},
                           nullptr)
                    .ok());
  }
  double diff = 0;
  for (size_t i = 0; i < la.size(); ++i) diff = std::max(diff, std::abs(double{la[i]} - lb[i]));
  EXPECT_GT(diff, 1e-3);
}

struct BadDreamCase {
  std::string name;
  std::function<void(gguf::GgufWriter&)> edit;
  StatusCode code;
  std::string must_mention;
};
void PrintTo(const BadDreamCase& c, std::ostream* os) { *os << c.name; }

class BadDreamModelTest : public ::testing::TestWithParam<BadDreamCase> {};

TEST_P(BadDreamModelTest, FailsNamingTheTensor) {
  auto m = LoadModel(WriteDream("bad_" + GetParam().name, GetParam().edit), LoadOptions{});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), GetParam().code) << m.status().ToString();
  EXPECT_NE(m.status().message().find(GetParam().must_mention), std::string::npos)
      << m.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadDreamModelTest,
    ::testing::Values(BadDreamCase{"bias_wrong_length",
                                   [](gguf::GgufWriter& w) { AddBiases(w, 6); },
                                   StatusCode::kInvalidArgument, "blk.0.attn_k.bias"},
                      BadDreamCase{"bias_wrong_dtype",
                                   [](gguf::GgufWriter& w) {
                                     w.AddTensor("blk.1.attn_v.bias", gguf::GgmlType::kI32, {8},
                                                 Ones(8).data(), 8 * 4);
                                   },
                                   StatusCode::kInvalidArgument, "blk.1.attn_v.bias"},
                      BadDreamCase{"output_bias_wrong_length",
                                   [](gguf::GgufWriter& w) {
                                     w.AddTensor("output.bias", gguf::GgmlType::kF32, {16},
                                                 Ones(16).data(), 16 * 4);
                                   },
                                   StatusCode::kInvalidArgument, "output.bias"},
                      BadDreamCase{"fused_qkv",
                                   [](gguf::GgufWriter& w) {
                                     w.AddTensor("blk.0.attn_qkv.weight", gguf::GgmlType::kF32,
                                                 {16, 2}, Ones(32).data(), 32 * 4);
                                   },
                                   StatusCode::kUnimplemented, "blk.0.attn_qkv.weight"},
                      BadDreamCase{"shift_key_not_bool",
                                   [](gguf::GgufWriter& w) {
                                     w.Set("diffusion.shift_logits", gguf::Value::U32(1));
                                   },
                                   StatusCode::kInvalidArgument, "diffusion.shift_logits"}),
    [](const ::testing::TestParamInfo<BadDreamCase>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace unmask
