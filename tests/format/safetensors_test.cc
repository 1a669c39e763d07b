// The safetensors reader (format/safetensors.h): valid files as the reference writer lays them
// out (and as it may: unaligned, padded, scalar and empty tensors), every rule of the reference
// parser as a DataLoss naming the tensor, and truncated / corrupted bytes never crashing.
#include "format/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace unmask::safetensors {
namespace {

std::vector<uint8_t> File(const std::string& header, const std::vector<uint8_t>& data) {
  const uint64_t n = header.size();
  std::vector<uint8_t> out(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  for (size_t i = 0; i < header.size(); ++i) out[8 + i] = static_cast<uint8_t>(header[i]);
  for (size_t i = 0; i < data.size(); ++i) out[8 + header.size() + i] = data[i];
  return out;
}

std::vector<uint8_t> Floats(std::initializer_list<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), std::data(v), out.size());
  return out;
}

StatusOr<std::unique_ptr<SafetensorsFile>> Parse(const std::string& header,
                                                 const std::vector<uint8_t>& data) {
  return SafetensorsFile::FromBytes(File(header, data), "t.safetensors");
}

TEST(SafetensorsTest, ReadsTensorsMetadataAndOffsets) {
  std::vector<uint8_t> data = Floats({1, 2, 3, 4, 5, 6});
  data.push_back(0x80);  // bf16 -2.0 is 0xC000; write one bf16 value: 0x3F80 = 1.0
  data.back() = 0x80;
  data.push_back(0x3F);
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"BF16","shape":[],"data_offsets":[24,26]},)"
      R"("e":{"dtype":"F16","shape":[0,7],"data_offsets":[26,26]}}   )";  // padded with spaces
  auto f = Parse(header, data);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ((*f)->tensors().size(), 3u);
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  const TensorInfo* w = (*f)->Find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::kF32);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->num_elements, 6);
  float v[6];
  std::memcpy(v, w->data, sizeof v);
  EXPECT_EQ(v[5], 6.0f);
  const TensorInfo* b = (*f)->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kBF16);
  EXPECT_TRUE(b->shape.empty());
  EXPECT_EQ(b->num_elements, 1);
  EXPECT_EQ(b->data[0], 0x80);
  EXPECT_EQ(b->data[1], 0x3F);
  const TensorInfo* e = (*f)->Find("e");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->num_elements, 0);
  EXPECT_EQ(e->num_bytes(), 0u);
  EXPECT_EQ((*f)->Find("missing"), nullptr);
}

TEST(SafetensorsTest, UnalignedAndNonComputeDtypesAreListed) {
  // A 3-byte header puts the data at offset 11: nothing is aligned, and that is legal.
  std::vector<uint8_t> data = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::string header = R"({"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]},)"
                             R"("c":{"dtype":"I64","shape":[1],"data_offsets":[1,9]}})";
  auto f = Parse(header, data);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->Find("a")->dtype, std::nullopt);
  EXPECT_EQ((*f)->Find("c")->dtype_name, "I64");
  EXPECT_EQ(ElementBytes("F8_E4M3"), 1);
  EXPECT_EQ(ElementBytes("F4"), std::nullopt);
  EXPECT_EQ(ElementBytes("bf16"), std::nullopt);  // names are case-sensitive, as the reference's
}

struct Bad {
  std::string header;
  size_t data_bytes;
  std::string must_mention;
};

TEST(SafetensorsTest, EveryRuleIsADataLossNamingTheProblem) {
  const std::string ok = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
  for (const Bad& c : std::vector<Bad>{
           {"[1,2]", 0, "start with '{'"},
           {R"({"w":{)" + ok + "}", 8, "valid JSON"},
           {R"({"w":{)" + ok + R"(},"w":{)" + ok + "}}", 8, "listed twice"},
           {R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8, "unknown or sub-byte"},
           {R"({"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1, "sub-byte"},
           {R"({"w":{"dtype":"F32","shape":[2]}})", 8, "needs dtype, shape and data_offsets"},
           {R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, "non-negative"},
           {R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8, "non-negative"},
           {R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8,
            "overflows"},
           {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "outside"},
           {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8, "outside"},
           {R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "need 12"},
           {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "a hole"},
           {R"({"w":{)" + ok + R"(},"v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8,
            "overlap"},
           {R"({"w":{)" + ok + "}}", 12, "data buffer has 12"},
           {R"({"__metadata__":{"a":1},"w":{)" + ok + "}}", 8, "not a string"},
           {R"({"w":[1,2]})", 0, "needs dtype"},
       }) {
    auto f = Parse(c.header, std::vector<uint8_t>(c.data_bytes, 0));
    ASSERT_FALSE(f.ok()) << c.header;
    EXPECT_EQ(f.status().code(), StatusCode::kDataLoss) << c.header;
    EXPECT_NE(f.status().message().find(c.must_mention), std::string::npos)
        << c.header << " -> " << f.status().message();
    EXPECT_NE(f.status().message().find("t.safetensors"), std::string::npos);
  }
}

TEST(SafetensorsTest, HeaderLengthIsBoundsChecked) {
  EXPECT_EQ(SafetensorsFile::FromBytes({1, 2, 3}, "x").status().code(), StatusCode::kDataLoss);
  std::vector<uint8_t> huge(16, 0);
  huge[4] = 1;  // N = 2^32 > the 100 MB limit
  auto h = SafetensorsFile::FromBytes(huge, "x");
  EXPECT_NE(h.status().message().find("exceeds the limit"), std::string::npos);
  std::vector<uint8_t> past(16, 0);
  past[0] = 100;  // N = 100, file 16 bytes
  auto p = SafetensorsFile::FromBytes(past, "x");
  EXPECT_NE(p.status().message().find("past the end"), std::string::npos);
}

TEST(SafetensorsTest, TruncatedAndCorruptedBytesNeverCrash) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                             R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]}})";
  const std::vector<uint8_t> good = File(header, std::vector<uint8_t>(32, 7));
  ASSERT_TRUE(SafetensorsFile::FromBytes(good, "g").ok());
  for (size_t cut = 0; cut < good.size(); ++cut) {
    std::vector<uint8_t> t(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_FALSE(SafetensorsFile::FromBytes(t, "t").ok()) << cut;
  }
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> c = good;
    c[rng() % (8 + header.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto f = SafetensorsFile::FromBytes(c, "c");  // any status, never a crash or an ASan report
    if (f.ok()) {
      for (const TensorInfo& t : (*f)->tensors()) {
        EXPECT_LE(t.end, c.size());
      }
    }
  }
}

TEST(SafetensorsTest, OpenMapsARealFileAndNamesMissingOnes) {
  const std::string path = testing::TempDir() + "/st_test.safetensors";
  const std::vector<uint8_t> bytes =
      File(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", Floats({2.5f}));
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  float v = 0;
  std::memcpy(&v, (*f)->Find("w")->data, 4);
  EXPECT_EQ(v, 2.5f);
  auto missing = SafetensorsFile::Open(path + ".nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(SafetensorsFile::Open(testing::TempDir()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace unmask::safetensors
