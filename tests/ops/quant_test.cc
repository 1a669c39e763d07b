// The 4- and 6-bit block types (Q4_0, Q4_1, Q4_K, Q6_K): the scalar reference dequantizers
// (ops/ref/quant_ref) against hand-computed blocks and against blocks packed from explicit values,
// the optimized converters (ConvertRowToF32, GetRows) bit for bit against the reference, and the
// errors for partial blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"
#include "ops/convert.h"
#include "ops/ref/convert_ref.h"
#include "ops/ref/quant_ref.h"
#include "quant_test_util.h"

namespace unmask {
namespace {

using testing::SameBits;

std::vector<float> RefDequantize(DType dtype, const void* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  EXPECT_TRUE(ref::ConvertRowToF32(dtype, src, n, out.data()));
  return out;
}

TEST(QuantRefTest, Q4_0HandComputed) {
  BlockQ4_0 b[3] = {};
  b[0].d = 0x3800;  // 0.5
  b[1].d = 0xC000;  // -2
  b[2].d = 0x0000;  // +0
  for (int j = 0; j < 16; ++j) {
    b[0].qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));  // every nibble value, both halves
    b[1].qs[j] = static_cast<uint8_t>(j | (j << 4));
    b[2].qs[j] = static_cast<uint8_t>(j | (j << 4));
  }
  const std::vector<float> out = RefDequantize(DType::kQ4_0, b, 96);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.5f * static_cast<float>(j - 8)) << j;       // low nibbles: elements 0..15
    EXPECT_EQ(out[16 + j], 0.5f * static_cast<float>(7 - j)) << j;  // high nibbles: 16..31
    EXPECT_EQ(out[32 + j], -2.0f * static_cast<float>(j - 8)) << j;
    EXPECT_EQ(out[48 + j], -2.0f * static_cast<float>(j - 8)) << j;
    EXPECT_EQ(out[64 + j], 0.0f) << j;
    // d * (q - 8) keeps IEEE zero signs: -0 for d = +0 and q < 8, for d < 0 and q = 8.
    EXPECT_EQ(std::signbit(out[64 + j]), j < 8) << j;
  }
  EXPECT_EQ(out[0], -4.0f);
  EXPECT_EQ(out[31], -4.0f);   // high nibble of qs[15] = 0
  EXPECT_EQ(out[32], 16.0f);   // -2 * (0 - 8)
  EXPECT_EQ(out[47], -14.0f);  // -2 * (15 - 8)
  EXPECT_FALSE(std::signbit(out[8]));
  EXPECT_TRUE(std::signbit(out[40]));
}

TEST(QuantRefTest, Q4_1HandComputed) {
  BlockQ4_1 b[2] = {};
  b[0].d = 0x3400;  // 0.25
  b[0].m = 0xBC00;  // -1
  b[1].d = 0x3C00;  // 1
  b[1].m = 0x0001;  // 2^-24 (subnormal): the sum rounds
  for (int j = 0; j < 16; ++j) {
    b[0].qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    b[1].qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  }
  const std::vector<float> out = RefDequantize(DType::kQ4_1, b, 64);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.25f * static_cast<float>(j) - 1.0f) << j;
    EXPECT_EQ(out[16 + j], 0.25f * static_cast<float>(15 - j) - 1.0f) << j;
  }
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[16], 2.75f);
  EXPECT_FALSE(std::signbit(out[4]));  // 1 + (-1) = +0
  EXPECT_EQ(out[32], 0x1p-24f);        // 0 + 2^-24
  EXPECT_EQ(out[33], 1.0f);            // 1 + 2^-24 is a tie: rounds to even
  EXPECT_EQ(out[48], 15.0f);           // 15 + 2^-24 rounds down
}

// Scale bytes chosen so that every packing path matters: top bits set in bytes 0..7, distinct
// nibbles in bytes 8..11. sc / mn computed by hand from ggml's get_scale_min_k4.
constexpr uint8_t kQ4KScales[12] = {0xC1, 0x7F, 0x80, 0x3F, 0x45, 0xC0,
                                    0x0A, 0xFF, 0x12, 0x34, 0xA5, 0xF0};
constexpr uint8_t kQ4KSc[8] = {1, 63, 0, 63, 50, 20, 37, 0};
constexpr uint8_t kQ4KMn[8] = {5, 0, 10, 63, 17, 51, 10, 63};

TEST(QuantRefTest, Q4KScaleMinUnpacksAllEightSubBlocks) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, mn = 0;
    ref::Q4KScaleMin(kQ4KScales, j, &sc, &mn);
    EXPECT_EQ(sc, kQ4KSc[j]) << "sub-block " << j;
    EXPECT_EQ(mn, kQ4KMn[j]) << "sub-block " << j;
  }
  // The test packer is the inverse for every 6-bit value in every position.
  for (int v = 0; v < 64; ++v) {
    uint8_t sc[8], mn[8], q[kQkK] = {};
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>((v + 7 * j) % 64);
      mn[j] = static_cast<uint8_t>((v + 11 * j + 3) % 64);
    }
    const BlockQ4_K b = testing::PackQ4_K(q, sc, mn, 0, 0);
    for (int j = 0; j < 8; ++j) {
      uint8_t got_sc = 0, got_mn = 0;
      ref::Q4KScaleMin(b.scales, j, &got_sc, &got_mn);
      ASSERT_EQ(got_sc, sc[j]) << "v=" << v << " j=" << j;
      ASSERT_EQ(got_mn, mn[j]) << "v=" << v << " j=" << j;
    }
  }
}

TEST(QuantRefTest, Q4_KHandComputed) {
  BlockQ4_K b{};
  b.d = 0x3800;     // 0.5
  b.dmin = 0x3400;  // 0.25
  std::memcpy(b.scales, kQ4KScales, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i % 16) | (((i * 7) % 16) << 4));
  const std::vector<float> out = RefDequantize(DType::kQ4_K, &b, kQkK);
  for (int e = 0; e < kQkK; ++e) {
    const int sub = e / 32;
    const uint8_t byte = b.qs[32 * (sub / 2) + e % 32];
    const int q = sub % 2 == 0 ? (byte & 15) : (byte >> 4);
    const float want = 0.5f * kQ4KSc[sub] * static_cast<float>(q) - 0.25f * kQ4KMn[sub];
    ASSERT_EQ(out[e], want) << "element " << e;
  }
  EXPECT_EQ(out[0], -1.25f);     // sub-block 0, q 0: -0.25 * 5
  EXPECT_EQ(out[33], 220.5f);    // sub-block 1 (high nibble of qs[1] = 7): 0.5 * 63 * 7
  EXPECT_EQ(out[131], 70.75f);   // sub-block 4 (low nibble of qs[67] = 3): 0.5*50*3 - 0.25*17
  EXPECT_EQ(out[160], -12.75f);  // sub-block 5 (high nibble of qs[64] = 0): -0.25 * 51
  EXPECT_EQ(out[194], 34.5f);    // sub-block 6 (low nibble of qs[98] = 2): 0.5*37*2 - 0.25*10
  EXPECT_EQ(out[255], -15.75f);  // sub-block 7, scale 0: -0.25 * 63
}

TEST(QuantRefTest, Q6_KHandComputed) {
  BlockQ6_K b{};
  b.d = 0x3000;  // 0.125
  const int8_t sc[16] = {1, -1, 2, -2, 3, -3, 4, -4, 127, -128, 0, 5, -5, 6, -6, 7};
  std::memcpy(b.scales, sc, 16);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i * 37);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i * 91);
  const std::vector<float> out = RefDequantize(DType::kQ6_K, &b, kQkK);
  for (int e = 0; e < kQkK; ++e) {
    const int h = e / 128, g = e % 128 / 32, l = e % 32;
    const uint8_t low = b.ql[64 * h + l + 32 * (g % 2)];
    const int nibble = g < 2 ? (low & 15) : (low >> 4);
    const int q = nibble | (((b.qh[32 * h + l] >> (2 * g)) & 3) << 4);
    const float want =
        0.125f * static_cast<float>(sc[8 * h + l / 16 + 2 * g]) * static_cast<float>(q - 32);
    ASSERT_EQ(out[e], want) << "element " << e;
  }
  EXPECT_EQ(out[0], -4.0f);     // q 0, scale 1
  EXPECT_EQ(out[1], 2.625f);    // ql[1] = 0x25, qh[1] = 0x5B: q = 5 | 3 << 4 = 53
  EXPECT_EQ(out[97], -2.0f);    // ql[33] = 0xC5 (high 12), qh[1] bits 6..7 = 1: q 28, scale 4
  EXPECT_EQ(out[176], -20.0f);  // second half, q 0, scale 5
  EXPECT_EQ(out[192], -2.5f);   // ql[64] = 0x40 (high 4), qh[32] = 0x60 bits 4..5 = 2: q 36, -5
}

// Explicit integers through the test packers: every value in every position and sub-block.
TEST(QuantRefTest, PackedValuesRoundTrip) {
  uint8_t q[kQkK];
  for (int e = 0; e < kQkK; ++e) q[e] = static_cast<uint8_t>((e * 5 + 3) % 64);
  const int8_t sc6[16] = {-128, -77, -1, 0, 1, 2, 3, 17, 31, 64, 99, 127, -2, -3, -64, 5};
  const BlockQ6_K b6 = testing::PackQ6_K(q, sc6, 0xB400);  // d = -0.25
  const std::vector<float> out6 = RefDequantize(DType::kQ6_K, &b6, kQkK);
  for (int e = 0; e < kQkK; ++e) {
    const float want = -0.25f * static_cast<float>(sc6[e / 16]) * static_cast<float>(q[e] - 32);
    ASSERT_TRUE(SameBits(out6[e], want)) << "q6_k element " << e;
  }
  uint8_t q4[kQkK];
  for (int e = 0; e < kQkK; ++e) q4[e] = static_cast<uint8_t>((e * 3 + e / 32) % 16);
  const uint8_t sc4[8] = {0, 1, 15, 16, 31, 32, 47, 63}, mn4[8] = {63, 48, 33, 17, 16, 15, 1, 0};
  const BlockQ4_K b4 = testing::PackQ4_K(q4, sc4, mn4, 0x3A00, 0xB000);  // 0.75, -0.125
  const std::vector<float> out4 = RefDequantize(DType::kQ4_K, &b4, kQkK);
  for (int e = 0; e < kQkK; ++e) {
    const int s = e / 32;
    const float want = 0.75f * sc4[s] * static_cast<float>(q4[e]) - (-0.125f * mn4[s]);
    ASSERT_TRUE(SameBits(out4[e], want)) << "q4_k element " << e;
  }
}

// Golden values from gguf-py 0.19 (llama.cpp's Python package: an independent numpy
// implementation of the ggml dequantizers). 8 blocks per type, bytes from the LCG below, every f16
// field replaced by a finite half; the constant is FNV-1a 64 of the f32 output bytes of
//   gguf.quants.dequantize(np.frombuffer(blocks, np.uint8), GGMLQuantizationType.<TYPE>)
// (the same generator, written in Python, produced them; reproduce with the venv's gguf).
uint64_t Fnv1a64(const void* data, size_t n) {
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<const uint8_t*>(data)[i];
    h *= 0x100000001b3u;
  }
  return h;
}

TEST(QuantRefTest, MatchesGgufPyGolden) {
  struct Golden {
    DType dtype;
    std::vector<size_t> f16_fields;  // byte offsets of d / m / dmin in a block
    uint64_t hash;
  };
  const Golden goldens[] = {{DType::kQ4_0, {0}, 0xd70c16a846064c75u},
                            {DType::kQ4_1, {0, 2}, 0xb03bcdada07ac6a1u},
                            {DType::kQ4_K, {0, 2}, 0x664a0d894233b67cu},
                            {DType::kQ6_K, {208}, 0x65dce6f9c49d3a5bu}};
  for (const Golden& g : goldens) {
    const int64_t num_blocks = 8;
    const auto block_bytes = static_cast<size_t>(GetDTypeInfo(g.dtype).block_bytes);
    std::vector<uint8_t> bytes(block_bytes * num_blocks);
    uint32_t x = 7;
    auto next = [&x] { return x = x * 1103515245u + 12345u; };
    for (uint8_t& v : bytes) v = static_cast<uint8_t>(next() >> 24);
    for (size_t b = 0; b < num_blocks; ++b) {
      for (size_t f : g.f16_fields) {
        const uint32_t r = next();
        const auto h = static_cast<uint16_t>(0x2000u | ((r >> 16) & 0x0FFFu) | ((r >> 31) << 15));
        std::memcpy(&bytes[b * block_bytes + f], &h, 2);
      }
    }
    const int64_t n = num_blocks * GetDTypeInfo(g.dtype).block_size;
    const std::vector<float> ref_out = RefDequantize(g.dtype, bytes.data(), n);
    EXPECT_EQ(Fnv1a64(ref_out.data(), ref_out.size() * sizeof(float)), g.hash)
        << DTypeName(g.dtype);
    std::vector<float> fast(static_cast<size_t>(n));
    ASSERT_TRUE(ConvertRowToF32(g.dtype, bytes.data(), n, fast.data()).ok());
    EXPECT_EQ(Fnv1a64(fast.data(), fast.size() * sizeof(float)), g.hash) << DTypeName(g.dtype);
  }
}

class QuantConvertTest : public ::testing::TestWithParam<DType> {};

// Random bytes with random and edge-case scales (zero, negative zero, subnormal, max, inf, NaN),
// at a source offset of 2 bytes (blocks are 2-byte aligned in GGUF rows) and an odd destination.
TEST_P(QuantConvertTest, BitExactVsReference) {
  const DType dtype = GetParam();
  const int64_t block = GetDTypeInfo(dtype).block_size;
  const auto block_bytes = static_cast<size_t>(GetDTypeInfo(dtype).block_bytes);
  const std::vector<uint8_t> blocks = testing::RandomBlocks(dtype, 64, 17, /*non_finite=*/true);
  std::vector<uint8_t> shifted(blocks.size() + 8);
  std::memcpy(shifted.data() + 2, blocks.data(), blocks.size());
  for (int64_t num_blocks : {0, 1, 2, 3, 5, 64}) {
    const int64_t n = num_blocks * block;
    const size_t skip = static_cast<size_t>(64 - num_blocks) * block_bytes;  // use the tail too
    const uint8_t* src = shifted.data() + 2 + (num_blocks < 64 ? skip : 0);
    std::vector<float> got(static_cast<size_t>(n) + 2, -7.0f), want(static_cast<size_t>(n));
    ASSERT_TRUE(ConvertRowToF32(dtype, src, n, got.data() + 1).ok());
    ASSERT_TRUE(ref::ConvertRowToF32(dtype, src, n, want.data()));
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(SameBits(got[static_cast<size_t>(i) + 1], want[static_cast<size_t>(i)]))
          << DTypeName(dtype) << " blocks=" << num_blocks << " element " << i << ": "
          << got[static_cast<size_t>(i) + 1] << " vs " << want[static_cast<size_t>(i)];
    }
    EXPECT_EQ(got[0], -7.0f);
    EXPECT_EQ(got[static_cast<size_t>(n) + 1], -7.0f) << "wrote past the end";
  }
}

TEST_P(QuantConvertTest, PartialBlocksAreRejected) {
  const DType dtype = GetParam();
  const int64_t block = GetDTypeInfo(dtype).block_size;
  const std::vector<uint8_t> blocks = testing::RandomBlocks(dtype, 4, 3, false);
  std::vector<float> dst(static_cast<size_t>(4 * block));
  for (int64_t n : {block / 2, block + 16, 3 * block - 1}) {
    const Status s = ConvertRowToF32(dtype, blocks.data(), n, dst.data());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(std::to_string(block) + "-element blocks"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find(std::string(DTypeName(dtype))), std::string::npos) << s.message();
  }
  // A table whose rows are not whole blocks.
  std::vector<float> out(2 * static_cast<size_t>(block + 16));
  const TensorView table{const_cast<uint8_t*>(blocks.data()), dtype, Shape{2, block + 16}};
  const std::vector<int32_t> ids = {0, 1};
  const Status s = GetRows(table, ids, testing::View(out, Shape{2, block + 16}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("block size " + std::to_string(block)), std::string::npos)
      << s.message();
}

// Embedding rows of a quantized table: every row bit-identical to the reference.
TEST_P(QuantConvertTest, GetRowsOfRandomBlocks) {
  const DType dtype = GetParam();
  const int64_t dim = 2 * GetDTypeInfo(dtype).block_size;
  const int64_t vocab = 40;  // 80 blocks; the first take the edge-case scales
  const std::vector<uint8_t> bytes = testing::RandomBlocks(dtype, 2 * vocab, 5, true);
  const TensorView table{const_cast<uint8_t*>(bytes.data()), dtype, Shape{vocab, dim}};
  const std::vector<int32_t> ids = {39, 0, 1, 2, 3, 17, 17, 38};
  std::vector<float> out(ids.size() * static_cast<size_t>(dim));
  ASSERT_TRUE(
      GetRows(table, ids, testing::View(out, Shape{static_cast<int64_t>(ids.size()), dim})).ok());
  const size_t row_bytes = *RowBytes(dtype, dim);
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::vector<float> want =
        RefDequantize(dtype, bytes.data() + static_cast<size_t>(ids[i]) * row_bytes, dim);
    for (int64_t c = 0; c < dim; ++c) {
      ASSERT_TRUE(SameBits(out[i * static_cast<size_t>(dim) + static_cast<size_t>(c)],
                           want[static_cast<size_t>(c)]))
          << "row " << i << " col " << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(QuantTypes, QuantConvertTest,
                         ::testing::Values(DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ6_K),
                         [](const auto& p) { return std::string(DTypeName(p.param)); });

}  // namespace
}  // namespace unmask
