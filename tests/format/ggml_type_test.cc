#include "format/ggml_type.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "core/dtype.h"

namespace unmask::gguf {
namespace {

struct Expected {
  GgmlType type;
  const char* name;
  int64_t block_size;
  int64_t block_bytes;
};

// Block layouts as ggml defines them (ggml-common.h block_* structs; gguf-py GGML_QUANT_SIZES).
constexpr Expected kExpected[] = {
    {GgmlType::kF32, "f32", 1, 4},
    {GgmlType::kF16, "f16", 1, 2},
    {GgmlType::kQ4_0, "q4_0", 32, 18},
    {GgmlType::kQ4_1, "q4_1", 32, 20},
    {GgmlType::kQ5_0, "q5_0", 32, 22},
    {GgmlType::kQ5_1, "q5_1", 32, 24},
    {GgmlType::kQ8_0, "q8_0", 32, 34},
    {GgmlType::kQ8_1, "q8_1", 32, 36},
    {GgmlType::kQ2_K, "q2_K", 256, 84},
    {GgmlType::kQ3_K, "q3_K", 256, 110},
    {GgmlType::kQ4_K, "q4_K", 256, 144},
    {GgmlType::kQ5_K, "q5_K", 256, 176},
    {GgmlType::kQ6_K, "q6_K", 256, 210},
    {GgmlType::kQ8_K, "q8_K", 256, 292},
    {GgmlType::kIQ2_XXS, "iq2_xxs", 256, 66},
    {GgmlType::kIQ2_XS, "iq2_xs", 256, 74},
    {GgmlType::kIQ3_XXS, "iq3_xxs", 256, 98},
    {GgmlType::kIQ1_S, "iq1_s", 256, 50},
    {GgmlType::kIQ4_NL, "iq4_nl", 32, 18},
    {GgmlType::kIQ3_S, "iq3_s", 256, 110},
    {GgmlType::kIQ2_S, "iq2_s", 256, 82},
    {GgmlType::kIQ4_XS, "iq4_xs", 256, 136},
    {GgmlType::kI8, "i8", 1, 1},
    {GgmlType::kI16, "i16", 1, 2},
    {GgmlType::kI32, "i32", 1, 4},
    {GgmlType::kI64, "i64", 1, 8},
    {GgmlType::kF64, "f64", 1, 8},
    {GgmlType::kIQ1_M, "iq1_m", 256, 56},
    {GgmlType::kBF16, "bf16", 1, 2},
    {GgmlType::kTQ1_0, "tq1_0", 256, 54},
    {GgmlType::kTQ2_0, "tq2_0", 256, 66},
    {GgmlType::kMXFP4, "mxfp4", 32, 17},
};

TEST(GgmlTypeTest, AllTypesHaveGgmlBlockLayouts) {
  for (const Expected& e : kExpected) {
    const auto id = static_cast<uint32_t>(e.type);
    const std::optional<GgmlTypeInfo> info = GetGgmlTypeInfo(id);
    ASSERT_TRUE(info.has_value()) << "type id " << id;
    EXPECT_EQ(info->name, e.name) << "type id " << id;
    EXPECT_EQ(info->block_size, e.block_size) << e.name;
    EXPECT_EQ(info->block_bytes, e.block_bytes) << e.name;
  }
}

TEST(GgmlTypeTest, RemovedAndUnknownIdsHaveNoInfo) {
  std::set<uint32_t> known;
  for (const Expected& e : kExpected) known.insert(static_cast<uint32_t>(e.type));
  EXPECT_EQ(known.size(), 32u);
  for (uint32_t id = 0; id < 64; ++id) {
    EXPECT_EQ(GetGgmlTypeInfo(id).has_value(), known.count(id) == 1) << "type id " << id;
  }
  for (const uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u, 0xFFFFFFFFu}) {
    EXPECT_FALSE(GetGgmlTypeInfo(id).has_value()) << "type id " << id;
  }
}

TEST(GgmlTypeTest, DTypeMappingRoundTripsAndAgreesOnLayout) {
  for (const DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                            DType::kQ4_1, DType::kQ4_K, DType::kQ6_K, DType::kI32}) {
    const GgmlType type = FromDType(dtype);
    ASSERT_EQ(ToDType(type), dtype) << DTypeName(dtype);
    const std::optional<GgmlTypeInfo> info = GetGgmlTypeInfo(static_cast<uint32_t>(type));
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->block_size, GetDTypeInfo(dtype).block_size) << DTypeName(dtype);
    EXPECT_EQ(info->block_bytes, GetDTypeInfo(dtype).block_bytes) << DTypeName(dtype);
  }
}

TEST(GgmlTypeTest, TypesUnmaskCannotComputeWithMapToNullopt) {
  for (const GgmlType type : {GgmlType::kQ5_0, GgmlType::kQ8_1, GgmlType::kQ2_K, GgmlType::kIQ2_XXS,
                              GgmlType::kF64, GgmlType::kMXFP4, GgmlType::kI8, GgmlType::kTQ1_0}) {
    EXPECT_FALSE(ToDType(type).has_value()) << static_cast<uint32_t>(type);
  }
}

}  // namespace
}  // namespace unmask::gguf
