// GgufWriter validation: every rejected input gives InvalidArgument naming the tensor or key;
// I/O failures name the path.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "../test_util.h"
#include "format/gguf.h"

namespace unmask::gguf {
namespace {

void ExpectInvalid(const GgufWriter& w, const std::vector<std::string>& parts) {
  auto bytes = w.WriteToBytes();
  ASSERT_FALSE(bytes.ok()) << "expected an error containing '" << parts[0] << "'";
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument) << bytes.status().ToString();
  for (const std::string& p : parts) {
    EXPECT_NE(bytes.status().message().find(p), std::string::npos)
        << "'" << p << "' not in: " << bytes.status().message();
  }
}

const std::vector<uint8_t>& Buffer() {
  static const std::vector<uint8_t> buffer(4096, 0x5A);
  return buffer;
}

TEST(GgufWriterTest, DataSizeMismatch) {
  GgufWriter w;
  w.AddTensor("w", GgmlType::kQ8_0, {64, 2}, Buffer().data(), 135);  // needs 4 * 34 = 136
  ExpectInvalid(w, {"tensor 'w'", "q8_0", "[2, 64]", "135 bytes", "expected 136"});
  GgufWriter w2;
  w2.AddTensor("x", GgmlType::kF32, {3}, Buffer().data(), 16);
  ExpectInvalid(w2, {"tensor 'x'", "16 bytes", "expected 12"});
}

TEST(GgufWriterTest, DuplicateTensorName) {
  GgufWriter w;
  w.AddTensor("w", GgmlType::kF32, {4}, Buffer().data(), 16);
  w.AddTensor("w", GgmlType::kF32, {4}, Buffer().data(), 16);
  ExpectInvalid(w, {"duplicate tensor name 'w'"});
}

TEST(GgufWriterTest, BadDims) {
  struct Case {
    std::vector<int64_t> dims;
    GgmlType type;
    std::string part;
  };
  const Case cases[] = {
      {{}, GgmlType::kF32, "n_dims 0"},
      {{1, 1, 1, 1, 1}, GgmlType::kF32, "n_dims 5"},
      {{0}, GgmlType::kF32, "dimension 0 is 0"},
      {{4, -1}, GgmlType::kF32, "dimension 1 is -1"},
      {{33}, GgmlType::kQ8_0, "not a multiple of the q8_0 block size 32"},
      {{int64_t{1} << 40, int64_t{1} << 40}, GgmlType::kF32, "overflows"},
  };
  for (const Case& c : cases) {
    GgufWriter w;
    w.AddTensor("t", c.type, c.dims, Buffer().data(), 4);
    ExpectInvalid(w, {"tensor 't'", c.part});
  }
}

TEST(GgufWriterTest, UnknownTypeNullDataAndBadNames) {
  GgufWriter w;
  w.AddTensor("t", static_cast<GgmlType>(4), {32}, Buffer().data(), 18);
  ExpectInvalid(w, {"tensor 't'", "unknown ggml type id 4"});
  GgufWriter w2;
  w2.AddTensor("t", GgmlType::kF32, {4}, nullptr, 16);
  ExpectInvalid(w2, {"tensor 't'", "null"});
  GgufWriter w3;
  w3.AddTensor("", GgmlType::kF32, {4}, Buffer().data(), 16);
  ExpectInvalid(w3, {"empty tensor name"});
  // ggml keeps names in 64 bytes with a NUL: 63 is the longest llama.cpp can load.
  GgufWriter w4;
  w4.AddTensor(std::string(64, 'n'), GgmlType::kF32, {4}, Buffer().data(), 16);
  ExpectInvalid(w4, {"64 bytes", "63"});
  GgufWriter w5;
  w5.AddTensor(std::string(63, 'n'), GgmlType::kF32, {4}, Buffer().data(), 16);
  EXPECT_TRUE(w5.WriteToBytes().ok());
}

TEST(GgufWriterTest, BadAlignment) {
  for (const uint32_t alignment : {0u, 3u, 96u}) {
    GgufWriter w(alignment);
    ExpectInvalid(w, {"alignment " + std::to_string(alignment), "power of two"});
  }
}

TEST(GgufWriterTest, ExplicitAlignmentKeyMustMatch) {
  GgufWriter w(64);
  w.Set("general.alignment", Value::U32(32));
  ExpectInvalid(w, {"'general.alignment'", "64"});
  GgufWriter w2(64);
  w2.Set("general.alignment", Value::U64(64));
  ExpectInvalid(w2, {"'general.alignment'", "uint32"});
  GgufWriter w3(64);
  w3.Set("general.alignment", Value::U32(64));  // matching: written once, where the caller put it
  w3.Set("x", Value::U32(1));
  auto bytes = w3.WriteToBytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto f = GgufFile::FromBytes(std::move(bytes).value());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ((*f)->metadata().size(), 2u);
  EXPECT_EQ((*f)->metadata()[0].key, "general.alignment");
  EXPECT_EQ((*f)->alignment(), 64u);
}

TEST(GgufWriterTest, InconsistentValues) {
  Value u8;
  u8.type = ValueType::kUint8;
  u8.scalar = uint64_t{300};
  GgufWriter w;
  w.Set("small", u8);
  ExpectInvalid(w, {"'small'", "300", "uint8"});

  Value i16;
  i16.type = ValueType::kInt16;
  i16.scalar = int64_t{-40000};
  GgufWriter w2;
  w2.Set("i16", i16);
  ExpectInvalid(w2, {"'i16'", "-40000", "int16"});

  Value mismatched;
  mismatched.type = ValueType::kString;
  mismatched.scalar = uint64_t{1};
  GgufWriter w3;
  w3.Set("s", mismatched);
  ExpectInvalid(w3, {"'s'", "string", "payload"});

  Value arr = Value::I32Array({1});
  arr.strings = {"stray"};
  GgufWriter w4;
  w4.Set("arr", arr);
  ExpectInvalid(w4, {"'arr'", "strings"});

  Value big = Value::I32Array({});
  big.ints = {int64_t{1} << 40};
  GgufWriter w5;
  w5.Set("arr", big);
  ExpectInvalid(w5, {"'arr'", "element #0", "int32"});

  Value bad_type;
  bad_type.type = static_cast<ValueType>(13);
  GgufWriter w6;
  w6.Set("t", bad_type);
  ExpectInvalid(w6, {"'t'", "unknown value type 13"});

  Value nested;
  nested.type = ValueType::kArray;
  nested.array_type = ValueType::kArray;
  nested.arrays = {Value::U32(1)};  // element of an array of arrays must be an array
  GgufWriter w7;
  w7.Set("n", nested);
  ExpectInvalid(w7, {"'n'", "array #0", "uint32"});

  Value bools;
  bools.type = ValueType::kArray;
  bools.array_type = ValueType::kBool;
  bools.bools = {1, 2};
  GgufWriter w8;
  w8.Set("b", bools);
  ExpectInvalid(w8, {"'b'", "element #1"});

  GgufWriter w9;
  w9.Set(std::string(70000, 'k'), Value::U32(1));
  ExpectInvalid(w9, {"70000 bytes"});
}

TEST(GgufWriterTest, WriteFileToMissingDirectoryIsNotFound) {
  const std::string path = unmask::testing::TempDir() + "/no/such/dir/out.gguf";
  GgufWriter w;
  w.Set("a", Value::U32(1));
  const Status s = w.WriteFile(path);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos);
}

TEST(GgufWriterTest, WriteFailureIsDataLoss) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  GgufWriter w;
  w.AddTensor("t", GgmlType::kF32, {1024}, Buffer().data(), 4096);
  const Status s = w.WriteFile("/dev/full");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists("/dev/full"));  // never removed: not a regular file
}

TEST(GgufWriterTest, ValidationFailureWritesNothing) {
  const std::string path = unmask::testing::TempDir() + "/never_written.gguf";
  std::filesystem::remove(path);
  GgufWriter w;
  w.AddTensor("t", GgmlType::kF32, {4}, Buffer().data(), 3);
  EXPECT_EQ(w.WriteFile(path).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace unmask::gguf
