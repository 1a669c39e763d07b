// Malformed GGUF input: truncation at every length, specific corrupted fields, and a randomized
// byte-overwrite loop. Every case must give a non-OK status (never a crash, never a huge
// allocation) whose message names the file, the offending key or tensor, and the offset.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "gguf_test_helpers.h"

namespace unmask::gguf {
namespace {

using testing::ByteBuilder;
using testing::Patch;

constexpr uint32_t kTypeString = 8;
constexpr uint32_t kTypeArray = 9;
constexpr uint32_t kTypeUint32 = 4;
constexpr uint32_t kTypeBool = 7;
constexpr uint32_t kTypeUint64 = 10;
constexpr uint32_t kGgmlF32 = 0;
constexpr uint32_t kGgmlQ8_0 = 8;

// A valid hand-built image with the byte offsets of the fields the tests corrupt.
struct Image {
  std::vector<uint8_t> bytes;
  size_t arch_key_at = 0;    // metadata entry #0 key (string)
  size_t arch_value_at = 0;  // "general.architecture" value (string)
  size_t tokens_elem_type_at = 0;
  size_t tokens_count_at = 0;
  size_t tokens_string1_at = 0;  // "tokenizer.ggml.tokens" string #1
  size_t blocks_type_at = 0;     // "llama.block_count" value type
  size_t q_n_dims_at = 0;        // tensor "blk.0.attn_q.weight" (Q8_0 {32})
  size_t q_type_at = 0;
  size_t q_offset_at = 0;
  size_t e_dim1_at = 0;  // tensor "token_embd.weight" (F32 {4, 2}) second dimension
  size_t e_offset_at = 0;
};

Image MakeImage() {
  Image im;
  ByteBuilder b;
  b.Header(3, 2, 3);
  im.arch_key_at = b.size();
  b.Str("general.architecture").U32(kTypeString);
  im.arch_value_at = b.size();
  b.Str("llama");
  b.Str("tokenizer.ggml.tokens").U32(kTypeArray);
  im.tokens_elem_type_at = b.size();
  b.U32(kTypeString);
  im.tokens_count_at = b.size();
  b.U64(3).Str("a");
  im.tokens_string1_at = b.size();
  b.Str("bb").Str("ccc");
  b.Str("llama.block_count");
  im.blocks_type_at = b.size();
  b.U32(kTypeUint32).U32(5);
  // Tensor 0: Q8_0 {32} = 34 bytes at offset 0.
  b.Str("blk.0.attn_q.weight");
  im.q_n_dims_at = b.size();
  b.U32(1).U64(32);
  im.q_type_at = b.size();
  b.U32(kGgmlQ8_0);
  im.q_offset_at = b.size();
  b.U64(0);
  // Tensor 1: F32 {4, 2} = 32 bytes at offset 64; ends exactly at the end of the file.
  b.Str("token_embd.weight").U32(2).U64(4);
  im.e_dim1_at = b.size();
  b.U64(2).U32(kGgmlF32);
  im.e_offset_at = b.size();
  b.U64(64);
  b.Pad(32);
  for (int i = 0; i < 34; ++i) b.U8(static_cast<uint8_t>(i));
  b.Pad(32);
  for (int i = 0; i < 8; ++i) b.F32(static_cast<float>(i));
  im.bytes = b.bytes();
  return im;
}

StatusOr<std::unique_ptr<GgufFile>> Parse(std::vector<uint8_t> bytes) {
  return GgufFile::FromBytes(std::move(bytes), "bad.gguf");
}

// Parses `bytes` and expects an error of `code` whose message contains each of `parts`.
void ExpectError(std::vector<uint8_t> bytes, StatusCode code,
                 const std::vector<std::string>& parts) {
  auto f = Parse(std::move(bytes));
  ASSERT_FALSE(f.ok()) << "parsed OK but expected an error containing '" << parts[0] << "'";
  EXPECT_EQ(f.status().code(), code) << f.status().ToString();
  EXPECT_EQ(f.status().message().rfind("bad.gguf: ", 0), 0u) << f.status().message();
  for (const std::string& p : parts) {
    EXPECT_NE(f.status().message().find(p), std::string::npos)
        << "'" << p << "' not in: " << f.status().message();
  }
}

void ExpectDataLoss(std::vector<uint8_t> bytes, const std::vector<std::string>& parts) {
  ExpectError(std::move(bytes), StatusCode::kDataLoss, parts);
}

TEST(GgufMalformedTest, BaseImageIsValid) {
  const Image im = MakeImage();
  auto f = Parse(im.bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->metadata().size(), 3u);
  EXPECT_EQ(*(*f)->GetStringArray("tokenizer.ggml.tokens"),
            (std::vector<std::string>{"a", "bb", "ccc"}));
  ASSERT_EQ((*f)->tensors().size(), 2u);
  EXPECT_EQ((*f)->tensors()[1].offset + (*f)->data_offset() + (*f)->tensors()[1].num_bytes,
            im.bytes.size());
}

TEST(GgufMalformedTest, TruncationAtEveryLengthFails) {
  const Image im = MakeImage();
  for (size_t len = 0; len < im.bytes.size(); ++len) {
    auto f = Parse(std::vector<uint8_t>(im.bytes.begin(), im.bytes.begin() + len));
    ASSERT_FALSE(f.ok()) << "truncated to " << len << " of " << im.bytes.size() << " bytes";
    ASSERT_EQ(f.status().code(), StatusCode::kDataLoss) << f.status().ToString();
    ASSERT_NE(f.status().message().find("bad.gguf"), std::string::npos);
  }
}

// A writer-produced image with every value type, nested arrays and tensors, whose last tensor
// ends on an alignment boundary (so that any truncation removes needed bytes).
std::vector<uint8_t> RichImage() {
  static const std::vector<uint8_t> q8(2 * 34, 0x11);
  static const std::vector<float> f32(16, 0.5f);
  GgufWriter w(64);
  w.Set("general.architecture", Value::String("llama"));
  w.Set("u32", Value::U32(7));
  w.Set("i32", Value::I32(-7));
  w.Set("u64", Value::U64(1234567890123));
  w.Set("f32", Value::F32(0.25f));
  w.Set("flag", Value::Bool(true));
  w.Set("tokens", Value::StringArray({"<s>", "</s>", "", "hello"}));
  w.Set("scores", Value::F32Array({0.0f, -1.0f, 2.5f}));
  w.Set("ids", Value::I32Array({1, 2, 3}));
  Value inner = Value::I32Array({4, 5});
  Value nested;
  nested.type = ValueType::kArray;
  nested.array_type = ValueType::kArray;
  nested.arrays = {inner, Value::StringArray({"x"})};
  w.Set("nested", nested);
  w.AddTensor("q", GgmlType::kQ8_0, {64, 1}, q8.data(), q8.size());
  w.AddTensor("w", GgmlType::kF32, {16}, f32.data(), f32.size() * sizeof(float));
  auto bytes = w.WriteToBytes();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

TEST(GgufMalformedTest, TruncatingAWriterImageAtEveryLengthFails) {
  const std::vector<uint8_t> bytes = RichImage();
  ASSERT_TRUE(Parse(bytes).ok());
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto f = Parse(std::vector<uint8_t>(bytes.begin(), bytes.begin() + len));
    ASSERT_FALSE(f.ok()) << "truncated to " << len << " of " << bytes.size() << " bytes";
    ASSERT_EQ(f.status().code(), StatusCode::kDataLoss) << f.status().ToString();
  }
}

TEST(GgufMalformedTest, MissingTrailingPaddingIsAccepted) {
  // ggml and gguf-py pad after the last tensor, but the spec does not require it and llama.cpp's
  // mmap loader only needs the data itself inside the file.
  std::vector<uint8_t> bytes = MakeImage().bytes;
  bytes.resize(bytes.size() + 8);  // trailing padding bytes beyond the last tensor
  ASSERT_TRUE(Parse(bytes).ok());
  ByteBuilder b;
  b.Header(3, 0, 1).Str("a").U32(kTypeUint32).U32(1);  // no tensors, ends without padding
  auto f = Parse(b.bytes());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->data_offset(), 64u);
}

TEST(GgufMalformedTest, BadMagic) {
  std::vector<uint8_t> bytes = MakeImage().bytes;
  bytes[0] = 'G';
  bytes[1] = 'G';
  bytes[2] = 'M';
  bytes[3] = 'L';
  ExpectDataLoss(bytes, {"bad magic 'GGML'", "offset 0"});
  bytes[3] = 0x01;
  ExpectDataLoss(bytes, {"bad magic 'GGM?'"});
}

TEST(GgufMalformedTest, UnsupportedVersions) {
  for (const uint32_t version : {0u, 1u, 4u, 0x03000000u}) {
    std::vector<uint8_t> bytes = MakeImage().bytes;
    Patch<uint32_t>(bytes, 4, version);
    ExpectError(bytes, StatusCode::kUnimplemented,
                {"GGUF version " + std::to_string(version), "offset 4"});
  }
  std::vector<uint8_t> bytes = MakeImage().bytes;
  Patch<uint32_t>(bytes, 4, 0x03000000u);
  ExpectError(bytes, StatusCode::kUnimplemented, {"big-endian"});
}

TEST(GgufMalformedTest, HugeTensorCountFailsFast) {
  for (const uint64_t count :
       {uint64_t{1} << 60, std::numeric_limits<uint64_t>::max(), uint64_t{1000}}) {
    std::vector<uint8_t> bytes = MakeImage().bytes;
    Patch<uint64_t>(bytes, 8, count);
    ExpectDataLoss(bytes, {"tensor count " + std::to_string(count), "offset 8"});
  }
}

TEST(GgufMalformedTest, HugeKvCountFailsFast) {
  for (const uint64_t count : {uint64_t{1} << 60, std::numeric_limits<uint64_t>::max()}) {
    std::vector<uint8_t> bytes = MakeImage().bytes;
    Patch<uint64_t>(bytes, 16, count);
    ExpectDataLoss(bytes, {"metadata kv count " + std::to_string(count), "offset 16"});
  }
}

TEST(GgufMalformedTest, HugeStringLengths) {
  const Image im = MakeImage();
  std::vector<uint8_t> bytes = im.bytes;
  Patch<uint64_t>(bytes, im.arch_value_at, 9999999);
  ExpectDataLoss(bytes, {"metadata key 'general.architecture'", "length 9999999",
                         "offset " + std::to_string(im.arch_value_at), "runs past end of file",
                         "size " + std::to_string(im.bytes.size())});
  bytes = im.bytes;
  Patch<uint64_t>(bytes, im.arch_value_at, std::numeric_limits<uint64_t>::max());
  ExpectDataLoss(bytes, {"'general.architecture'", "18446744073709551615"});
  bytes = im.bytes;
  Patch<uint64_t>(bytes, im.arch_key_at, uint64_t{1} << 62);
  ExpectDataLoss(bytes, {"metadata entry #0", "key length"});
  bytes = im.bytes;
  Patch<uint64_t>(bytes, im.tokens_string1_at, 9999999);
  ExpectDataLoss(bytes, {"metadata key 'tokenizer.ggml.tokens'", "string #1 length 9999999",
                         "offset " + std::to_string(im.tokens_string1_at)});
}

TEST(GgufMalformedTest, HugeArrayCountFailsFast) {
  const Image im = MakeImage();
  for (const uint64_t count : {uint64_t{1} << 60, uint64_t{1000}}) {
    std::vector<uint8_t> bytes = im.bytes;
    Patch<uint64_t>(bytes, im.tokens_count_at, count);
    ExpectDataLoss(bytes, {"'tokenizer.ggml.tokens'", "array count " + std::to_string(count),
                           "offset " + std::to_string(im.tokens_count_at)});
  }
  // Numeric arrays too: 2^61 uint64s.
  ByteBuilder b;
  b.Header(3, 0, 1).Str("big").U32(kTypeArray).U32(kTypeUint64).U64(uint64_t{1} << 61).U64(0);
  ExpectDataLoss(b.bytes(), {"'big'", "array count"});
}

TEST(GgufMalformedTest, UnknownValueTypes) {
  const Image im = MakeImage();
  std::vector<uint8_t> bytes = im.bytes;
  Patch<uint32_t>(bytes, im.blocks_type_at, 13);
  ExpectDataLoss(bytes, {"'llama.block_count'", "unknown value type 13",
                         "offset " + std::to_string(im.blocks_type_at)});
  bytes = im.bytes;
  Patch<uint32_t>(bytes, im.tokens_elem_type_at, 0xFFFFFFFFu);
  ExpectDataLoss(bytes, {"'tokenizer.ggml.tokens'", "unknown array element type 4294967295"});
}

TEST(GgufMalformedTest, BoolMustBeZeroOrOne) {
  ByteBuilder b;
  b.Header(3, 0, 1).Str("flag").U32(kTypeBool).U8(2);
  ExpectDataLoss(b.bytes(), {"'flag'", "value 2", "not a bool (0 or 1)"});
}

TEST(GgufMalformedTest, UnknownGgmlTypeId) {
  const Image im = MakeImage();
  for (const uint32_t id : {4u, 5u, 31u, 36u, 40u, 1000u}) {
    std::vector<uint8_t> bytes = im.bytes;
    Patch<uint32_t>(bytes, im.q_type_at, id);
    ExpectDataLoss(bytes,
                   {"tensor 'blk.0.attn_q.weight'", "unknown ggml type id " + std::to_string(id),
                    "offset " + std::to_string(im.q_type_at)});
  }
}

TEST(GgufMalformedTest, NDimsOutOfRange) {
  const Image im = MakeImage();
  for (const uint32_t n : {0u, 5u, 0xFFFFFFFFu}) {
    std::vector<uint8_t> bytes = im.bytes;
    Patch<uint32_t>(bytes, im.q_n_dims_at, n);
    ExpectDataLoss(
        bytes, {"tensor 'blk.0.attn_q.weight'", "n_dims " + std::to_string(n), "not in [1, 4]"});
  }
}

TEST(GgufMalformedTest, BadDimensions) {
  const Image im = MakeImage();
  std::vector<uint8_t> bytes = im.bytes;
  Patch<uint64_t>(bytes, im.e_dim1_at, 0);
  ExpectDataLoss(bytes, {"tensor 'token_embd.weight'", "dimension 1 = 0",
                         "offset " + std::to_string(im.e_dim1_at)});
  bytes = im.bytes;
  Patch<uint64_t>(bytes, im.e_dim1_at, uint64_t{1} << 63);  // negative as int64
  ExpectDataLoss(bytes, {"tensor 'token_embd.weight'", "dimension 1 = 9223372036854775808"});
  // Each dim fits, the product overflows int64.
  ByteBuilder b;
  b.Header(3, 1, 0).TensorInfo("huge", {uint64_t{1} << 32, uint64_t{1} << 32}, kGgmlF32, 0);
  b.Pad(32);
  ExpectDataLoss(b.bytes(), {"tensor 'huge'", "overflows"});
  // The element count fits, the byte size does not (2^62 f32 elements).
  ByteBuilder b2;
  b2.Header(3, 1, 0).TensorInfo("big", {uint64_t{1} << 31, uint64_t{1} << 31}, kGgmlF32, 0);
  b2.Pad(32);
  ExpectDataLoss(b2.bytes(), {"tensor 'big'", "overflows"});
  // A Q8_0 row must be a whole number of 32-element blocks.
  ByteBuilder b3;
  b3.Header(3, 1, 0).TensorInfo("odd", {33}, kGgmlQ8_0, 0).Pad(32);
  for (int i = 0; i < 64; ++i) b3.U8(0);
  ExpectDataLoss(b3.bytes(), {"tensor 'odd'", "not a multiple of the q8_0 block size 32"});
}

TEST(GgufMalformedTest, TensorOffsetNotAligned) {
  const Image im = MakeImage();
  std::vector<uint8_t> bytes = im.bytes;
  Patch<uint64_t>(bytes, im.e_offset_at, 40);
  ExpectDataLoss(
      bytes, {"tensor 'token_embd.weight'", "data offset 40", "not a multiple of the alignment 32",
              "offset " + std::to_string(im.e_offset_at)});
}

TEST(GgufMalformedTest, TensorDataPastEndOfFile) {
  const Image im = MakeImage();
  std::vector<uint8_t> bytes = im.bytes;
  Patch<uint64_t>(bytes, im.e_offset_at, 96);
  ExpectDataLoss(bytes, {"tensor 'token_embd.weight'", "runs past end of file"});
  bytes = im.bytes;
  // Largest aligned offset: offset + size would overflow uint64.
  Patch<uint64_t>(bytes, im.e_offset_at, std::numeric_limits<uint64_t>::max() & ~uint64_t{31});
  ExpectDataLoss(bytes, {"tensor 'token_embd.weight'", "runs past end of file"});
  bytes = im.bytes;
  bytes.resize(bytes.size() - 1);
  ExpectDataLoss(bytes, {"tensor 'token_embd.weight'", "runs past end of file"});
}

TEST(GgufMalformedTest, BadAlignmentValues) {
  for (const uint32_t alignment : {0u, 3u, 48u, 0xFFFFFFFFu}) {
    ByteBuilder b;
    b.Header(3, 0, 1).Str("general.alignment").U32(kTypeUint32);
    const size_t value_at = b.size();
    b.U32(alignment);
    ExpectDataLoss(b.bytes(),
                   {"metadata key 'general.alignment'", "value " + std::to_string(alignment),
                    "power of two", "offset " + std::to_string(value_at)});
  }
  ByteBuilder b;
  b.Header(3, 0, 1).Str("general.alignment").U32(kTypeUint64).U64(64);
  ExpectDataLoss(b.bytes(), {"'general.alignment'", "has type uint64", "expected uint32"});
  // A valid non-default alignment is honoured.
  ByteBuilder ok;
  ok.Header(3, 1, 1).Str("general.alignment").U32(kTypeUint32).U32(16);
  ok.TensorInfo("t", {4}, kGgmlF32, 0).Pad(16);
  for (int i = 0; i < 4; ++i) ok.F32(1.0f);
  auto f = Parse(ok.bytes());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->alignment(), 16u);
  EXPECT_EQ((*f)->data_offset() % 16, 0u);
}

TEST(GgufMalformedTest, DuplicateKey) {
  ByteBuilder b;
  b.Header(3, 0, 3).Str("a").U32(kTypeUint32).U32(1).Str("b").U32(kTypeUint32).U32(2);
  const size_t dup_at = b.size();
  b.Str("a").U32(kTypeString).Str("x");
  ExpectDataLoss(b.bytes(), {"metadata key 'a'", "duplicate key", "entry #2",
                             "offset " + std::to_string(dup_at)});
}

TEST(GgufMalformedTest, DuplicateTensorName) {
  ByteBuilder b;
  b.Header(3, 2, 0).TensorInfo("w", {8}, kGgmlF32, 0);
  const size_t dup_at = b.size();
  b.TensorInfo("w", {8}, kGgmlF32, 32).Pad(32);
  for (int i = 0; i < 16; ++i) b.F32(0.0f);
  ExpectDataLoss(b.bytes(), {"tensor 'w'", "duplicate tensor name", "tensor info #1",
                             "offset " + std::to_string(dup_at)});
}

TEST(GgufMalformedTest, NestingDepthBomb) {
  // 100000 levels of "array of arrays, count 1": must stop at the depth limit, not recurse.
  ByteBuilder b;
  b.Header(3, 0, 1).Str("bomb").U32(kTypeArray);
  for (int i = 0; i < 100000; ++i) b.U32(kTypeArray).U64(1);
  b.U32(kTypeUint32).U64(0);
  ExpectDataLoss(b.bytes(), {"metadata key 'bomb'", "nested deeper than 64"});
}

TEST(GgufMalformedTest, RandomByteOverwritesNeverCrash) {
  // Fixed seed; each iteration overwrites 1-8 random bytes of a valid image (biased towards
  // header/metadata bytes and towards 0x00/0xFF/0x80 values that make lengths and counts huge).
  const std::vector<uint8_t> base = RichImage();
  ASSERT_FALSE(base.empty());
  std::mt19937 rng(20240611);
  const auto start = std::chrono::steady_clock::now();
  int num_ok = 0;
  int num_err = 0;
  constexpr int kIterations = 20000;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<uint8_t> bytes = base;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t limit = (rng() % 4 == 0) ? bytes.size() : std::min<size_t>(bytes.size(), 512);
      const size_t at = rng() % limit;
      const uint32_t r = rng() % 8;
      bytes[at] = r == 0 ? 0x00 : r == 1 ? 0xFF : r == 2 ? 0x80 : static_cast<uint8_t>(rng());
    }
    if (rng() % 8 == 0) bytes.resize(rng() % bytes.size());
    auto f = GgufFile::FromBytes(std::move(bytes), "fuzz.gguf");
    if (f.ok()) {
      ++num_ok;
      // Touch everything the reader exposes so that ASan sees any bad pointer.
      uint64_t sum = 0;
      for (const TensorInfo& t : (*f)->tensors()) {
        for (size_t i = 0; i < t.num_bytes; ++i) sum += t.data[i];
      }
      for (const MetadataEntry& m : (*f)->metadata()) sum += m.value.ToString().size();
      EXPECT_GT(sum, 0u);
    } else {
      ++num_err;
      EXPECT_NE(f.status().code(), StatusCode::kOk);
      EXPECT_FALSE(f.status().message().empty());
    }
  }
  EXPECT_EQ(num_ok + num_err, kIterations);
  EXPECT_GT(num_err, 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("fuzz_ok", num_ok);
  RecordProperty("fuzz_err", num_err);
  std::printf("fuzz: %d ok, %d errors, %.3f s\n", num_ok, num_err, seconds);
}

}  // namespace
}  // namespace unmask::gguf
