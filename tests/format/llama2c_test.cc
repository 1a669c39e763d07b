// llama2.c checkpoint/tokenizer reader and the conversion to GGUF: stories260K converts to the
// GGUF llama.cpp made of it (../shared/data), v0 and v1 checkpoints give the same tensors, and
// every malformed input is a clear error.
#include "format/llama2c.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "../test_util.h"
#include "format/gguf.h"
#include "format/gguf_test_helpers.h"

namespace unmask::llama2c {
namespace {

using gguf::GgufFile;
using gguf::GgufWriter;
using gguf::TensorInfo;
using gguf::testing::ByteBuilder;
using gguf::testing::Patch;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

// Converts and reads the result back.
std::unique_ptr<GgufFile> Convert(const Checkpoint& checkpoint, const Vocab& vocab,
                                  const ConvertOptions& options = {}) {
  GgufWriter writer;
  const Status s = BuildGguf(checkpoint, vocab, options, &writer);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto bytes = writer.WriteToBytes();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto file = GgufFile::FromBytes(*bytes, "converted.gguf");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? std::move(*file) : nullptr;
}

// ----- stories260K (../shared/data) -----

TEST(Llama2cTest, Stories260KConvertsToLlamaCppsFileByteForByte) {
  UNMASK_REQUIRE_SHARED_DATA(bin, "models/stories260K.bin");
  UNMASK_REQUIRE_SHARED_DATA(tok, "models/tok512.bin");
  UNMASK_REQUIRE_SHARED_DATA(ref, "models/stories260K.gguf");
  auto checkpoint = Checkpoint::Open(bin);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  const Config& c = (*checkpoint)->config();
  EXPECT_EQ(c.ToString(),
            "dim 64, hidden_dim 172, n_layers 5, n_heads 8, n_kv_heads 4, vocab_size 512 (shared "
            "classifier), seq_len 512");
  EXPECT_EQ(c.version, 0);
  auto vocab = ReadTokenizer(tok, c.vocab_size);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->max_token_length, 7);
  // llama.cpp's tool writes context_length 2048 (its default, not the checkpoint's seq_len).
  ConvertOptions options;
  options.context_length = 2048;
  GgufWriter writer;
  ASSERT_TRUE(BuildGguf(**checkpoint, *vocab, options, &writer).ok());
  auto bytes = writer.WriteToBytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const std::vector<uint8_t> expected = ReadAll(ref);
  ASSERT_EQ(bytes->size(), expected.size());
  EXPECT_TRUE(*bytes == expected);
}

TEST(Llama2cTest, Stories260KDefaultsKeepTensorsAndTokenizerOfTheReference) {
  UNMASK_REQUIRE_SHARED_DATA(bin, "models/stories260K.bin");
  UNMASK_REQUIRE_SHARED_DATA(tok, "models/tok512.bin");
  UNMASK_REQUIRE_SHARED_DATA(ref_path, "models/stories260K.gguf");
  auto checkpoint = Checkpoint::Open(bin);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  auto vocab = ReadTokenizer(tok, (*checkpoint)->config().vocab_size);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  auto out = Convert(**checkpoint, *vocab);
  ASSERT_NE(out, nullptr);
  auto ref = GgufFile::Open(ref_path);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  const GgufFile& r = **ref;

  // Tensors: same names, order, shapes, types and bits.
  ASSERT_EQ(out->tensors().size(), r.tensors().size());
  for (size_t i = 0; i < r.tensors().size(); ++i) {
    const TensorInfo& a = out->tensors()[i];
    const TensorInfo& b = r.tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.dims, b.dims) << a.name;
    EXPECT_EQ(a.type, b.type) << a.name;
    ASSERT_EQ(a.num_bytes, b.num_bytes) << a.name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.num_bytes), 0) << a.name;
  }
  // Metadata: the same keys in the same order; the same values except context_length, which is
  // the checkpoint's seq_len by default.
  ASSERT_EQ(out->metadata().size(), r.metadata().size());
  for (size_t i = 0; i < r.metadata().size(); ++i) {
    const auto& a = out->metadata()[i];
    const auto& b = r.metadata()[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.value.type, b.value.type) << a.key;
    if (a.key != "llama.context_length") {
      EXPECT_EQ(a.value.ToString(100000), b.value.ToString(100000)) << a.key;
    }
  }
  EXPECT_EQ(*out->GetU32("llama.context_length"), 512u);
  EXPECT_EQ(*out->GetStringArray("tokenizer.ggml.tokens"),
            *r.GetStringArray("tokenizer.ggml.tokens"));
  EXPECT_EQ(*out->GetIntArray("tokenizer.ggml.token_type"),
            *r.GetIntArray("tokenizer.ggml.token_type"));
  // Scores bit for bit (token 259 has -0.0).
  const auto* sa = out->Find("tokenizer.ggml.scores");
  const auto* sb = r.Find("tokenizer.ggml.scores");
  ASSERT_TRUE(sa && sb);
  ASSERT_EQ(sa->floats.size(), sb->floats.size());
  for (size_t i = 0; i < sa->floats.size(); ++i) {
    EXPECT_EQ(std::signbit(sa->floats[i]), std::signbit(sb->floats[i])) << i;
    EXPECT_EQ(sa->floats[i], sb->floats[i]) << i;
  }
}

// ----- synthetic checkpoints -----

struct Spec {
  int32_t dim = 8;
  int32_t hidden_dim = 12;
  int32_t num_layers = 2;
  int32_t num_heads = 4;
  int32_t num_kv_heads = 2;
  int32_t vocab_size = 16;
  int32_t seq_len = 6;
  bool shared = true;
};

// The weights of `spec`, each filled with distinct values (tensor k, element i -> k * 1000 + i).
std::map<std::string, std::vector<float>> MakeWeights(const Spec& s) {
  const int32_t kv_dim = s.dim * s.num_kv_heads / s.num_heads;
  const int32_t l = s.num_layers;
  const std::map<std::string, int64_t> sizes = {{"emb", int64_t{s.vocab_size} * s.dim},
                                                {"rms_att", l * s.dim},
                                                {"wq", int64_t{l} * s.dim * s.dim},
                                                {"wk", int64_t{l} * kv_dim * s.dim},
                                                {"wv", int64_t{l} * kv_dim * s.dim},
                                                {"wo", int64_t{l} * s.dim * s.dim},
                                                {"rms_ffn", l * s.dim},
                                                {"w1", int64_t{l} * s.hidden_dim * s.dim},
                                                {"w2", int64_t{l} * s.dim * s.hidden_dim},
                                                {"w3", int64_t{l} * s.hidden_dim * s.dim},
                                                {"rms_final", s.dim},
                                                {"wcls", int64_t{s.vocab_size} * s.dim}};
  std::map<std::string, std::vector<float>> w;
  int k = 1;
  for (const auto& [name, n] : sizes) {
    auto& v = w[name];
    for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(k * 1000 + i));
    ++k;
  }
  return w;
}

void AddFloats(ByteBuilder& b, const std::vector<float>& v) { b.Raw(v.data(), v.size() * 4); }

std::vector<uint8_t> MakeV0(const Spec& s) {
  const auto w = MakeWeights(s);
  ByteBuilder b;
  for (int32_t x : {s.dim, s.hidden_dim, s.num_layers, s.num_heads, s.num_kv_heads,
                    s.shared ? s.vocab_size : -s.vocab_size, s.seq_len}) {
    b.I32(x);
  }
  for (const char* name :
       {"emb", "rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3", "rms_final"}) {
    AddFloats(b, w.at(name));
  }
  AddFloats(b, std::vector<float>(static_cast<size_t>(s.seq_len) * (s.dim / s.num_heads), -7.f));
  if (!s.shared) AddFloats(b, w.at("wcls"));
  return b.bytes();
}

std::vector<uint8_t> MakeV1(const Spec& s, int32_t version = 1) {
  const auto w = MakeWeights(s);
  ByteBuilder b;
  b.U32(0x616b3432).I32(version);
  for (int32_t x :
       {s.dim, s.hidden_dim, s.num_layers, s.num_heads, s.num_kv_heads, s.vocab_size, s.seq_len}) {
    b.I32(x);
  }
  b.U8(s.shared ? 1 : 0).Pad(256);
  for (const char* name :
       {"rms_att", "rms_ffn", "rms_final", "emb", "wq", "wk", "wv", "wo", "w1", "w2", "w3"}) {
    AddFloats(b, w.at(name));
  }
  if (!s.shared) AddFloats(b, w.at("wcls"));
  return b.bytes();
}

// A llama2.c tokenizer.bin of n tokens: <unk>, <s>, </s> as llama2.c stores them, byte tokens,
// then words with spaces.
std::vector<std::string> TokenTexts(int n) {
  std::vector<std::string> t = {"<unk>", "\n<s>\n", "\n</s>\n"};
  for (int i = 0; static_cast<int>(t.size()) < n; ++i) {
    if (i < 4) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", 0x41 + i);
      t.emplace_back(buf);
    } else {
      t.push_back(" w" + std::to_string(i));
    }
  }
  return t;
}

std::vector<uint8_t> MakeTokenizer(int n, int32_t max_len = 8) {
  ByteBuilder b;
  b.I32(max_len);
  const auto texts = TokenTexts(n);
  for (int i = 0; i < n; ++i) {
    b.F32(-static_cast<float>(i)).I32(static_cast<int32_t>(texts[i].size()));
    b.Raw(texts[i].data(), texts[i].size());
  }
  return b.bytes();
}

std::unique_ptr<Checkpoint> Parse(std::vector<uint8_t> bytes) {
  auto c = Checkpoint::FromBytes(std::move(bytes), "model.bin");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// The float at element `i` of a GGUF tensor.
float At(const GgufFile& f, const std::string& name, size_t i) {
  const TensorInfo* t = f.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr || (i + 1) * 4 > t->num_bytes) return -1;
  float v;
  std::memcpy(&v, t->data + i * 4, 4);
  return v;
}

TEST(Llama2cTest, SyntheticV0ConvertsWithNamesShapesAndLayerSlices) {
  for (const bool shared : {true, false}) {
    Spec s;
    s.shared = shared;
    auto c = Parse(MakeV0(s));
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->config().shared_classifier, shared);
    EXPECT_EQ(c->config().kv_dim(), 4);
    auto vocab = ParseTokenizer(MakeTokenizer(16), "tok.bin", 16);
    ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
    ConvertOptions options;
    options.name = "tiny";
    auto f = Convert(*c, *vocab, options);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(*f->GetString("general.name"), "tiny");
    EXPECT_EQ(*f->GetU32("llama.context_length"), 6u);
    EXPECT_EQ(*f->GetU32("llama.rope.dimension_count"), 2u);
    EXPECT_EQ(*f->GetU32("llama.attention.head_count_kv"), 2u);
    ASSERT_EQ(f->tensors().size(), 3u + 9 * 2);
    EXPECT_EQ(f->FindTensor("blk.1.attn_k.weight")->dims, (std::vector<int64_t>{8, 4}));
    EXPECT_EQ(f->FindTensor("blk.1.ffn_down.weight")->dims, (std::vector<int64_t>{12, 8}));
    EXPECT_EQ(f->FindTensor("blk.0.ffn_gate.weight")->dims, (std::vector<int64_t>{8, 12}));
    // Tensor ids of MakeWeights (alphabetical): emb 1, rms_att 2, rms_ffn 3, rms_final 4, w1 5,
    // w2 6, w3 7, wcls 8, wk 9, wo 10, wq 11, wv 12.
    EXPECT_EQ(At(*f, "token_embd.weight", 5), 1005.f);
    EXPECT_EQ(At(*f, "output.weight", 5), shared ? 1005.f : 8005.f);
    EXPECT_EQ(At(*f, "output_norm.weight", 7), 4007.f);
    EXPECT_EQ(At(*f, "blk.1.attn_norm.weight", 0), 2008.f);
    EXPECT_EQ(At(*f, "blk.1.ffn_norm.weight", 1), 3009.f);
    EXPECT_EQ(At(*f, "blk.1.attn_q.weight", 0), 11064.f);
    EXPECT_EQ(At(*f, "blk.1.attn_k.weight", 0), 9032.f);
    EXPECT_EQ(At(*f, "blk.1.attn_v.weight", 3), 12035.f);
    EXPECT_EQ(At(*f, "blk.1.attn_output.weight", 0), 10064.f);
    EXPECT_EQ(At(*f, "blk.1.ffn_gate.weight", 0), 5096.f);
    EXPECT_EQ(At(*f, "blk.1.ffn_down.weight", 0), 6096.f);
    EXPECT_EQ(At(*f, "blk.1.ffn_up.weight", 95), 7191.f);
  }
}

TEST(Llama2cTest, V1GivesTheSameGgufAsV0) {
  for (const bool shared : {true, false}) {
    Spec s;
    s.shared = shared;
    auto v0 = Parse(MakeV0(s));
    auto v1 = Parse(MakeV1(s));
    ASSERT_TRUE(v0 && v1);
    EXPECT_EQ(v1->config().version, 1);
    EXPECT_EQ(v1->config().shared_classifier, shared);
    auto vocab = ParseTokenizer(MakeTokenizer(16), "tok.bin", 16);
    ASSERT_TRUE(vocab.ok());
    GgufWriter w0, w1;
    ASSERT_TRUE(BuildGguf(*v0, *vocab, {}, &w0).ok());
    ASSERT_TRUE(BuildGguf(*v1, *vocab, {}, &w1).ok());
    EXPECT_TRUE(*w0.WriteToBytes() == *w1.WriteToBytes()) << "shared " << shared;
  }
}

TEST(Llama2cTest, VocabularyTypesAndSpaces) {
  Vocab v;
  v.max_token_length = 8;
  v.tokens = {"<unk>", "\n<s>\n", "\n</s>\n", "", "<0x0a>", "<0x4", "<0x41>x", " a b", "x"};
  v.scores.assign(v.tokens.size(), 0.f);
  const GgufVocab g = ToGgufVocab(v);
  EXPECT_EQ(g.tokens, (std::vector<std::string>{"<unk>", "<s>", "</s>", "", "<0x0a>", "<0x4",
                                                "<0x41>x", "\u2581a\u2581b", "x"}));
  EXPECT_EQ(g.types, (std::vector<int32_t>{2, 3, 3, 3, 6, 1, 1, 1, 1}));
}

// ----- malformed checkpoints -----

void ExpectError(const StatusOr<std::unique_ptr<Checkpoint>>& c, StatusCode code,
                 const std::vector<std::string>& fragments) {
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), code) << c.status().ToString();
  for (const std::string& s : fragments) {
    EXPECT_NE(c.status().message().find(s), std::string::npos)
        << "'" << s << "' not in: " << c.status().message();
  }
}

std::vector<uint8_t> WithHeaderField(int field, int32_t value, bool v1 = false) {
  std::vector<uint8_t> bytes = v1 ? MakeV1(Spec{}) : MakeV0(Spec{});
  Patch<int32_t>(bytes, (v1 ? 8 : 0) + 4 * static_cast<size_t>(field), value);
  return bytes;
}

TEST(Llama2cMalformedTest, TooShortOrNotACheckpoint) {
  ExpectError(Checkpoint::FromBytes({}, "m.bin"), StatusCode::kDataLoss,
              {"m.bin", "0 bytes", "28"});
  ExpectError(Checkpoint::FromBytes(std::vector<uint8_t>(27, 1), "m.bin"), StatusCode::kDataLoss,
              {"m.bin", "27 bytes"});
  std::vector<uint8_t> gguf = {'G', 'G', 'U', 'F'};
  gguf.resize(64);
  ExpectError(Checkpoint::FromBytes(gguf, "m.gguf"), StatusCode::kDataLoss, {"m.gguf", "GGUF"});
}

TEST(Llama2cMalformedTest, HeaderFieldsOutOfRange) {
  const char* names[] = {"dim",        "hidden_dim", "n_layers", "n_heads",
                         "n_kv_heads", "vocab_size", "seq_len"};
  for (int field = 0; field < 7; ++field) {
    for (const int32_t bad : {0, -1, std::numeric_limits<int32_t>::max()}) {
      if (field == 5 && bad == -1) continue;  // -1: one token with a separate classifier
      SCOPED_TRACE(std::string(names[field]) + " = " + std::to_string(bad));
      ExpectError(Checkpoint::FromBytes(WithHeaderField(field, bad), "m.bin"),
                  StatusCode::kDataLoss, {"m.bin", names[field], "is not in [1, "});
    }
  }
  ExpectError(
      Checkpoint::FromBytes(WithHeaderField(5, std::numeric_limits<int32_t>::min()), "m.bin"),
      StatusCode::kDataLoss, {"vocab_size", "is not in [1, "});
  ExpectError(Checkpoint::FromBytes(WithHeaderField(1, 0, /*v1=*/true), "m.bin"),
              StatusCode::kDataLoss, {"hidden_dim = 0"});
  ExpectError(Checkpoint::FromBytes(WithHeaderField(5, -16, /*v1=*/true), "m.bin"),
              StatusCode::kDataLoss, {"vocab_size = -16"});
}

TEST(Llama2cMalformedTest, HeadsThatDoNotFit) {
  ExpectError(Checkpoint::FromBytes(WithHeaderField(3, 3), "m.bin"), StatusCode::kDataLoss,
              {"n_heads (3) does not divide dim (8)"});
  ExpectError(Checkpoint::FromBytes(WithHeaderField(4, 3), "m.bin"), StatusCode::kDataLoss,
              {"n_kv_heads (3) does not divide n_heads (4)"});
  ExpectError(Checkpoint::FromBytes(WithHeaderField(3, 8), "m.bin"), StatusCode::kDataLoss,
              {"head size", "1 is odd"});
}

TEST(Llama2cMalformedTest, FileSizeMustMatchTheHeader) {
  std::vector<uint8_t> bytes = MakeV0(Spec{});
  const size_t full = bytes.size();
  bytes.pop_back();
  ExpectError(Checkpoint::FromBytes(bytes, "m.bin"), StatusCode::kDataLoss,
              {"m.bin", std::to_string(full - 1) + " bytes", std::to_string(full) + " bytes",
               "truncated", "n_layers 2"});
  bytes.resize(full + 4);
  ExpectError(Checkpoint::FromBytes(bytes, "m.bin"), StatusCode::kDataLoss,
              {std::to_string(full + 4) + " bytes"});
  // A separate classifier behind a positive vocab_size, and a missing one behind a negative.
  Spec separate;
  separate.shared = false;
  std::vector<uint8_t> with_cls = MakeV0(separate);
  Patch<int32_t>(with_cls, 20, 16);
  ExpectError(Checkpoint::FromBytes(with_cls, "m.bin"), StatusCode::kDataLoss,
              {"negative vocab_size"});
  std::vector<uint8_t> without_cls = MakeV0(Spec{});
  Patch<int32_t>(without_cls, 20, -16);
  ExpectError(Checkpoint::FromBytes(without_cls, "m.bin"), StatusCode::kDataLoss,
              {"lacks a classifier"});
  // Huge but valid dims: the size check refuses them before anything is allocated.
  ExpectError(Checkpoint::FromBytes(WithHeaderField(2, 4096), "m.bin"), StatusCode::kDataLoss,
              {"n_layers 4096"});
}

TEST(Llama2cMalformedTest, V1Header) {
  std::vector<uint8_t> v1 = MakeV1(Spec{});
  ExpectError(Checkpoint::FromBytes(std::vector<uint8_t>(v1.begin(), v1.begin() + 100), "m.bin"),
              StatusCode::kDataLoss, {"ak42", "100 bytes", "256"});
  ExpectError(Checkpoint::FromBytes(MakeV1(Spec{}, 2), "m.bin"), StatusCode::kUnimplemented,
              {"m.bin", "version 2"});
  ExpectError(Checkpoint::FromBytes(MakeV1(Spec{}, 0), "m.bin"), StatusCode::kDataLoss,
              {"unknown version 0"});
  v1[36] = 5;
  ExpectError(Checkpoint::FromBytes(v1, "m.bin"), StatusCode::kDataLoss,
              {"shared_classifier byte is 5"});
  v1 = MakeV1(Spec{});
  v1.resize(v1.size() - 4);
  ExpectError(Checkpoint::FromBytes(v1, "m.bin"), StatusCode::kDataLoss,
              {"llama2.c v1 checkpoint", "truncated"});
}

TEST(Llama2cMalformedTest, FilesThatCannotBeRead) {
  ExpectError(Checkpoint::Open("/nonexistent/model.bin"), StatusCode::kNotFound,
              {"/nonexistent/model.bin"});
  ExpectError(Checkpoint::Open(testing::TempDir()), StatusCode::kDataLoss, {"not a regular file"});
  const std::string empty = testing::TempDir() + "/llama2c_empty.bin";
  std::ofstream(empty).close();
  ExpectError(Checkpoint::Open(empty), StatusCode::kDataLoss, {empty, "0 bytes"});
  auto tok = ReadTokenizer("/nonexistent/tok.bin", 16);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
}

TEST(Llama2cMalformedTest, OpenMapsAValidFile) {
  const std::string path = testing::TempDir() + "/llama2c_v1.bin";
  const std::vector<uint8_t> bytes = MakeV1(Spec{});
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  auto c = Checkpoint::Open(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->config().vocab_size, 16);
  EXPECT_EQ(std::memcmp((*c)->data((*c)->layout().rms_att), bytes.data() + 256, 4), 0);
}

// ----- malformed tokenizers -----

void ExpectTokError(const std::vector<uint8_t>& bytes, int64_t vocab_size,
                    const std::vector<std::string>& fragments) {
  auto v = ParseTokenizer(bytes, "tok.bin", vocab_size);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(v.status().message().find("tok.bin"), std::string::npos) << v.status().message();
  for (const std::string& s : fragments) {
    EXPECT_NE(v.status().message().find(s), std::string::npos)
        << "'" << s << "' not in: " << v.status().message();
  }
}

TEST(Llama2cMalformedTest, Tokenizers) {
  ExpectTokError({1, 0}, 16, {"2 bytes"});
  ExpectTokError(MakeTokenizer(16, 0), 16, {"max_token_length is 0"});
  ExpectTokError(MakeTokenizer(16, 2), 16, {"token #0", "length 5", "max_token_length = 2"});
  ExpectTokError(MakeTokenizer(10), 16, {"holds 10 tokens", "vocab_size is 16"});
  ExpectTokError(MakeTokenizer(20), 16, {"holds 20 tokens", "vocab_size is 16"});
  std::vector<uint8_t> t = MakeTokenizer(16);
  // Cut inside the last token's text, and inside its score/length.
  const size_t last_len = TokenTexts(16).back().size();
  ExpectTokError(std::vector<uint8_t>(t.begin(), t.end() - 1), 16,
                 {"token #15", "run past the end", std::to_string(last_len - 1) + " bytes left"});
  ExpectTokError(std::vector<uint8_t>(t.begin(), t.end() - static_cast<long>(last_len) - 3), 16,
                 {"token #15", "ends inside the score and length"});
  Patch<int32_t>(t, 8, -1);  // token #0's length
  ExpectTokError(t, 16, {"token #0 at offset 4", "length -1"});
  t = MakeTokenizer(16);
  Patch<int32_t>(t, 8, 8);  // "<unk>" is 5 bytes; claiming 8 shifts everything after it
  auto v = ParseTokenizer(t, "tok.bin", 16);
  EXPECT_FALSE(v.ok());
}

TEST(Llama2cMalformedTest, BuildRejectsMismatchedInputs) {
  auto c = Parse(MakeV0(Spec{}));
  ASSERT_NE(c, nullptr);
  auto vocab = ParseTokenizer(MakeTokenizer(10), "tok.bin", 10);
  ASSERT_TRUE(vocab.ok());
  GgufWriter w;
  Status s = BuildGguf(*c, *vocab, {}, &w);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("10 tokens"), std::string::npos) << s.message();
  ConvertOptions too_long;
  too_long.context_length = kMaxSeqLen + 1;
  vocab = ParseTokenizer(MakeTokenizer(16), "tok.bin", 16);
  s = BuildGguf(*c, *vocab, too_long, &w);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("context length"), std::string::npos) << s.message();
  Spec tiny;
  tiny.vocab_size = 2;
  auto small = Parse(MakeV0(tiny));
  ASSERT_NE(small, nullptr);
  vocab = ParseTokenizer(MakeTokenizer(2), "tok.bin", 2);
  ASSERT_TRUE(vocab.ok());
  s = BuildGguf(*small, *vocab, {}, &w);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("too small"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace unmask::llama2c
