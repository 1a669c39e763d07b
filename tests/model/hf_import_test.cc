// Hugging Face checkpoint folders as models (model/hf_import.h, format/hf_checkpoint.h): what a
// folder maps to (architecture, keys, GGUF names, llama's Q/K permutation), `convert --hf` output
// equal to the folder, and every malformed-input path giving one line that names the file and the
// field or tensor: config.json missing / not JSON / missing or inconsistent keys / unknown
// architectures / unsupported settings, untied without lm_head, wrong tensor shapes, unexpected
// and missing tensors, dtypes unmask does not run, bad and inconsistent indexes, truncated shards,
// and a mutation loop over config.json and the index that must never crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "format/hf_checkpoint.h"
#include "model/hf_import.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A copy of tests/data/hf/<name> in a fresh temp folder.
std::string CopyCheckpoint(const std::string& name, const std::string& tag) {
  const fs::path dst = fs::path(testing::TempDir()) / ("hf_import_" + tag);
  fs::remove_all(dst);
  fs::copy(testing::TestDataPath("hf/" + name), dst, fs::copy_options::recursive);
  return dst.string();
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}
void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void ExpectError(const StatusOr<std::unique_ptr<gguf::GgufFile>>& r, StatusCode code,
                 std::initializer_list<std::string> needles) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  for (const std::string& n : needles) {
    EXPECT_NE(r.status().message().find(n), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << "one line";
}

TEST(HfImportTest, SdarFolderMapsToTheSdarArchitecture) {
  auto f = ImportHfCheckpoint(testing::TestDataPath("hf/sdar-tiny-bf16-sharded"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "sdar");
  EXPECT_EQ(*(*f)->GetInt("diffusion.block_length"), 8);
  EXPECT_EQ(*(*f)->GetInt("sdar.attention.key_length"), 16);
  EXPECT_EQ(*(*f)->GetInt("tokenizer.ggml.mask_token_id"), 1003);
  EXPECT_EQ(*(*f)->GetString("tokenizer.ggml.pre"), "qwen2");
  ASSERT_NE((*f)->FindTensor("blk.1.attn_k_norm.weight"), nullptr);
  EXPECT_EQ((*f)->FindTensor("output.weight"), nullptr);  // tied
  EXPECT_EQ((*f)->FindTensor("token_embd.weight")->type, gguf::GgmlType::kBF16);
}

TEST(HfImportTest, LikeLlamaCppsConverterTokensArePaddedAndNormsAreF32) {
  // qwen3-tiny: 1,004 tokens for 1,024 embedding rows, BF16 weights. llama.cpp refuses a token
  // list shorter than the embedding and a BF16 norm (scripts/bench/check_llamacpp_greedy.py).
  auto f = ImportHfCheckpoint(testing::TestDataPath("hf/qwen3-tiny"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const gguf::Value* tokens = (*f)->Find("tokenizer.ggml.tokens");
  const gguf::Value* types = (*f)->Find("tokenizer.ggml.token_type");
  ASSERT_NE(tokens, nullptr);
  ASSERT_NE(types, nullptr);
  ASSERT_EQ(tokens->strings.size(), 1024u);
  ASSERT_EQ(types->ints.size(), 1024u);
  EXPECT_EQ(tokens->strings[1003], "<|MASK|>");
  EXPECT_EQ(tokens->strings[1004], "[PAD1004]");
  EXPECT_EQ(tokens->strings[1023], "[PAD1023]");
  EXPECT_EQ(types->ints[1023], 5);  // UNUSED
  EXPECT_EQ((*f)->FindTensor("token_embd.weight")->type, gguf::GgmlType::kBF16);
  for (const char* norm : {"blk.0.attn_norm.weight", "blk.0.attn_q_norm.weight",
                           "blk.1.ffn_norm.weight", "output_norm.weight"}) {
    const gguf::TensorInfo* t = (*f)->FindTensor(norm);
    ASSERT_NE(t, nullptr) << norm;
    EXPECT_EQ(t->type, gguf::GgmlType::kF32) << norm;
    EXPECT_EQ(t->num_bytes, 4 * static_cast<size_t>(t->dims[0])) << norm;
  }
  // The widened norm holds the BF16 values exactly: the loaded model's forward is unchanged
  // (hf_forward_golden_test.cc checks it against the float64 reference).
}

TEST(HfImportTest, LlamaFoldersArePermutedForInterleavedRope) {
  // A Qwen2 folder relabelled as Llama: same weights, but llama.cpp's layout stores Q/K rows
  // permuted, so the view's rows are a permutation of the folder's and the forward is the same
  // function (RoPE pairs follow the rows).
  const std::string dir = CopyCheckpoint("qwen2-tiny", "llama");
  json c = ReadJson(dir + "/config.json");
  c["architectures"] = {"LlamaForCausalLM"};
  WriteText(dir + "/config.json", c.dump());
  auto qwen = LoadModel(testing::TestDataPath("hf/qwen2-tiny"), LoadOptions{});
  auto llama = LoadModel(dir, LoadOptions{});
  ASSERT_TRUE(qwen.ok()) << qwen.status().ToString();
  ASSERT_TRUE(llama.ok()) << llama.status().ToString();
  EXPECT_EQ(llama->model->config().architecture, "llama");
  const std::vector<int32_t> ids = {5, 17, 300, 42, 999, 7};
  const std::vector<int32_t> rows = {0, 3, 5};
  const int64_t v = qwen->model->config().vocab_size;
  auto run = [&](const LoadedModel& lm) {
    BatchPlan plan;
    plan.sequences.push_back(SequenceInput{ids, 0, rows});
    std::vector<float> out(rows.size() * static_cast<size_t>(v));
    Workspace ws;
    EXPECT_TRUE(
        lm.model->Forward(plan, ws, TensorView{out.data(), DType::kF32, Shape{3, v}}, nullptr)
            .ok());
    return out;
  };
  const std::vector<float> a = run(*qwen), b = run(*llama);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4 + 1e-4 * std::abs(a[i])) << i;
}

TEST(HfImportTest, ConvertedFileEqualsTheFolder) {
  auto f = ImportHfCheckpoint(testing::TestDataPath("hf/sdar-tiny-f32"));
  ASSERT_TRUE(f.ok());
  gguf::GgufWriter w;
  for (const auto& e : (*f)->metadata()) w.Set(e.key, e.value);
  for (const auto& t : (*f)->tensors()) w.AddTensor(t.name, t.type, t.dims, t.data, t.num_bytes);
  const std::string path = testing::TempDir() + "/hf_import_converted.gguf";
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto file = LoadModel(path, LoadOptions{});
  auto folder = LoadModel(testing::TestDataPath("hf/sdar-tiny-f32"), LoadOptions{});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  EXPECT_EQ(file->model->config().block_length, folder->model->config().block_length);
  EXPECT_EQ(file->tokenizer->special().mask, folder->tokenizer->special().mask);
  EXPECT_EQ(file->tokenizer->Encode("Once upon a time", false, false),
            folder->tokenizer->Encode("Once upon a time", false, false));
}

TEST(HfImportTest, ConfigErrorsNameTheFileAndTheField) {
  const std::string dir = CopyCheckpoint("sdar-tiny-f32", "config");
  const json good = ReadJson(dir + "/config.json");
  auto with = [&](const std::function<void(json&)>& edit) {
    json c = good;
    edit(c);
    WriteText(dir + "/config.json", c.dump());
    return ImportHfCheckpoint(dir);
  };
  ExpectError(with([](json& c) { c.erase("hidden_size"); }), StatusCode::kNotFound,
              {"config.json", "hidden_size is missing"});
  ExpectError(with([](json& c) { c["num_hidden_layers"] = "two"; }), StatusCode::kInvalidArgument,
              {"config.json", "num_hidden_layers", "positive integer"});
  ExpectError(with([](json& c) { c["num_key_value_heads"] = 3; }), StatusCode::kInvalidArgument,
              {"num_key_value_heads (3) does not divide num_attention_heads (4)"});
  ExpectError(with([](json& c) { c["architectures"] = {"GPT2LMHeadModel"}; }),
              StatusCode::kUnimplemented,
              {"architectures[0] 'GPT2LMHeadModel'", "SDARForCausalLM"});
  ExpectError(with([](json& c) { c["architectures"] = 5; }), StatusCode::kInvalidArgument,
              {"architectures must be a list"});
  ExpectError(with([](json& c) {
                c["rope_scaling"] = {{"type", "yarn"}};
              }),
              StatusCode::kUnimplemented, {"rope_scaling"});
  ExpectError(with([](json& c) { c["hidden_act"] = "gelu"; }), StatusCode::kUnimplemented,
              {"hidden_act"});
  // A non-boolean flag ended the process (nlohmann's value() threw; fuzz/hf_config_fuzz.cc,
  // fuzz/regressions/hf_config_fuzz/non-boolean-use-sliding-window).
  ExpectError(with([](json& c) { c["use_sliding_window"] = "yes"; }), StatusCode::kInvalidArgument,
              {"use_sliding_window", "must be true or false"});
  ExpectError(with([](json& c) { c["mlp_bias"] = 1; }), StatusCode::kInvalidArgument,
              {"mlp_bias", "must be true or false"});
  ExpectError(with([](json& c) { c["mlp_bias"] = true; }), StatusCode::kUnimplemented,
              {"mlp_bias true"});
  ExpectError(with([](json& c) { c["hidden_size"] = 48; }), StatusCode::kInvalidArgument,
              {"model.safetensors", "model.embed_tokens.weight", "config.json implies [1024, 48]"});
  ExpectError(with([](json& c) { c["num_hidden_layers"] = 3; }), StatusCode::kNotFound,
              {"model.layers.2.", "is missing"});
  ExpectError(with([](json& c) { c["num_hidden_layers"] = 1; }), StatusCode::kInvalidArgument,
              {"unexpected tensor 'model.layers.1."});
  ExpectError(with([](json& c) { c["mask_token_id"] = 5000; }), StatusCode::kInvalidArgument,
              {"mask_token_id"});
  WriteText(dir + "/config.json", "{\"hidden_size\": ");
  ExpectError(ImportHfCheckpoint(dir), StatusCode::kDataLoss, {"config.json", "not valid JSON"});
  WriteText(dir + "/config.json", "[1, 2]");
  ExpectError(ImportHfCheckpoint(dir), StatusCode::kDataLoss, {"must be a JSON object"});
  // A number beyond double ended the process (an uncaught out_of_range; fuzz/hf_config_fuzz.cc,
  // fuzz/regressions/hf_config_fuzz/number-overflow-1e400).
  WriteText(dir + "/config.json", R"({"architectures": [1e400], "hidden_size": 64})");
  ExpectError(ImportHfCheckpoint(dir), StatusCode::kDataLoss, {"config.json", "not valid JSON"});
  fs::remove(dir + "/config.json");
  ExpectError(ImportHfCheckpoint(dir), StatusCode::kNotFound, {"no config.json"});
}

TEST(HfImportTest, WeightErrorsNameTheShardAndTheTensor) {
  // Untied config without lm_head.
  std::string dir = CopyCheckpoint("sdar-tiny-bf16-sharded", "untied");
  json c = ReadJson(dir + "/config.json");
  c["tie_word_embeddings"] = false;
  WriteText(dir + "/config.json", c.dump());
  ExpectError(ImportHfCheckpoint(dir), StatusCode::kInvalidArgument,
              {"tie_word_embeddings is false", "lm_head.weight"});
  // An index naming a missing shard, a tensor in the wrong shard, malformed maps.
  dir = CopyCheckpoint("sdar-tiny-bf16-sharded", "index");
  const json index = ReadJson(dir + "/model.safetensors.index.json");
  auto with_index = [&](const std::function<void(json&)>& edit) {
    json i = index;
    edit(i);
    WriteText(dir + "/model.safetensors.index.json", i.dump());
    return ImportHfCheckpoint(dir);
  };
  ExpectError(
      with_index([](json& i) { i["weight_map"]["model.norm.weight"] = "nope.safetensors"; }),
      StatusCode::kNotFound, {"nope.safetensors"});
  ExpectError(with_index([](json& i) { i["weight_map"]["model.norm.weight"] = "../x"; }),
              StatusCode::kDataLoss, {"weight_map['model.norm.weight']"});
  ExpectError(with_index([](json& i) { i.erase("weight_map"); }), StatusCode::kDataLoss,
              {"weight_map"});
  std::string other;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (file != index["weight_map"]["model.norm.weight"]) other = file;
  }
  ExpectError(with_index([&](json& i) { i["weight_map"]["model.norm.weight"] = other; }),
              StatusCode::kDataLoss, {"puts 'model.norm.weight' in", "no such tensor"});
  // A truncated shard.
  WriteText(dir + "/model.safetensors.index.json", index.dump());
  const std::string shard = dir + "/" + index["weight_map"]["model.norm.weight"].get<std::string>();
  fs::resize_file(shard, fs::file_size(shard) - 10);
  auto r = ImportHfCheckpoint(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(shard), std::string::npos) << r.status().message();
  // No weights at all.
  dir = CopyCheckpoint("qwen2-tiny", "noweights");
  fs::remove(dir + "/model.safetensors");
  ExpectError(ImportHfCheckpoint(dir), StatusCode::kNotFound, {"no model.safetensors"});
  EXPECT_EQ(ImportHfCheckpoint(testing::TempDir() + "/no-such-folder").status().code(),
            StatusCode::kNotFound);
}

TEST(HfImportTest, MutatedConfigsAndIndexesNeverCrash) {
  const std::string dir = CopyCheckpoint("sdar-tiny-bf16-sharded", "fuzz");
  const std::string config = [&] {
    std::ifstream in(dir + "/config.json");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  const std::string index = [&] {
    std::ifstream in(dir + "/model.safetensors.index.json");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  std::mt19937 rng(18);
  int ok = 0, failed = 0;
  for (int round = 0; round < 300; ++round) {
    std::string c = config, i = index;
    std::string& target = round % 2 == 0 ? c : i;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !target.empty(); ++e) {
      const size_t pos = rng() % target.size();
      switch (rng() % 4) {
        case 0:
          target[pos] = static_cast<char>("0123456789-{}[]\",:ae"[rng() % 20]);
          break;
        case 1:
          target.erase(pos, 1 + rng() % 8);
          break;
        case 2:
          target.insert(pos, std::to_string(static_cast<int>(rng() % 100000) - 50000));
          break;
        default:
          target.resize(pos);
          break;
      }
    }
    WriteText(dir + "/config.json", c);
    WriteText(dir + "/model.safetensors.index.json", i);
    auto r = ImportHfCheckpoint(dir);
    if (r.ok()) {
      ++ok;
    } else {
      ++failed;
      EXPECT_FALSE(r.status().message().empty());
    }
  }
  EXPECT_GT(failed, 0);
  SUCCEED() << ok << " accepted, " << failed << " refused";
}

}  // namespace
}  // namespace unmask
