// ConvertRowToF32 and GetRows against the scalar reference (ops/ref/convert_ref) and core/half.h.
#include "ops/convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"
#include "ops/ref/convert_ref.h"

namespace unmask {
namespace {

using testing::SameBits;

std::vector<uint16_t> AllPatterns() {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  return all;
}

TEST(ConvertTest, F16BitExactForAll65536Patterns) {
  const std::vector<uint16_t> src = AllPatterns();
  std::vector<float> dst(src.size());
  ASSERT_TRUE(ConvertRowToF32(DType::kF16, src.data(), 65536, dst.data()).ok());
  for (uint32_t h = 0; h < 65536; ++h) {
    // Bit-exact, NaN payloads included (signalling NaNs stay signalling, as in F16ToF32).
    ASSERT_EQ(std::bit_cast<uint32_t>(dst[h]), std::bit_cast<uint32_t>(F16ToF32(src[h])))
        << "f16 bits 0x" << std::hex << h;
  }
}

TEST(ConvertTest, BF16BitExactForAll65536Patterns) {
  const std::vector<uint16_t> src = AllPatterns();
  std::vector<float> dst(src.size());
  ASSERT_TRUE(ConvertRowToF32(DType::kBF16, src.data(), 65536, dst.data()).ok());
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(std::bit_cast<uint32_t>(dst[h]), std::bit_cast<uint32_t>(BF16ToF32(src[h])))
        << "bf16 bits 0x" << std::hex << h;
  }
}

// Lengths 0..40 at start offsets 0..3 exercise the vector tails and unaligned loads; the element
// after the row must stay untouched.
TEST(ConvertTest, HalfTailsAndMisalignment) {
  const std::vector<uint16_t> all = AllPatterns();
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t offset = 0; offset < 4; ++offset) {
      for (int64_t n = 0; n <= 40; ++n) {
        const uint16_t* src = all.data() + 15300 + offset * 7 + n;  // a mix of exponents
        std::vector<float> got(static_cast<size_t>(n) + 1, -7.0f), want(static_cast<size_t>(n));
        ASSERT_TRUE(ConvertRowToF32(dtype, src, n, got.data()).ok());
        ASSERT_TRUE(ref::ConvertRowToF32(dtype, src, n, want.data()));
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(SameBits(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)]))
              << DTypeName(dtype) << " n=" << n << " i=" << i;
        }
        EXPECT_EQ(got[static_cast<size_t>(n)], -7.0f) << "wrote past the end, n=" << n;
      }
    }
  }
}

std::vector<BlockQ8_0> RandomQ8Blocks(size_t num_blocks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<BlockQ8_0> blocks(num_blocks);
  // Scales: typical values plus edge cases (zero, negative zero, subnormal, max f16, inf).
  const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x03FF, 0x7BFF, 0x7C00, 0xFBFF, 0x3C00};
  for (size_t b = 0; b < num_blocks; ++b) {
    blocks[b].d = b < std::size(special) ? special[b]
                                         : F32ToF16(std::ldexp(static_cast<float>(rng() % 1000 + 1),
                                                               -static_cast<int>(rng() % 20) - 8));
    for (int j = 0; j < kQ8_0BlockSize; ++j) {
      blocks[b].qs[j] = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
    }
  }
  return blocks;
}

TEST(ConvertTest, Q8_0BitExactVsReference) {
  const std::vector<BlockQ8_0> blocks = RandomQ8Blocks(64, 7);
  for (int64_t num_blocks : {0, 1, 2, 5, 64}) {
    const int64_t n = num_blocks * kQ8_0BlockSize;
    std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
    ASSERT_TRUE(ConvertRowToF32(DType::kQ8_0, blocks.data(), n, got.data()).ok());
    ASSERT_TRUE(ref::ConvertRowToF32(DType::kQ8_0, blocks.data(), n, want.data()));
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(SameBits(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)])) << i;
    }
  }
  // A hand-computed value: d = 0.5 (f16 0x3800), q = -3 -> -1.5.
  BlockQ8_0 b{};
  b.d = 0x3800;
  b.qs[4] = -3;
  std::vector<float> out(32);
  ASSERT_TRUE(ConvertRowToF32(DType::kQ8_0, &b, 32, out.data()).ok());
  EXPECT_EQ(out[4], -1.5f);
  EXPECT_EQ(out[0], 0.0f);
}

TEST(ConvertTest, F32IsACopy) {
  const std::vector<float> src = testing::RandomFloats(37, 3);
  std::vector<float> dst(37);
  ASSERT_TRUE(ConvertRowToF32(DType::kF32, src.data(), 37, dst.data()).ok());
  EXPECT_EQ(dst, src);
}

TEST(ConvertTest, Errors) {
  float dst[64];
  const uint16_t src[64] = {};
  Status s = ConvertRowToF32(DType::kI32, src, 4, dst);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find("i32"), std::string::npos) << s.message();
  s = ConvertRowToF32(DType::kQ8_0, src, 33, dst);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("33"), std::string::npos) << s.message();
  EXPECT_EQ(ConvertRowToF32(DType::kF16, src, -1, dst).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ConvertRowToF32(DType::kF16, nullptr, 4, dst).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ConvertRowToF32(DType::kF16, src, 4, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ConvertRowToF32(DType::kF16, nullptr, 0, nullptr).ok());  // nothing to do
}

class GetRowsTest : public ::testing::TestWithParam<DType> {};

TEST_P(GetRowsTest, MatchesReference) {
  const DType dtype = GetParam();
  const bool k_quant = GetDTypeInfo(dtype).block_size == kQkK;
  for (int64_t dim : k_quant ? std::vector<int64_t>{256, 768} : std::vector<int64_t>{32, 96, 800}) {
    const testing::Table table = testing::MakeTable(dtype, 50, dim, 11);
    const std::vector<int32_t> ids = {0, 49, 7,  7,  23, 1,  48, 0,  31, 2,  3,  4,  5, 6,
                                      8, 9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    std::vector<float> out(ids.size() * static_cast<size_t>(dim), -1.0f);
    ASSERT_TRUE(
        GetRows(table.view, ids, testing::View(out, Shape{static_cast<int64_t>(ids.size()), dim}))
            .ok());
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t c = 0; c < dim; ++c) {
        ASSERT_TRUE(SameBits(out[i * static_cast<size_t>(dim) + static_cast<size_t>(c)],
                             table.f32[static_cast<size_t>(ids[i] * dim + c)]))
            << "row " << i << " col " << c;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, GetRowsTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0,
                                           DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ6_K),
                         [](const auto& p) { return std::string(DTypeName(p.param)); });

TEST(GetRowsErrorsTest, OutOfRangeIdsAndBadShapes) {
  testing::Table table = testing::MakeTable(DType::kF16, 10, 32, 5);
  std::vector<float> out(2 * 32);
  const TensorView out_view = testing::View(out, Shape{2, 32});
  for (int32_t bad : {-1, 10, 1 << 30}) {
    const std::vector<int32_t> ids = {3, bad};
    const Status s = GetRows(table.view, ids, out_view);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.ToString();
    EXPECT_NE(s.message().find("id " + std::to_string(bad)), std::string::npos) << s.message();
  }
  const std::vector<int32_t> two = {1, 2};
  // out shape / dtype / rank.
  EXPECT_EQ(GetRows(table.view, two, testing::View(out, Shape{1, 32})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(GetRows(table.view, two, testing::View(out, Shape{2, 16})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(GetRows(table.view, two, testing::View(out, Shape{64})).code(),
            StatusCode::kInvalidArgument);
  TensorView f16_out{out.data(), DType::kF16, Shape{2, 32}};
  EXPECT_EQ(GetRows(table.view, two, f16_out).code(), StatusCode::kInvalidArgument);
  // Table rank, Q8_0 width, unsupported dtype, null data.
  TensorView flat = table.view;
  flat.shape = Shape{320};
  EXPECT_EQ(GetRows(flat, two, out_view).code(), StatusCode::kInvalidArgument);
  TensorView q8{table.bytes.data(), DType::kQ8_0, Shape{4, 20}};
  EXPECT_EQ(GetRows(q8, two, testing::View(out, Shape{2, 20})).code(),
            StatusCode::kInvalidArgument);
  TensorView i32{table.bytes.data(), DType::kI32, Shape{4, 32}};
  EXPECT_EQ(GetRows(i32, two, out_view).code(), StatusCode::kUnimplemented);
  TensorView null_table{nullptr, DType::kF16, Shape{10, 32}};
  EXPECT_EQ(GetRows(null_table, two, out_view).code(), StatusCode::kInvalidArgument);
  // No ids: nothing to do.
  EXPECT_TRUE(GetRows(table.view, {}, testing::View(out, Shape{0, 32})).ok());
}

}  // namespace
}  // namespace unmask
