// The GGUF layout llama.cpp's converter writes for LLaDA-8B-Instruct (conversion/llada.py: keys,
// tensor names, shapes, F16 weights, 126464-token gpt2 vocabulary with LLaDA's special ids and chat
// template) must load in unmask unchanged. The 16 GB file is not needed: the test writes the real
// header and tensor table and extends the file sparsely (holes read as zeros, no disk used), then
// loads it with weights kept in the file (no f32 copy) and checks config, tokenizer and template.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "format/gguf.h"
#include "format/gguf_test_helpers.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

using gguf::testing::ByteBuilder;

constexpr int64_t kVocab = 126464, kHidden = 4096, kLayers = 32, kFfn = 12288;
constexpr int32_t kBos = 126080, kEos = 126081, kMask = 126336, kStartHeader = 126346,
                  kEndHeader = 126347, kEot = 126348;
constexpr uint32_t kString = 8, kArray = 9, kU32 = 4, kF32 = 6, kBool = 7, kI32 = 5;

const char* kLladaTemplate =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif "
    "%}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

struct Tensor8b {
  std::string name;
  std::vector<uint64_t> dims;  // GGUF order
  uint32_t type;               // 0 = F32, 1 = F16
};

// Writes the header and extends the file to its full size. Returns false if the file system
// cannot hold a sparse file.
bool WriteSparseLlada8b(const std::string& path) {
  std::vector<Tensor8b> tensors;
  tensors.push_back({"token_embd.weight", {kHidden, kVocab}, 1});
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    tensors.push_back({p + "attn_norm.weight", {kHidden}, 0});
    tensors.push_back({p + "attn_q.weight", {kHidden, kHidden}, 1});
    tensors.push_back({p + "attn_k.weight", {kHidden, kHidden}, 1});
    tensors.push_back({p + "attn_v.weight", {kHidden, kHidden}, 1});
    tensors.push_back({p + "attn_output.weight", {kHidden, kHidden}, 1});
    tensors.push_back({p + "ffn_norm.weight", {kHidden}, 0});
    tensors.push_back({p + "ffn_gate.weight", {kHidden, kFfn}, 1});
    tensors.push_back({p + "ffn_up.weight", {kHidden, kFfn}, 1});
    tensors.push_back({p + "ffn_down.weight", {kFfn, kHidden}, 1});
  }
  tensors.push_back({"output_norm.weight", {kHidden}, 0});
  tensors.push_back({"output.weight", {kHidden, kVocab}, 1});

  std::vector<std::pair<std::string, std::function<void(ByteBuilder&)>>> kv;
  auto str = [&](const std::string& k, const std::string& v) {
    kv.push_back({k, [v](ByteBuilder& b) { b.U32(kString).Str(v); }});
  };
  auto u32 = [&](const std::string& k, uint32_t v) {
    kv.push_back({k, [v](ByteBuilder& b) { b.U32(kU32).U32(v); }});
  };
  auto f32 = [&](const std::string& k, float v) {
    kv.push_back({k, [v](ByteBuilder& b) { b.U32(kF32).F32(v); }});
  };
  auto boolean = [&](const std::string& k, bool v) {
    kv.push_back({k, [v](ByteBuilder& b) { b.U32(kBool).U8(v ? 1 : 0); }});
  };
  str("general.architecture", "llada");
  str("general.name", "LLaDA 8B Instruct");
  u32("general.file_type", 1);
  u32("llada.vocab_size", kVocab);
  u32("llada.rope.dimension_count", 128);
  u32("llada.context_length", 4096);
  u32("llada.embedding_length", kHidden);
  u32("llada.feed_forward_length", kFfn);
  u32("llada.block_count", kLayers);
  u32("llada.attention.head_count", 32);
  u32("llada.attention.head_count_kv", 32);
  f32("llada.rope.freq_base", 500000.0f);
  f32("llada.attention.layer_norm_rms_epsilon", 1e-5f);
  boolean("llada.attention.causal", false);
  boolean("diffusion.shift_logits", false);
  str("tokenizer.ggml.model", "gpt2");
  str("tokenizer.ggml.pre", "default");  // the real file's name is not known here (see below)
  kv.push_back({"tokenizer.ggml.tokens", [](ByteBuilder& b) {
                  b.U32(kArray).U32(kString).U64(kVocab);
                  for (int64_t i = 0; i < kVocab; ++i) {
                    if (i == kBos)
                      b.Str("<|startoftext|>");
                    else if (i == kEos)
                      b.Str("<|endoftext|>");
                    else if (i == kMask)
                      b.Str("<|mdm_mask|>");
                    else if (i == kStartHeader)
                      b.Str("<|start_header_id|>");
                    else if (i == kEndHeader)
                      b.Str("<|end_header_id|>");
                    else if (i == kEot)
                      b.Str("<|eot_id|>");
                    else if (i < 94)
                      b.Str(std::string(1, static_cast<char>('!' + i)));
                    else
                      b.Str("[PAD" + std::to_string(i) + "]");
                  }
                }});
  kv.push_back({"tokenizer.ggml.token_type", [](ByteBuilder& b) {
                  b.U32(kArray).U32(kI32).U64(kVocab);
                  for (int64_t i = 0; i < kVocab; ++i) {
                    const bool control = i == kBos || i == kEos || i == kMask ||
                                         i == kStartHeader || i == kEndHeader || i == kEot;
                    b.I32(control ? 3 : (i < 94 ? 1 : 5));
                  }
                }});
  kv.push_back(
      {"tokenizer.ggml.merges", [](ByteBuilder& b) { b.U32(kArray).U32(kString).U64(0); }});
  u32("tokenizer.ggml.bos_token_id", kBos);
  u32("tokenizer.ggml.eos_token_id", kEos);
  u32("tokenizer.ggml.eot_token_id", kEot);
  u32("tokenizer.ggml.padding_token_id", kEos);
  u32("tokenizer.ggml.mask_token_id", kMask);
  boolean("tokenizer.ggml.add_bos_token", true);
  str("tokenizer.chat_template", kLladaTemplate);

  ByteBuilder b;
  b.Header(3, tensors.size(), kv.size());
  for (auto& [key, write] : kv) {
    b.Str(key);
    write(b);
  }
  uint64_t offset = 0;
  for (const Tensor8b& t : tensors) {
    b.TensorInfo(t.name, t.dims, t.type, offset);
    uint64_t n = 1;
    for (uint64_t d : t.dims) n *= d;
    offset += (n * (t.type == 0 ? 4 : 2) + 31) / 32 * 32;
  }
  b.Pad(32);
  const uint64_t total = b.size() + offset;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(b.bytes().data(), 1, b.size(), f) == b.size();
  std::fclose(f);
  if (!ok || truncate(path.c_str(), static_cast<off_t>(total)) != 0) return false;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return false;
  return static_cast<uint64_t>(st.st_blocks) * 512 < 64ull << 20;  // really sparse
}

TEST(Llada8bLayoutTest, ConverterLayoutLoadsUnchanged) {
  const std::string path = testing::TempDir() + "/llada-8b-layout.gguf";
  if (!WriteSparseLlada8b(path)) {
    std::filesystem::remove(path);
    GTEST_SKIP() << "SKIPPED: this file system cannot hold a 16 GB sparse file";
  }
  LoadOptions options;
  options.weight_mode = WeightMode::kOnTheFly;  // keep the (zero) F16 weights in the mapping
  auto loaded = LoadModel(path, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const ModelConfig& c = loaded->model->config();
  EXPECT_EQ(c.architecture, "llada");
  EXPECT_EQ(c.vocab_size, kVocab);
  EXPECT_EQ(c.hidden_size, kHidden);
  EXPECT_EQ(c.num_layers, kLayers);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.ffn_size, kFfn);
  EXPECT_EQ(c.context_length, 4096);
  EXPECT_EQ(c.rope_base, 500000.0);
  EXPECT_FALSE(c.tied_output);
  EXPECT_TRUE(c.is_diffusion());
  EXPECT_NEAR(static_cast<double>(c.NumParameters()), 8.02e9, 0.01e9);  // 16,031,162,368 bytes bf16
  EXPECT_LT(loaded->model->weight_bytes(), 17ull << 30);                // no f32 copy

  const Tokenizer& tok = *loaded->tokenizer;
  EXPECT_EQ(tok.vocab_size(), kVocab);
  EXPECT_EQ(tok.special().bos, kBos);
  EXPECT_EQ(tok.special().eos, kEos);
  EXPECT_EQ(tok.special().eot, kEot);
  EXPECT_EQ(tok.special().mask, kMask);
  const ChatMessage msg{"user", "  Why is the sky blue? "};
  auto text = tok.ApplyChatTemplate(std::span<const ChatMessage>(&msg, 1), true);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nWhy is the sky "
            "blue?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  const std::vector<int32_t> ids = tok.Encode(*text, false, true);
  ASSERT_GE(ids.size(), 5u);
  EXPECT_EQ(ids[0], kBos);
  EXPECT_EQ(ids[1], kStartHeader);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kEot), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kEndHeader), 2);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace unmask
