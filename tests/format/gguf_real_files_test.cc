// Reads the real GGUF files in ../shared/data (llama.cpp vocab files, stories260K) and writes
// stories260K back out.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../test_util.h"
#include "format/gguf.h"

namespace unmask::gguf {
namespace {

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

TEST(GgufRealFilesTest, LlamaSpmVocab) {
  UNMASK_REQUIRE_SHARED_DATA(path, "vocab/ggml-vocab-llama-spm.gguf");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetString("tokenizer.ggml.model"), "llama");
  const std::vector<std::string> tokens = *g.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 32000u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(g.GetFloatArray("tokenizer.ggml.scores")->size(), 32000u);
  EXPECT_EQ(g.GetIntArray("tokenizer.ggml.token_type")->size(), 32000u);
  EXPECT_EQ(*g.GetU32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(*g.GetU32("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_TRUE(g.tensors().empty());
  EXPECT_EQ(g.file_size(), ReadAll(path).size());
  EXPECT_EQ(g.Find("tokenizer.ggml.tokens")->ToString(3),
            "[\"<unk>\", \"<s>\", \"</s>\", ... (32000 items)]");
}

TEST(GgufRealFilesTest, Gpt2Vocab) {
  UNMASK_REQUIRE_SHARED_DATA(path, "vocab/ggml-vocab-gpt-2.gguf");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*(*f)->GetString("tokenizer.ggml.model"), "gpt2");
  const std::vector<std::string> tokens = *(*f)->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 50257u);
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(tokens[50256], "<|endoftext|>");
  EXPECT_EQ((*f)->GetStringArray("tokenizer.ggml.merges")->size(), 50000u);
}

TEST(GgufRealFilesTest, AllVocabFilesParse) {
  for (const char* name :
       {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-phi-3.gguf",
        "ggml-vocab-deepseek-coder.gguf", "ggml-vocab-bert-bge.gguf"}) {
    UNMASK_REQUIRE_SHARED_DATA(path, std::string("vocab/") + name);
    auto f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_TRUE((*f)->GetString("tokenizer.ggml.model").ok()) << name;
    EXPECT_GT((*f)->GetStringArray("tokenizer.ggml.tokens")->size(), 1000u) << name;
    for (const MetadataEntry& e : (*f)->metadata()) {
      EXPECT_FALSE(e.value.ToString().empty()) << name << " " << e.key;
    }
  }
}

TEST(GgufRealFilesTest, Stories260K) {
  UNMASK_REQUIRE_SHARED_DATA(path, "models/stories260K.gguf");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g.GetStringArray("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(*g.GetU32("llama.context_length"), 2048u);
  EXPECT_EQ(*g.GetU32("llama.embedding_length"), 64u);
  EXPECT_EQ(*g.GetU32("llama.block_count"), 5u);
  ASSERT_EQ(g.tensors().size(), 48u);
  for (const TensorInfo& t : g.tensors()) {
    EXPECT_EQ(t.type, GgmlType::kF32) << t.name;
    EXPECT_EQ(t.num_bytes, static_cast<size_t>(t.num_elements()) * 4) << t.name;
    EXPECT_EQ((g.data_offset() + t.offset) % g.alignment(), 0u) << t.name;
  }
  const TensorInfo* embd = g.FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(embd->ShapeString(), "[512, 64]");
  const TensorInfo* output = g.FindTensor("output.weight");
  ASSERT_NE(output, nullptr);
  EXPECT_EQ(output->dims, (std::vector<int64_t>{64, 512}));
  EXPECT_NE(g.FindTensor("blk.4.ffn_down.weight"), nullptr);

  // The embedding is bit-identical to the llama2.c checkpoint (7 int32 header, then the token
  // embedding table), and output.weight is a copy of it (shared/data/SOURCES.md).
  UNMASK_REQUIRE_SHARED_DATA(bin_path, "models/stories260K.bin");
  const std::vector<uint8_t> bin = ReadAll(bin_path);
  ASSERT_GE(bin.size(), 28u + embd->num_bytes);
  EXPECT_EQ(std::memcmp(embd->data, bin.data() + 28, embd->num_bytes), 0);
  EXPECT_EQ(std::memcmp(output->data, embd->data, embd->num_bytes), 0);
}

TEST(GgufRealFilesTest, Stories260KRewritesIdentically) {
  UNMASK_REQUIRE_SHARED_DATA(path, "models/stories260K.gguf");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  GgufWriter w(static_cast<uint32_t>((*f)->alignment()));
  for (const MetadataEntry& e : (*f)->metadata()) w.Set(e.key, e.value);
  for (const TensorInfo& t : (*f)->tensors()) {
    w.AddTensor(t.name, t.type, t.dims, t.data, t.num_bytes);
  }
  auto bytes = w.WriteToBytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto g = GgufFile::FromBytes(*bytes, "rewritten.gguf");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ((*g)->metadata().size(), (*f)->metadata().size());
  for (size_t i = 0; i < (*f)->metadata().size(); ++i) {
    EXPECT_EQ((*g)->metadata()[i].key, (*f)->metadata()[i].key);
    EXPECT_EQ((*g)->metadata()[i].value.ToString(100000),
              (*f)->metadata()[i].value.ToString(100000));
  }
  ASSERT_EQ((*g)->tensors().size(), 48u);
  for (size_t i = 0; i < 48; ++i) {
    const TensorInfo& a = (*f)->tensors()[i];
    const TensorInfo& b = (*g)->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.dims, b.dims);
    EXPECT_EQ(a.offset, b.offset);
    ASSERT_EQ(a.num_bytes, b.num_bytes);
    EXPECT_EQ(std::memcmp(a.data, b.data, a.num_bytes), 0) << a.name;
  }
  // The original was written by gguf-py with the same layout rules, so the bytes agree.
  EXPECT_EQ(*bytes, ReadAll(path));
}

}  // namespace
}  // namespace unmask::gguf
