// LLaDA Hugging Face folders (LLaDAModelLM; model/hf_import.h): a folder written here from the
// fixture's random `llada` GGUF with LLaDA's own config keys and tensor names (LLAMACPP.md "LLaDA
// GGUF": model.transformer.wte / ln_f / ff_out, blocks.N.{q,k,v}_proj / attn_out / ff_proj /
// up_proj / ff_out / attn_norm / ff_norm) and Q/K rows in the HF rotate-half order (llama.cpp's
// permutation undone) must load as the same model: the same bidirectional logits as the GGUF, to
// float rounding. Then the settings unmask does not run and the missing keys and tensors, each one
// line naming the file and the field or tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fixtures/tiny_llada.h"
#include "model/hf_import.h"
#include "model/loader.h"
#include "model/transformer.h"
#include "test_util.h"

namespace unmask {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct HfTensor {
  std::vector<int64_t> shape;  // row-major
  std::vector<float> data;
};

// A safetensors file of F32 tensors (8-byte header length, JSON header padded to 8 bytes, data).
void WriteSafetensors(const std::string& path, const std::map<std::string, HfTensor>& tensors) {
  json header = json::object();
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const size_t bytes = t.data.size() * 4;
    header[name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& [name, t] : tensors) {
    out.write(reinterpret_cast<const char*>(t.data.data()),
              static_cast<std::streamsize>(t.data.size() * 4));
  }
}

testing::TinyLladaSpec Spec() {
  testing::TinyLladaSpec spec;  // llada, hidden 16, 2 layers, 4 heads, 2 KV heads (GQA), FFN 24
  spec.seed = 7;
  return spec;
}

// Writes the fixture GGUF and the equivalent LLaDA folder; returns the folder's path.
std::string WriteLladaFolder(const std::string& tag, const std::string& gguf_path) {
  const testing::TinyLladaSpec spec = Spec();
  EXPECT_EQ(testing::WriteTinyLlada(spec, gguf_path), "");
  auto file = gguf::GgufFile::Open(gguf_path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  const int64_t hd = spec.hidden / spec.heads;
  std::map<std::string, std::string> names = {
      {"token_embd.weight", "model.transformer.wte.weight"},
      {"output_norm.weight", "model.transformer.ln_f.weight"},
      {"output.weight", "model.transformer.ff_out.weight"}};
  const std::map<std::string, std::string> per_layer = {
      {"attn_norm", "attn_norm"}, {"attn_q", "q_proj"},        {"attn_k", "k_proj"},
      {"attn_v", "v_proj"},       {"attn_output", "attn_out"}, {"ffn_norm", "ff_norm"},
      {"ffn_gate", "ff_proj"},    {"ffn_up", "up_proj"},       {"ffn_down", "ff_out"}};
  for (int64_t l = 0; l < spec.layers; ++l) {
    for (const auto& [g, h] : per_layer) {
      names["blk." + std::to_string(l) + "." + g + ".weight"] =
          "model.transformer.blocks." + std::to_string(l) + "." + h + ".weight";
    }
  }
  std::map<std::string, HfTensor> out;
  for (const gguf::TensorInfo& t : (*file)->tensors()) {
    EXPECT_EQ(t.type, gguf::GgmlType::kF32) << t.name;
    EXPECT_EQ(names.count(t.name), 1u) << t.name;
    HfTensor h;
    h.shape.assign(t.dims.rbegin(), t.dims.rend());
    h.data.resize(static_cast<size_t>(t.num_elements()));
    std::memcpy(h.data.data(), t.data, h.data.size() * 4);
    const bool q = t.name.find("attn_q.") != std::string::npos;
    if (q || t.name.find("attn_k.") != std::string::npos) {
      // llama.cpp's permute undone: GGUF row 2i + j of a head is HF row j * hd/2 + i.
      const int64_t heads = q ? spec.heads : spec.kv_heads, cols = h.shape[1];
      std::vector<float> hf(h.data.size());
      for (int64_t head = 0; head < heads; ++head) {
        for (int64_t j = 0; j < 2; ++j) {
          for (int64_t i = 0; i < hd / 2; ++i) {
            std::memcpy(&hf[static_cast<size_t>((head * hd + j * hd / 2 + i) * cols)],
                        &h.data[static_cast<size_t>((head * hd + 2 * i + j) * cols)],
                        static_cast<size_t>(cols) * 4);
          }
        }
      }
      h.data = std::move(hf);
    }
    out[names[t.name]] = std::move(h);
  }
  const fs::path dir = fs::path(::testing::TempDir()) / ("hf_llada_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  WriteSafetensors((dir / "model.safetensors").string(), out);
  const json config = {
      {"architectures", {"LLaDAModelLM"}},
      {"model_type", "llada"},
      {"d_model", spec.hidden},
      {"n_layers", spec.layers},
      {"n_heads", spec.heads},
      {"n_kv_heads", spec.kv_heads},
      {"mlp_hidden_size", spec.ffn},
      {"max_sequence_length", spec.context},
      {"vocab_size", testing::kTinyVocab},
      {"embedding_size", testing::kTinyVocab},
      {"rms_norm_eps", *(*file)->GetFloat("llada.attention.layer_norm_rms_epsilon")},
      {"rope_theta", *(*file)->GetFloat("llada.rope.freq_base")},
      {"weight_tying", false},
      {"mask_token_id", testing::kTinyMask},
      {"activation_type", "silu"},
      {"layer_norm_type", "rms"},
      {"block_type", "llama"},
      {"include_bias", false},
      {"alibi", false}};
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir.string();
}

StatusOr<std::unique_ptr<Model>> LoadFolder(const std::string& dir) {
  UNMASK_ASSIGN_OR_RETURN(auto view, ImportHfCheckpoint(dir, false));
  std::shared_ptr<const gguf::GgufFile> file(std::move(view));
  UNMASK_ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(*file));
  UNMASK_ASSIGN_OR_RETURN(auto model,
                          TransformerModel::Create(file, std::move(config), WeightMode::kPacked,
                                                   ComputeType::kF32, nullptr, DefaultBackend()));
  return std::unique_ptr<Model>(std::move(model));
}

std::vector<float> Logits(const Model& m, const std::vector<int32_t>& ids) {
  std::vector<int32_t> rows(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) rows[i] = static_cast<int32_t>(i);
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{ids, 0, rows});
  const int64_t v = m.config().vocab_size;
  std::vector<float> out(ids.size() * static_cast<size_t>(v));
  Workspace ws;
  EXPECT_TRUE(
      m.Forward(plan, ws,
                TensorView{out.data(), DType::kF32, Shape{static_cast<int64_t>(ids.size()), v}},
                nullptr)
          .ok());
  return out;
}

TEST(HfLladaImportTest, AFolderGivesTheGgufsBidirectionalLogits) {
  const std::string gguf_path = ::testing::TempDir() + "/hf_llada_fixture.gguf";
  const std::string dir = WriteLladaFolder("same", gguf_path);
  auto folder = LoadFolder(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  auto file = LoadModel(gguf_path, LoadOptions{});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const ModelConfig& c = (*folder)->config();
  EXPECT_EQ(c.architecture, "llada");
  EXPECT_EQ(c.attention, AttentionKind::kBidirectional);
  EXPECT_EQ(c.num_kv_heads, 2);
  auto view = ImportHfCheckpoint(dir, false);
  ASSERT_TRUE(view.ok());
  const gguf::Value* shift = (*view)->Find("diffusion.shift_logits");
  ASSERT_NE(shift, nullptr);
  EXPECT_FALSE(std::get<bool>(shift->scalar));  // LLaDA predicts each position from its own row
  // A canvas with masks (the mask id is the fixture's 259), every position's logits.
  const std::vector<int32_t> ids = {256, 72, 101, 108, 259, 259, 111, 259, 33, 259};
  const std::vector<float> a = Logits(**folder, ids), b = Logits(*file->model, ids);
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
  // Same f32 weights and the same computation: only the rows' order inside a head differs, which
  // RoPE pairs follow, so the result equals up to summation-order rounding (logits are O(1)).
  EXPECT_LT(worst, 1e-5);
}

TEST(HfLladaImportTest, UnsupportedSettingsAndMissingPartsNameTheField) {
  const std::string dir = WriteLladaFolder("errors", ::testing::TempDir() + "/hf_llada_e.gguf");
  std::ifstream in(dir + "/config.json");
  const json good = json::parse(in);
  auto with = [&](const std::function<void(json&)>& edit) {
    json c = good;
    edit(c);
    std::ofstream(dir + "/config.json") << c.dump();
    return ImportHfCheckpoint(dir, false);
  };
  auto expect = [](const StatusOr<std::unique_ptr<gguf::GgufFile>>& r, StatusCode code,
                   const std::string& needle) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().ToString();
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("config.json"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  };
  expect(with([](json& c) { c["activation_type"] = "gelu"; }), StatusCode::kUnimplemented,
         "activation_type");
  expect(with([](json& c) { c["layer_norm_type"] = "default"; }), StatusCode::kUnimplemented,
         "layer_norm_type");
  expect(with([](json& c) { c["include_bias"] = true; }), StatusCode::kUnimplemented,
         "include_bias");
  expect(with([](json& c) { c["alibi"] = true; }), StatusCode::kUnimplemented, "alibi");
  expect(with([](json& c) { c["block_type"] = "sequential"; }), StatusCode::kUnimplemented,
         "block_type");
  expect(with([](json& c) { c.erase("d_model"); }), StatusCode::kNotFound, "d_model");
  expect(with([](json& c) { c["n_heads"] = 3; }), StatusCode::kInvalidArgument, "n_heads");
  expect(with([](json& c) { c["embedding_size"] = 100; }), StatusCode::kInvalidArgument,
         "embedding_size");
  expect(with([](json& c) { c["mask_token_id"] = 5000; }), StatusCode::kInvalidArgument,
         "mask_token_id");
  // weight_tying true leaves model.transformer.ff_out unmapped: an unexpected tensor.
  auto tied = with([](json& c) { c["weight_tying"] = true; });
  ASSERT_FALSE(tied.ok());
  EXPECT_NE(tied.status().message().find("model.transformer.ff_out.weight"), std::string::npos)
      << tied.status().message();
  // One layer more than the file has: the missing tensor is named.
  auto more = with([](json& c) { c["n_layers"] = 3; });
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), StatusCode::kNotFound);
  EXPECT_NE(more.status().message().find("model.transformer.blocks.2.attn_norm.weight"),
            std::string::npos)
      << more.status().message();
  EXPECT_TRUE(with([](json&) {}).ok());
}

}  // namespace
}  // namespace unmask
