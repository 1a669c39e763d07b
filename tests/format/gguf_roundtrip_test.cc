// GgufWriter -> GgufFile round trips: every value type, nested and empty arrays, strings,
// tensors of several types, alignment, version 2, files on disk, and the typed getters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../test_util.h"
#include "format/gguf.h"
#include "gguf_test_helpers.h"

namespace unmask::gguf {
namespace {

using testing::ByteBuilder;

Value Scalar(ValueType type, decltype(Value::scalar) payload) {
  Value v;
  v.type = type;
  v.scalar = std::move(payload);
  return v;
}

Value Array(ValueType elem) {
  Value v;
  v.type = ValueType::kArray;
  v.array_type = elem;
  return v;
}

std::unique_ptr<GgufFile> ParseOk(std::vector<uint8_t> bytes) {
  auto file = GgufFile::FromBytes(std::move(bytes), "test.gguf");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? std::move(file).value() : nullptr;
}

std::vector<uint8_t> WriteOk(const GgufWriter& writer) {
  auto bytes = writer.WriteToBytes();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

TEST(GgufRoundTripTest, EveryScalarType) {
  GgufWriter w;
  w.Set("u8", Scalar(ValueType::kUint8, uint64_t{255}));
  w.Set("i8", Scalar(ValueType::kInt8, int64_t{-128}));
  w.Set("u16", Scalar(ValueType::kUint16, uint64_t{65535}));
  w.Set("i16", Scalar(ValueType::kInt16, int64_t{-32768}));
  w.Set("u32", Value::U32(4294967295u));
  w.Set("i32", Value::I32(std::numeric_limits<int32_t>::min()));
  w.Set("f32", Value::F32(0.1f));
  w.Set("bool_t", Value::Bool(true));
  w.Set("bool_f", Value::Bool(false));
  w.Set("str", Value::String("hello"));
  w.Set("u64", Value::U64(std::numeric_limits<uint64_t>::max()));
  w.Set("i64", Scalar(ValueType::kInt64, std::numeric_limits<int64_t>::min()));
  w.Set("f64", Scalar(ValueType::kFloat64, 0.1));
  auto f = ParseOk(WriteOk(w));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->Find("general.alignment"), nullptr);  // default alignment is not written
  ASSERT_EQ(f->metadata().size(), 13u);
  // Insertion order is kept.
  const char* order[] = {"u8",     "i8",     "u16", "i16", "u32", "i32", "f32",
                         "bool_t", "bool_f", "str", "u64", "i64", "f64"};
  for (size_t i = 0; i < 13; ++i) EXPECT_EQ(f->metadata()[i].key, order[i]);

  EXPECT_EQ(f->Find("u8")->type, ValueType::kUint8);
  EXPECT_EQ(*f->GetInt("u8"), 255);
  EXPECT_EQ(f->Find("i8")->type, ValueType::kInt8);
  EXPECT_EQ(*f->GetInt("i8"), -128);
  EXPECT_EQ(*f->GetInt("u16"), 65535);
  EXPECT_EQ(*f->GetInt("i16"), -32768);
  EXPECT_EQ(*f->GetU32("u32"), 4294967295u);
  EXPECT_EQ(*f->GetInt("i32"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(f->Find("f32")->type, ValueType::kFloat32);
  EXPECT_EQ(*f->GetFloat("f32"), static_cast<double>(0.1f));
  EXPECT_TRUE(*f->GetBool("bool_t"));
  EXPECT_FALSE(*f->GetBool("bool_f"));
  EXPECT_EQ(*f->GetString("str"), "hello");
  EXPECT_EQ(std::get<uint64_t>(f->Find("u64")->scalar), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*f->GetInt("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->Find("f64")->type, ValueType::kFloat64);
  EXPECT_EQ(*f->GetFloat("f64"), 0.1);  // exact: stored as float64
}

TEST(GgufRoundTripTest, EveryArrayTypeIncludingEmpty) {
  GgufWriter w;
  Value u8 = Array(ValueType::kUint8);
  u8.uints = {0, 1, 255};
  Value i8 = Array(ValueType::kInt8);
  i8.ints = {-128, 0, 127};
  Value u16 = Array(ValueType::kUint16);
  u16.uints = {65535, 7};
  Value i16 = Array(ValueType::kInt16);
  i16.ints = {-32768, 32767};
  Value u32 = Array(ValueType::kUint32);
  u32.uints = {4294967295u};
  Value u64 = Array(ValueType::kUint64);
  u64.uints = {std::numeric_limits<uint64_t>::max(), 0};
  Value i64 = Array(ValueType::kInt64);
  i64.ints = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  Value f64 = Array(ValueType::kFloat64);
  f64.floats = {0.1, -2.5e300};
  Value bools = Array(ValueType::kBool);
  bools.bools = {1, 0, 1};
  w.Set("u8", u8);
  w.Set("i8", i8);
  w.Set("u16", u16);
  w.Set("i16", i16);
  w.Set("u32", u32);
  w.Set("i32", Value::I32Array({-1, 0, 2147483647}));
  w.Set("f32", Value::F32Array({0.5f, -1e-5f, std::numeric_limits<float>::infinity()}));
  w.Set("bool", bools);
  w.Set("str", Value::StringArray({"a", "", "\xC3\xA9\xE4\xB8\x96\xF0\x9F\x8E\x89"}));
  w.Set("u64", u64);
  w.Set("i64", i64);
  w.Set("f64", f64);
  for (uint32_t t = 0; t <= 12; ++t) {  // an empty array of every element type
    w.Set("empty." + std::to_string(t), Array(static_cast<ValueType>(t)));
  }
  auto f = ParseOk(WriteOk(w));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->Find("u8")->uints, u8.uints);
  EXPECT_EQ(f->Find("u8")->array_type, ValueType::kUint8);
  EXPECT_EQ(f->Find("i8")->ints, i8.ints);
  EXPECT_EQ(f->Find("u16")->uints, u16.uints);
  EXPECT_EQ(f->Find("i16")->ints, i16.ints);
  EXPECT_EQ(f->Find("u32")->uints, u32.uints);
  EXPECT_EQ(*f->GetIntArray("i32"), (std::vector<int64_t>{-1, 0, 2147483647}));
  const std::vector<double> f32 = *f->GetFloatArray("f32");
  ASSERT_EQ(f32.size(), 3u);
  EXPECT_EQ(f32[0], 0.5);
  EXPECT_EQ(f32[1], static_cast<double>(-1e-5f));
  EXPECT_TRUE(std::isinf(f32[2]));
  EXPECT_EQ(f->Find("bool")->bools, bools.bools);
  EXPECT_EQ(*f->GetStringArray("str"),
            (std::vector<std::string>{"a", "", "\xC3\xA9\xE4\xB8\x96\xF0\x9F\x8E\x89"}));
  EXPECT_EQ(f->Find("u64")->uints, u64.uints);
  EXPECT_EQ(f->Find("i64")->ints, i64.ints);
  EXPECT_EQ(f->Find("f64")->floats, f64.floats);
  for (uint32_t t = 0; t <= 12; ++t) {
    const Value* v = f->Find("empty." + std::to_string(t));
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(v->is_array());
    EXPECT_EQ(v->array_type, static_cast<ValueType>(t));
    EXPECT_EQ(v->array_size(), 0u);
  }
}

TEST(GgufRoundTripTest, StringsKeepEmbeddedNulUnicodeAndEmpty) {
  const std::string with_nul("a\0b", 3);
  GgufWriter w;
  w.Set("empty", Value::String(""));
  w.Set("nul", Value::String(with_nul));
  w.Set("unicode", Value::String("h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x8E\x89"));
  w.Set("", Value::U32(1));  // rejected: keys must be non-empty
  EXPECT_FALSE(w.WriteToBytes().ok());
  GgufWriter w2;
  w2.Set("empty", Value::String(""));
  w2.Set("nul", Value::String(with_nul));
  w2.Set("unicode", Value::String("h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x8E\x89"));
  auto f = ParseOk(WriteOk(w2));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetString("empty"), "");
  EXPECT_EQ(*f->GetString("nul"), with_nul);
  EXPECT_EQ(*f->GetString("unicode"), "h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x8E\x89");
}

TEST(GgufRoundTripTest, NestedArrays) {
  Value inner_a = Array(ValueType::kUint32);
  inner_a.uints = {1, 2};
  Value inner_b = Array(ValueType::kUint32);  // empty
  Value inner_c = Array(ValueType::kString);  // inner arrays may differ in element type
  inner_c.strings = {"x", "yz"};
  Value outer = Array(ValueType::kArray);
  outer.arrays = {inner_a, inner_b, inner_c};
  Value outer2 = Array(ValueType::kArray);
  outer2.arrays = {outer, Array(ValueType::kArray)};
  GgufWriter w;
  w.Set("nested", outer);
  w.Set("nested2", outer2);
  auto f = ParseOk(WriteOk(w));
  ASSERT_NE(f, nullptr);
  const Value* v = f->Find("nested");
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->array_type, ValueType::kArray);
  ASSERT_EQ(v->arrays.size(), 3u);
  EXPECT_EQ(v->arrays[0].uints, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(v->arrays[1].array_type, ValueType::kUint32);
  EXPECT_EQ(v->arrays[1].array_size(), 0u);
  EXPECT_EQ(v->arrays[2].strings, (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(v->ToString(), "[[1, 2], [], [\"x\", \"yz\"]]");
  const Value* v2 = f->Find("nested2");
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(v2->ToString(), "[[[1, 2], [], [\"x\", \"yz\"]], []]");
}

// Builds `depth` levels of arrays of arrays around an array of one uint8.
Value NestedToDepth(int depth) {
  Value v = Array(ValueType::kUint8);
  v.uints = {7};
  for (int d = 1; d < depth; ++d) {
    Value outer = Array(ValueType::kArray);
    outer.arrays.push_back(std::move(v));
    v = std::move(outer);
  }
  return v;
}

TEST(GgufRoundTripTest, NestingUpToDepth64IsAcceptedAndDeeperIsRejected) {
  GgufWriter w;
  w.Set("deep", NestedToDepth(64));
  auto f = ParseOk(WriteOk(w));
  ASSERT_NE(f, nullptr);
  const Value* v = f->Find("deep");
  for (int d = 1; d < 64; ++d) {
    ASSERT_EQ(v->arrays.size(), 1u);
    v = &v->arrays[0];
  }
  EXPECT_EQ(v->uints, (std::vector<uint64_t>{7}));

  GgufWriter too_deep;
  too_deep.Set("deep", NestedToDepth(65));
  auto bytes = too_deep.WriteToBytes();
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bytes.status().message().find("'deep'"), std::string::npos);
}

// Deterministic test data of `n` bytes.
std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(seed + i * 31);
  return out;
}

void ExpectTensorsRoundTrip(uint32_t alignment) {
  const std::vector<uint8_t> f32 = Pattern(4 * 3 * 4, 1);             // F32 {4, 3}
  const std::vector<uint8_t> f16 = Pattern(8 * 2, 2);                 // F16 {8}
  const std::vector<uint8_t> bf16 = Pattern(2 * 2 * 2 * 2, 3);        // BF16 {2, 2, 2}
  const std::vector<uint8_t> q8 = Pattern(2 * 2 * 34, 4);             // Q8_0 {64, 2}: 4 blocks
  const std::vector<uint8_t> q4k = Pattern(3 * 144, 5);               // Q4_K {256, 3}: 3 blocks
  const std::vector<uint8_t> f32_4d = Pattern(2 * 3 * 1 * 5 * 4, 6);  // F32 {2, 3, 1, 5}
  GgufWriter w(alignment);
  w.Set("general.architecture", Value::String("test"));
  w.AddTensor("a.f32", GgmlType::kF32, {4, 3}, f32.data(), f32.size());
  w.AddTensor("b.f16", GgmlType::kF16, {8}, f16.data(), f16.size());
  w.AddTensor("c.bf16", GgmlType::kBF16, {2, 2, 2}, bf16.data(), bf16.size());
  w.AddTensor("d.q8_0", GgmlType::kQ8_0, {64, 2}, q8.data(), q8.size());
  w.AddTensor("e.q4_k", GgmlType::kQ4_K, {256, 3}, q4k.data(), q4k.size());
  w.AddTensor("f.4d", GgmlType::kF32, {2, 3, 1, 5}, f32_4d.data(), f32_4d.size());
  const std::vector<uint8_t> bytes = WriteOk(w);
  auto f = ParseOk(bytes);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->alignment(), alignment);
  if (alignment == 32) {
    EXPECT_EQ(f->Find("general.alignment"), nullptr);
  } else {
    EXPECT_EQ(*f->GetU32("general.alignment"), alignment);
    EXPECT_EQ(f->Find("general.alignment")->type, ValueType::kUint32);
  }
  EXPECT_EQ(f->data_offset() % alignment, 0u);
  EXPECT_EQ(bytes.size() % alignment, 0u);  // padded after the last tensor too
  struct Want {
    const char* name;
    GgmlType type;
    std::vector<int64_t> dims;
    const std::vector<uint8_t>* data;
    const char* shape;
  };
  const Want want[] = {{"a.f32", GgmlType::kF32, {4, 3}, &f32, "[3, 4]"},
                       {"b.f16", GgmlType::kF16, {8}, &f16, "[8]"},
                       {"c.bf16", GgmlType::kBF16, {2, 2, 2}, &bf16, "[2, 2, 2]"},
                       {"d.q8_0", GgmlType::kQ8_0, {64, 2}, &q8, "[2, 64]"},
                       {"e.q4_k", GgmlType::kQ4_K, {256, 3}, &q4k, "[3, 256]"},
                       {"f.4d", GgmlType::kF32, {2, 3, 1, 5}, &f32_4d, "[5, 1, 3, 2]"}};
  ASSERT_EQ(f->tensors().size(), 6u);
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < 6; ++i) {
    const TensorInfo& t = f->tensors()[i];
    EXPECT_EQ(t.name, want[i].name);
    EXPECT_EQ(t.type, want[i].type);
    EXPECT_EQ(t.dims, want[i].dims);
    EXPECT_EQ(t.ShapeString(), want[i].shape);
    // Offsets are packed in order, each padded to the alignment (what ggml's reader requires).
    EXPECT_EQ(t.offset, expected_offset) << t.name;
    expected_offset += (t.num_bytes + alignment - 1) / alignment * alignment;
    EXPECT_EQ(t.offset % alignment, 0u);
    ASSERT_EQ(t.num_bytes, want[i].data->size()) << t.name;
    EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.num_bytes), *want[i].data) << t.name;
    // data points at data_offset + offset (tensor 0 has offset 0).
    EXPECT_EQ(static_cast<uint64_t>(t.data - f->tensors()[0].data), t.offset) << t.name;
    EXPECT_EQ(f->FindTensor(want[i].name), &t);
  }
  EXPECT_EQ(f->FindTensor("d.q8_0")->num_elements(), 128);
  EXPECT_EQ(f->FindTensor("missing"), nullptr);
}

TEST(GgufRoundTripTest, TensorsDefaultAlignment) { ExpectTensorsRoundTrip(32); }
TEST(GgufRoundTripTest, TensorsCustomAlignment64) { ExpectTensorsRoundTrip(64); }
TEST(GgufRoundTripTest, TensorsAlignment1) { ExpectTensorsRoundTrip(1); }

TEST(GgufRoundTripTest, WriterOutputMatchesHandBuiltLayout) {
  const float data[3] = {1.0f, 2.0f, 3.0f};
  GgufWriter w;
  w.Set("general.architecture", Value::String("llama"));
  w.Set("n", Value::U32(7));
  w.Set("toks", Value::StringArray({"a", "bc"}));
  w.AddTensor("t", GgmlType::kF32, {3}, data, sizeof(data));
  ByteBuilder b;
  b.Header(3, 1, 3);
  b.Str("general.architecture").U32(8).Str("llama");
  b.Str("n").U32(4).U32(7);
  b.Str("toks").U32(9).U32(8).U64(2).Str("a").Str("bc");
  b.TensorInfo("t", {3}, 0, 0);
  b.Pad(32);
  b.Raw(data, sizeof(data));
  b.Pad(32);
  EXPECT_EQ(WriteOk(w), b.bytes());
}

TEST(GgufRoundTripTest, CustomAlignmentIsWrittenAsUint32Key) {
  GgufWriter w(64);
  w.Set("a", Value::U32(1));
  ByteBuilder b;
  b.Header(3, 0, 2);
  b.Str("a").U32(4).U32(1);
  b.Str("general.alignment").U32(4).U32(64);
  b.Pad(64);
  EXPECT_EQ(WriteOk(w), b.bytes());
}

TEST(GgufRoundTripTest, SetReplacesExistingKeyInPlace) {
  GgufWriter w;
  w.Set("a", Value::U32(1));
  w.Set("b", Value::U32(2));
  w.Set("a", Value::String("replaced"));
  auto f = ParseOk(WriteOk(w));
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].key, "a");
  EXPECT_EQ(*f->GetString("a"), "replaced");
  EXPECT_EQ(*f->GetU32("b"), 2u);
}

TEST(GgufRoundTripTest, Version2HeaderReadsTheSame) {
  const float data[4] = {1, 2, 3, 4};
  GgufWriter w;
  w.Set("general.name", Value::String("v2"));
  w.Set("list", Value::I32Array({1, -2}));
  w.AddTensor("x", GgmlType::kF32, {4}, data, sizeof(data));
  std::vector<uint8_t> bytes = WriteOk(w);
  testing::Patch<uint32_t>(bytes, 4, 2);  // the version field
  auto f = ParseOk(bytes);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(*f->GetString("general.name"), "v2");
  EXPECT_EQ(*f->GetIntArray("list"), (std::vector<int64_t>{1, -2}));
  ASSERT_EQ(f->tensors().size(), 1u);
  EXPECT_EQ(std::memcmp(f->tensors()[0].data, data, sizeof(data)), 0);
}

TEST(GgufRoundTripTest, FileRoundTripThroughMmap) {
  const std::string path = unmask::testing::TempDir() + "/gguf_roundtrip.gguf";
  std::vector<uint8_t> q8(2 * 34);
  for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<uint8_t>(i);
  GgufWriter w(128);
  w.Set("general.architecture", Value::String("llada"));
  w.Set("llada.block_count", Value::U32(2));
  w.AddTensor("blk.0.attn_q.weight", GgmlType::kQ8_0, {32, 2}, q8.data(), q8.size());
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->path(), path);
  EXPECT_EQ((*f)->alignment(), 128u);
  EXPECT_EQ((*f)->file_size(), std::filesystem::file_size(path));
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "llada");
  const TensorInfo* t = (*f)->FindTensor("blk.0.attn_q.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(t->data, t->data + t->num_bytes), q8);
  // Bytes on disk equal WriteToBytes.
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(disk, WriteOk(w));
  std::filesystem::remove(path);
}

TEST(GgufOpenTest, MissingFileIsNotFound) {
  auto f = GgufFile::Open(unmask::testing::TempDir() + "/does_not_exist.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("does_not_exist.gguf"), std::string::npos);
}

TEST(GgufOpenTest, DirectoryIsNotFound) {
  auto f = GgufFile::Open(unmask::testing::TempDir());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("not a regular file"), std::string::npos);
}

TEST(GgufOpenTest, EmptyFileIsDataLoss) {
  const std::string path = unmask::testing::TempDir() + "/empty.gguf";
  { std::ofstream out(path, std::ios::binary | std::ios::trunc); }
  auto f = GgufFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(f.status().message().find(path), std::string::npos);
  EXPECT_NE(f.status().message().find("magic"), std::string::npos);
  std::filesystem::remove(path);
}

// ---- Value::ToString ----

TEST(GgufValueTest, ToStringScalars) {
  EXPECT_EQ(Value::U32(42).ToString(), "42");
  EXPECT_EQ(Value::I32(-7).ToString(), "-7");
  EXPECT_EQ(Value::U64(18446744073709551615u).ToString(), "18446744073709551615");
  EXPECT_EQ(Value::F32(0.1f).ToString(), "0.1");  // float32 printed as float, not 0.10000000149
  EXPECT_EQ(Value::F32(1e-5f).ToString(), "1e-05");
  EXPECT_EQ(Scalar(ValueType::kFloat64, 0.1).ToString(), "0.1");
  EXPECT_EQ(Value::Bool(true).ToString(), "true");
  EXPECT_EQ(Value::Bool(false).ToString(), "false");
  EXPECT_EQ(Value::String("llama").ToString(), "\"llama\"");
}

TEST(GgufValueTest, ToStringEscapesControlCharacters) {
  EXPECT_EQ(Value::String(std::string("a\"b\\c\nd\te\r\x01\x7f", 12)).ToString(),
            "\"a\\\"b\\\\c\\nd\\te\\r\\x01\\x7f\"");
  EXPECT_EQ(Value::String(std::string("\0", 1)).ToString(), "\"\\x00\"");
  // UTF-8 passes through unchanged.
  EXPECT_EQ(Value::String("\xC3\xA9").ToString(), "\"\xC3\xA9\"");
}

TEST(GgufValueTest, ToStringAbbreviatesLongArrays) {
  std::vector<int32_t> ids(8192);
  for (int32_t i = 0; i < 8192; ++i) ids[i] = i + 1;
  const Value v = Value::I32Array(ids);
  EXPECT_EQ(v.array_size(), 8192u);
  EXPECT_EQ(v.ToString(3), "[1, 2, 3, ... (8192 items)]");
  EXPECT_EQ(v.ToString(), "[1, 2, 3, 4, 5, 6, 7, 8, ... (8192 items)]");
  EXPECT_EQ(v.ToString(0), "[... (8192 items)]");
  EXPECT_EQ(Value::I32Array({1, 2, 3}).ToString(3), "[1, 2, 3]");
  EXPECT_EQ(Value::StringArray({"a", "b\n"}).ToString(), "[\"a\", \"b\\n\"]");
  EXPECT_EQ(Value::F32Array({0.5f, 0.1f}).ToString(), "[0.5, 0.1]");
  EXPECT_EQ(Value::StringArray({}).ToString(), "[]");
  Value bools = Array(ValueType::kBool);
  bools.bools = {1, 0};
  EXPECT_EQ(bools.ToString(), "[true, false]");
  EXPECT_EQ(Value::U32(3).array_size(), 0u);
}

TEST(GgufValueTest, ValueTypeNames) {
  const char* names[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                         "bool",  "string", "array",  "uint64", "int64",  "float64"};
  for (uint32_t t = 0; t <= 12; ++t) {
    EXPECT_EQ(ValueTypeName(static_cast<ValueType>(t)), names[t]);
  }
  EXPECT_EQ(ValueTypeName(static_cast<ValueType>(13)), "unknown");
}

// ---- Typed getters ----

class GgufGetterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GgufWriter w;
    w.Set("str", Value::String("s"));
    w.Set("neg", Value::I32(-1));
    w.Set("u8", Scalar(ValueType::kUint8, uint64_t{200}));
    w.Set("u64_big", Value::U64(uint64_t{1} << 32));
    w.Set("u64_max", Value::U64(std::numeric_limits<uint64_t>::max()));
    w.Set("i64_big", Scalar(ValueType::kInt64, int64_t{1} << 40));
    w.Set("f32", Value::F32(2.5f));
    w.Set("flag", Value::Bool(true));
    w.Set("strs", Value::StringArray({"x"}));
    Value u32s = Array(ValueType::kUint32);
    u32s.uints = {1, 2};
    w.Set("u32s", u32s);
    Value u64s = Array(ValueType::kUint64);
    u64s.uints = {std::numeric_limits<uint64_t>::max()};
    w.Set("u64s", u64s);
    w.Set("f32s", Value::F32Array({1.5f}));
    auto bytes = w.WriteToBytes();
    ASSERT_TRUE(bytes.ok());
    auto f = GgufFile::FromBytes(std::move(bytes).value(), "getters.gguf");
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    file_ = std::move(f).value();
  }

  static void ExpectError(const Status& s, StatusCode code, std::vector<std::string> parts) {
    EXPECT_EQ(s.code(), code) << s.ToString();
    for (const std::string& p : parts) {
      EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in " << s.message();
    }
  }

  std::unique_ptr<GgufFile> file_;
};

TEST_F(GgufGetterTest, MissingKeyIsNotFound) {
  ExpectError(file_->GetString("nope").status(), StatusCode::kNotFound,
              {"getters.gguf", "'nope'", "not found"});
  ExpectError(file_->GetInt("nope").status(), StatusCode::kNotFound, {"'nope'"});
  ExpectError(file_->GetU32("nope").status(), StatusCode::kNotFound, {"'nope'"});
  ExpectError(file_->GetFloat("nope").status(), StatusCode::kNotFound, {"'nope'"});
  ExpectError(file_->GetBool("nope").status(), StatusCode::kNotFound, {"'nope'"});
  ExpectError(file_->GetStringArray("nope").status(), StatusCode::kNotFound, {"'nope'"});
  ExpectError(file_->GetIntArray("nope").status(), StatusCode::kNotFound, {"'nope'"});
  ExpectError(file_->GetFloatArray("nope").status(), StatusCode::kNotFound, {"'nope'"});
}

TEST_F(GgufGetterTest, WrongTypeNamesKeyStoredAndExpectedType) {
  ExpectError(file_->GetString("neg").status(), StatusCode::kInvalidArgument,
              {"'neg'", "int32", "expected string"});
  ExpectError(file_->GetInt("str").status(), StatusCode::kInvalidArgument,
              {"'str'", "has type string", "integer"});
  ExpectError(file_->GetInt("flag").status(), StatusCode::kInvalidArgument, {"'flag'", "bool"});
  ExpectError(file_->GetFloat("str").status(), StatusCode::kInvalidArgument, {"'str'", "string"});
  ExpectError(file_->GetBool("u8").status(), StatusCode::kInvalidArgument,
              {"'u8'", "uint8", "expected bool"});
  ExpectError(file_->GetStringArray("u32s").status(), StatusCode::kInvalidArgument,
              {"'u32s'", "array of uint32", "expected array of string"});
  ExpectError(file_->GetStringArray("str").status(), StatusCode::kInvalidArgument,
              {"'str'", "has type string"});
  ExpectError(file_->GetIntArray("strs").status(), StatusCode::kInvalidArgument,
              {"'strs'", "array of string"});
  ExpectError(file_->GetIntArray("f32s").status(), StatusCode::kInvalidArgument,
              {"'f32s'", "array of float32"});
  ExpectError(file_->GetFloatArray("strs").status(), StatusCode::kInvalidArgument,
              {"'strs'", "array of string"});
  ExpectError(file_->GetFloatArray("f32").status(), StatusCode::kInvalidArgument,
              {"'f32'", "float32"});
  ExpectError(file_->GetString("strs").status(), StatusCode::kInvalidArgument,
              {"'strs'", "array of string"});
}

TEST_F(GgufGetterTest, U32RejectsNegativeAndTooLarge) {
  ExpectError(file_->GetU32("neg").status(), StatusCode::kInvalidArgument, {"'neg'", "-1"});
  ExpectError(file_->GetU32("u64_big").status(), StatusCode::kInvalidArgument,
              {"'u64_big'", "4294967296"});
  ExpectError(file_->GetU32("i64_big").status(), StatusCode::kInvalidArgument, {"'i64_big'"});
  ExpectError(file_->GetU32("f32").status(), StatusCode::kInvalidArgument, {"'f32'", "float32"});
  EXPECT_EQ(*file_->GetU32("u8"), 200u);
}

TEST_F(GgufGetterTest, IntegersWidenAndFloatsAcceptIntegers) {
  EXPECT_EQ(*file_->GetInt("neg"), -1);
  EXPECT_EQ(*file_->GetInt("u8"), 200);
  EXPECT_EQ(*file_->GetInt("u64_big"), int64_t{1} << 32);
  ExpectError(file_->GetInt("u64_max").status(), StatusCode::kInvalidArgument,
              {"'u64_max'", "int64"});
  EXPECT_EQ(*file_->GetFloat("f32"), 2.5);
  EXPECT_EQ(*file_->GetFloat("neg"), -1.0);
  EXPECT_EQ(*file_->GetFloat("u8"), 200.0);
  EXPECT_TRUE(*file_->GetBool("flag"));
  EXPECT_EQ(*file_->GetString("str"), "s");
  EXPECT_EQ(*file_->GetStringArray("strs"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(*file_->GetIntArray("u32s"), (std::vector<int64_t>{1, 2}));
  ExpectError(file_->GetIntArray("u64s").status(), StatusCode::kInvalidArgument,
              {"'u64s'", "element #0"});
  EXPECT_EQ(*file_->GetFloatArray("f32s"), (std::vector<double>{1.5}));
  EXPECT_EQ(*file_->GetFloatArray("u32s"), (std::vector<double>{1.0, 2.0}));
}

}  // namespace
}  // namespace unmask::gguf
