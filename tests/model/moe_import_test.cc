// Mixture-of-experts checkpoints as models: what the LLaDA-MoE / SDAR-MoE / Qwen3-MoE folders map
// to (llama.cpp's `<arch>.expert_*` keys, stacked `ffn_*_exps` tensors), the GGUF that
// `convert --hf` writes from them computing the same logits and routing counters as the folder,
// and every disagreement between the expert settings and the tensors giving one line that names
// the key and the tensor (config.json for folders, GGUF keys for files).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "golden_util.h"
#include "model/config.h"
#include "model/hf_import.h"
#include "model/transformer.h"
#include "test_util.h"

namespace unmask {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string CopyCheckpoint(const std::string& name, const std::string& tag) {
  const fs::path dst = fs::path(testing::TempDir()) / ("moe_import_" + tag);
  fs::remove_all(dst);
  fs::copy(testing::TestDataPath("hf/" + name), dst, fs::copy_options::recursive);
  return dst.string();
}

// config.json of a checkpoint folder.
json ReadConfig(const std::string& dir) {
  std::ifstream in(dir + "/config.json");
  return json::parse(in);
}

// Imports the folder `dir` with `good` (its config.json) changed by edit: Ok or the error.
std::function<Status(const std::function<void(json&)>&)> ConfigEdits(const std::string& dir,
                                                                     const json& good) {
  return [dir, good](const std::function<void(json&)>& edit) {
    json c = good;
    edit(c);
    std::ofstream(dir + "/config.json") << c.dump();
    auto r = ImportHfCheckpoint(dir);
    return r.ok() ? Status::Ok() : r.status();
  };
}

void ExpectOneLine(const Status& s, StatusCode code, std::initializer_list<std::string> needles) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.ToString();
  for (const std::string& n : needles) {
    EXPECT_NE(s.message().find(n), std::string::npos) << s.message();
  }
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line";
}

// Writes the GGUF view of a folder to `path`, with metadata overrides (nullopt drops the key).
void WriteGguf(const gguf::GgufFile& view, const std::string& path,
               const std::map<std::string, std::optional<gguf::Value>>& overrides = {}) {
  gguf::GgufWriter w;
  for (const auto& e : view.metadata()) {
    if (!overrides.count(e.key)) w.Set(e.key, e.value);
  }
  for (const auto& [key, value] : overrides) {
    if (value) w.Set(key, *value);
  }
  for (const auto& t : view.tensors()) w.AddTensor(t.name, t.type, t.dims, t.data, t.num_bytes);
  ASSERT_TRUE(w.WriteFile(path).ok());
}

// The model of a GGUF file with f32 packed weights.
StatusOr<std::unique_ptr<TransformerModel>> LoadGguf(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(auto opened, gguf::GgufFile::Open(path));
  std::shared_ptr<const gguf::GgufFile> file(std::move(opened));
  UNMASK_ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(*file));
  return TransformerModel::Create(file, std::move(config), WeightMode::kPacked, ComputeType::kF32,
                                  nullptr, DefaultBackend());
}

TEST(MoeImportTest, LladaMoeFolderMapsToLlamaCppsKeys) {
  auto f = ImportHfCheckpoint(testing::TestDataPath("hf/llada-moe-tiny-f32"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "llada-moe");
  EXPECT_EQ(*(*f)->GetInt("llada-moe.expert_count"), 8);
  EXPECT_EQ(*(*f)->GetInt("llada-moe.expert_used_count"), 2);
  EXPECT_EQ(*(*f)->GetInt("llada-moe.expert_feed_forward_length"), 16);
  EXPECT_FALSE(*(*f)->GetBool("llada-moe.expert_weights_norm"));
  EXPECT_FALSE(*(*f)->GetBool("llada-moe.attention.causal"));
  const gguf::TensorInfo* gate = (*f)->FindTensor("blk.1.ffn_gate_exps.weight");
  const gguf::TensorInfo* down = (*f)->FindTensor("blk.1.ffn_down_exps.weight");
  ASSERT_NE(gate, nullptr);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(gate->dims, (std::vector<int64_t>{32, 16, 8}));  // {n_embd, n_ff_exp, n_expert}
  EXPECT_EQ(down->dims, (std::vector<int64_t>{16, 32, 8}));
  EXPECT_NE((*f)->FindTensor("blk.0.ffn_gate_inp.weight"), nullptr);
  EXPECT_EQ((*f)->FindTensor("blk.0.ffn_gate.weight"), nullptr);
  auto c = ReadModelConfig(**f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->is_diffusion());
  EXPECT_FALSE(c->routing.normalize);
  auto s = ImportHfCheckpoint(testing::TestDataPath("hf/sdar-moe-tiny-bf16"));
  ASSERT_TRUE(s.ok());
  auto sc = ReadModelConfig(**s);
  ASSERT_TRUE(sc.ok());
  EXPECT_EQ(sc->architecture, "sdar-moe");
  EXPECT_TRUE(sc->is_block_diffusion());
  EXPECT_EQ(sc->block_length, 4);
  EXPECT_TRUE(sc->routing.normalize);
  EXPECT_EQ(sc->routing.top_k, 3);
}

class MoeConvertTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeConvertTest, ConvertedFileComputesWhatTheFolderComputes) {
  auto view = ImportHfCheckpoint(testing::TestDataPath("hf/" + GetParam()));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const std::string path = testing::TempDir() + "/moe_convert_" + GetParam() + ".gguf";
  WriteGguf(**view, path);
  auto file = LoadGguf(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto folder = testing::LoadHfModel(GetParam(), WeightMode::kPacked);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  const std::vector<int32_t> ids = {5, 77, 900, 1003, 1003, 1003, 12, 1003};
  std::vector<int32_t> rows(ids.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
  const int64_t v = (*file)->config().vocab_size;
  auto run = [&](const Model& m, ForwardStats* fs) {
    BatchPlan plan;
    plan.sequences.push_back(SequenceInput{ids, 0, rows});
    std::vector<float> out(ids.size() * static_cast<size_t>(v));
    Workspace ws;
    EXPECT_TRUE(
        m.Forward(plan, ws,
                  TensorView{out.data(), DType::kF32, Shape{static_cast<int64_t>(ids.size()), v}},
                  fs)
            .ok());
    return out;
  };
  ForwardStats a, b;
  EXPECT_EQ(run(**file, &a), run(**folder, &b));  // the same tensors: bit-identical
  EXPECT_EQ(a.experts_hit, b.experts_hit);
  EXPECT_EQ(a.moe_layers, (*file)->config().num_layers);
  EXPECT_EQ(a.expert_bytes, b.expert_bytes);
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, MoeConvertTest,
                         ::testing::Values("llada-moe-tiny-f32", "llada-moe-tiny-bf16-top1",
                                           "sdar-moe-tiny-bf16", "qwen3-moe-tiny"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = p.param;
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

TEST(MoeImportTest, ConfigThatDisagreesWithTheTensorsNamesKeyAndTensor) {
  const std::string dir = CopyCheckpoint("llada-moe-tiny-f32", "config");
  const json good = ReadConfig(dir);
  const auto with = ConfigEdits(dir, good);
  ExpectOneLine(with([](json& c) { c["num_experts"] = 16; }), StatusCode::kInvalidArgument,
                {"model.layers.0.mlp.gate.weight", "num_experts = 16", "[8, 32]"});
  ExpectOneLine(with([](json& c) { c["expert_intermediate_size"] = 8; }),
                StatusCode::kInvalidArgument,
                {"mlp.experts.0.gate_proj.weight", "expert_intermediate_size = 8", "[16, 32]"});
  ExpectOneLine(with([](json& c) { c["num_experts_per_tok"] = 9; }), StatusCode::kInvalidArgument,
                {"num_experts_per_tok", "at most num_experts"});
  ExpectOneLine(with([](json& c) { c.erase("num_experts"); }), StatusCode::kNotFound,
                {"num_experts is missing"});
  ExpectOneLine(with([](json& c) { c["moe_router_enable_expert_bias"] = true; }),
                StatusCode::kUnimplemented, {"moe_router_enable_expert_bias"});
  ExpectOneLine(with([](json& c) {
                  c["moe_layer_freq"] = {0, 1};
                }),
                StatusCode::kUnimplemented, {"moe_layer_freq"});
  ExpectOneLine(with([](json& c) { c["moe_router_score_function"] = "sigmoid"; }),
                StatusCode::kUnimplemented, {"moe_router_score_function"});
  ExpectOneLine(with([](json& c) { c["shared_expert_intermediate_size"] = 64; }),
                StatusCode::kUnimplemented, {"shared_expert_intermediate_size"});
  ExpectOneLine(with([](json& c) { c["qk_layernorm"] = false; }), StatusCode::kUnimplemented,
                {"qk_layernorm"});
  // An expert beyond num_experts (a config that names too few).
  const std::string q = CopyCheckpoint("qwen3-moe-tiny", "qwen3");
  std::ifstream qin(q + "/config.json");
  json qc = json::parse(qin);
  qc["decoder_sparse_step"] = 2;
  std::ofstream(q + "/config.json") << qc.dump();
  auto r = ImportHfCheckpoint(q);
  ExpectOneLine(r.status(), StatusCode::kUnimplemented, {"decoder_sparse_step"});
  qc["decoder_sparse_step"] = 1;
  qc["mlp_only_layers"] = {1};
  std::ofstream(q + "/config.json") << qc.dump();
  r = ImportHfCheckpoint(q);
  ExpectOneLine(r.status(), StatusCode::kUnimplemented, {"mlp_only_layers"});
  // Hostile values: a deeply nested one is named, not dumped (a recursive dump would overflow the
  // stack), a long one is cut, an absurd expert count is refused before anything is sized.
  const std::string nested = std::string(100000, '[') + std::string(100000, ']');
  std::ofstream(dir + "/config.json") << good.dump().replace(good.dump().find("\"num_experts\":8"),
                                                             15, "\"num_experts\":" + nested);
  auto deep = ImportHfCheckpoint(dir);
  ExpectOneLine(deep.status(), StatusCode::kInvalidArgument,
                {"num_experts", "nested more than 16 levels"});
  ExpectOneLine(with([](json& c) { c["moe_router_score_function"] = std::string(100000, 'x'); }),
                StatusCode::kUnimplemented, {"moe_router_score_function", "..."});
  const Status big = with([](json& c) { c["num_experts"] = 16777216; });
  ExpectOneLine(big, StatusCode::kInvalidArgument, {"num_experts", "at most 65536"});
  EXPECT_LT(big.message().size(), 300u);
  ASSERT_TRUE(with([](json&) {}).ok());
}

// LLaDA 2.x: each refusal names the config.json key and the condition it broke (found by an
// adversarial pass: these were reported under GGUF key names or as a bare tensor mismatch).
TEST(MoeImportTest, Llada2ConfigErrorsNameTheKey) {
  const std::string dir = CopyCheckpoint("llada2-tiny-bf16", "llada2");
  const json good = ReadConfig(dir);
  const auto with = ConfigEdits(dir, good);
  ExpectOneLine(with([](json& c) { c["topk_group"] = 5; }), StatusCode::kInvalidArgument,
                {"topk_group must be at most n_group (4)"});
  ExpectOneLine(
      with([](json& c) {
        c["topk_group"] = 1;
        c["num_experts_per_tok"] = 5;
      }),
      StatusCode::kInvalidArgument,
      {"topk_group must be large enough", "groups of 4 experts", "num_experts_per_tok (5)"});
  ExpectOneLine(with([](json& c) { c["rotary_dim"] = 12; }), StatusCode::kInvalidArgument,
                {"rotary_dim (12) disagrees with partial_rotary_factor x head_dim (8)"});
  ExpectOneLine(with([](json& c) { c["partial_rotary_factor"] = 1.5; }),
                StatusCode::kInvalidArgument, {"partial_rotary_factor must be in (0, 1]"});
  // HF's int(head_dim * factor) truncates: 16 x 0.4 = 6.4 -> 6 rotated dims.
  ASSERT_TRUE(with([](json& c) {
                c.erase("rotary_dim");
                c["partial_rotary_factor"] = 0.4;
              }).ok());
  ExpectOneLine(with([](json& c) { c["rms_norm_eps"] = 5; }), StatusCode::kInvalidArgument,
                {"config.json: rms_norm_eps must be a positive number below 1"});
  ExpectOneLine(with([](json& c) { c["rope_theta"] = 1e39; }), StatusCode::kInvalidArgument,
                {"config.json: rope_theta must be a positive number below 3.4e+38"});
  // The dense layers and the expert bias follow keys; a mismatch names them.
  ExpectOneLine(with([](json& c) { c["first_k_dense_replace"] = 2; }), StatusCode::kNotFound,
                {"first_k_dense_replace = 2 makes layer 1 dense"});
  ExpectOneLine(with([](json& c) { c["first_k_dense_replace"] = 0; }), StatusCode::kNotFound,
                {"first_k_dense_replace = 0 makes layer 0 MoE"});
  ExpectOneLine(with([](json& c) { c.erase("num_shared_experts"); }), StatusCode::kInvalidArgument,
                {"unexpected tensor", "shared_experts", "with config.json num_shared_experts = 0"});
  ExpectOneLine(with([](json& c) { c["moe_router_enable_expert_bias"] = false; }),
                StatusCode::kInvalidArgument,
                {"expert_bias", "moe_router_enable_expert_bias = false"});
  ASSERT_TRUE(with([](json&) {}).ok());
  // LLaDA-MoE: a moe_layer_freq of the wrong length is named as such.
  const std::string lm = CopyCheckpoint("llada-moe-tiny-f32", "freq");
  json lc = ReadConfig(lm);
  lc["moe_layer_freq"] = {1, 1, 1};
  std::ofstream(lm + "/config.json") << lc.dump();
  ExpectOneLine(ImportHfCheckpoint(lm).status(), StatusCode::kInvalidArgument,
                {"moe_layer_freq must be a list of num_hidden_layers (2) entries"});
}

TEST(MoeImportTest, GgufKeysThatDisagreeWithTheTensorsNameKeyAndTensor) {
  auto view = ImportHfCheckpoint(testing::TestDataPath("hf/llada-moe-tiny-f32"));
  ASSERT_TRUE(view.ok());
  const std::string path = testing::TempDir() + "/moe_bad_keys.gguf";
  auto load = [&](std::map<std::string, std::optional<gguf::Value>> overrides) {
    WriteGguf(**view, path, overrides);
    auto m = LoadGguf(path);
    return m.ok() ? Status::Ok() : m.status();
  };
  using V = gguf::Value;
  ExpectOneLine(load({{"llada-moe.expert_count", V::U32(16)}}), StatusCode::kInvalidArgument,
                {"blk.0.ffn_gate_inp.weight", "llada-moe.expert_count = 16"});
  ExpectOneLine(load({{"llada-moe.expert_feed_forward_length", V::U32(32)}}),
                StatusCode::kInvalidArgument,
                {"blk.0.ffn_gate_exps.weight", "expert_feed_forward_length = 32"});
  ExpectOneLine(load({{"llada-moe.expert_used_count", V::U32(9)}}), StatusCode::kInvalidArgument,
                {"llada-moe.expert_used_count (9) exceeds llada-moe.expert_count (8)"});
  ExpectOneLine(load({{"llada-moe.expert_group_count", V::U32(3)}}), StatusCode::kInvalidArgument,
                {"expert_group_count (3) does not divide"});
  ExpectOneLine(load({{"llada-moe.expert_group_count", V::U32(4)},
                      {"llada-moe.expert_group_used_count", V::U32(5)}}),
                StatusCode::kInvalidArgument, {"expert_group_used_count (5)"});
  ExpectOneLine(load({{"llada-moe.expert_gating_func", V::U32(3)}}), StatusCode::kUnimplemented,
                {"expert_gating_func 3"});
  ExpectOneLine(load({{"llada-moe.expert_weights_scale", V::F32(-1)}}),
                StatusCode::kInvalidArgument, {"llada-moe.expert_weights_scale must be a finite"});
  ExpectOneLine(load({{"llada-moe.expert_count", std::nullopt}}), StatusCode::kNotFound,
                {"llada-moe.expert_count"});
  // A leading dense layer the file has no dense FFN for.
  ExpectOneLine(load({{"llada-moe.leading_dense_block_count", V::U32(1)}}), StatusCode::kNotFound,
                {"blk.0.ffn_gate.weight"});
  ExpectOneLine(load({{"llada-moe.leading_dense_block_count", V::U32(1)},
                      {"llada-moe.feed_forward_length", std::nullopt}}),
                StatusCode::kNotFound, {"leading_dense_block_count", "feed_forward_length"});
  ExpectOneLine(load({{"llada-moe.leading_dense_block_count", V::U32(3)}}),
                StatusCode::kInvalidArgument, {"leading_dense_block_count (3)"});
  ExpectOneLine(load({{"llada-moe.expert_shared_count", V::U32(1)}}), StatusCode::kNotFound,
                {"blk.0.ffn_gate_shexp.weight"});
  ASSERT_TRUE(load({}).ok());
  // A dense architecture with expert keys.
  auto dense = ImportHfCheckpoint(testing::TestDataPath("hf/sdar-tiny-f32"));
  ASSERT_TRUE(dense.ok());
  WriteGguf(**dense, path, {{"sdar.expert_count", V::U32(8)}});
  auto m = LoadGguf(path);
  ExpectOneLine(m.status(), StatusCode::kUnimplemented,
                {"sdar.expert_count", "dense architecture"});
}

}  // namespace
}  // namespace unmask

namespace unmask {
namespace {

// A NaN reaching a router (here from a NaN embedding row) is reported with the layer whose router
// saw it, not only the row.
TEST(MoeImportTest, NanRouterInputNamesTheLayer) {
  auto view = ImportHfCheckpoint(testing::TestDataPath("hf/llada-moe-tiny-f32"));
  ASSERT_TRUE(view.ok());
  gguf::GgufWriter w;
  for (const auto& e : (*view)->metadata()) w.Set(e.key, e.value);
  std::vector<float> embd;
  for (const auto& t : (*view)->tensors()) {
    if (t.name != "token_embd.weight") {
      w.AddTensor(t.name, t.type, t.dims, t.data, t.num_bytes);
      continue;
    }
    ASSERT_EQ(t.type, gguf::GgmlType::kF32);
    embd.resize(t.num_bytes / sizeof(float));
    std::memcpy(embd.data(), t.data, t.num_bytes);
    std::fill_n(embd.begin() + 5 * static_cast<int64_t>(t.dims[0]), t.dims[0], std::nanf(""));
    w.AddTensor(t.name, t.type, t.dims, embd.data(), t.num_bytes);
  }
  const std::string path = testing::TempDir() + "/moe_nan_embd.gguf";
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto m = LoadGguf(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<int32_t> ids = {1, 5, 2}, rows = {0, 1, 2};
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{ids, 0, rows});
  const int64_t v = (*m)->config().vocab_size;
  std::vector<float> out(ids.size() * static_cast<size_t>(v));
  Workspace ws;
  const Status st =
      (*m)->Forward(plan, ws, TensorView{out.data(), DType::kF32, Shape{3, v}}, nullptr);
  ExpectOneLine(st, StatusCode::kInvalidArgument, {"layer 0 (blk.0.ffn_gate_inp)", "NaN"});
}

}  // namespace
}  // namespace unmask
