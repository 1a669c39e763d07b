#include "format/ggml_type.h"

#include <array>
#include <cstddef>

namespace unmask::gguf {
namespace {

// One row per ggml type id. Block layouts from ggml `ggml-common.h` (struct block_*) as listed in
// gguf-py `constants.py` GGML_QUANT_SIZES; ids 4, 5 (q4_2, q4_3), 31-33 (q4_0_{4_4,4_8,8_8}) and
// 36-38 (iq4_nl_{4_4,4_8,8_8}) were removed from ggml and are empty rows here.
struct Row {
  std::string_view name;  // empty: not a ggml type id
  int64_t block_size;
  int64_t block_bytes;
};

// kQkK (core/dtype.h) is ggml's QK_K: elements per K-quant / i-quant super-block.
constexpr std::array<Row, 40> kRows = {{
    {"f32", 1, 4},                                                // 0
    {"f16", 1, 2},                                                // 1
    {"q4_0", 32, 2 + 16},                                         // 2  d, qs[16]
    {"q4_1", 32, 2 + 2 + 16},                                     // 3  d, m, qs[16]
    {"", 0, 0},                                                   // 4  (q4_2, removed)
    {"", 0, 0},                                                   // 5  (q4_3, removed)
    {"q5_0", 32, 2 + 4 + 16},                                     // 6  d, qh[4], qs[16]
    {"q5_1", 32, 2 + 2 + 4 + 16},                                 // 7  d, m, qh[4], qs[16]
    {"q8_0", 32, 2 + 32},                                         // 8  d, qs[32]
    {"q8_1", 32, 2 + 2 + 32},                                     // 9  d, s, qs[32]
    {"q2_K", kQkK, kQkK / 16 + kQkK / 4 + 2 + 2},                 // 10 = 84
    {"q3_K", kQkK, kQkK / 8 + kQkK / 4 + 12 + 2},                 // 11 = 110
    {"q4_K", kQkK, 2 + 2 + 12 + kQkK / 2},                        // 12 = 144
    {"q5_K", kQkK, 2 + 2 + 12 + kQkK / 8 + kQkK / 2},             // 13 = 176
    {"q6_K", kQkK, kQkK / 2 + kQkK / 4 + kQkK / 16 + 2},          // 14 = 210
    {"q8_K", kQkK, 4 + kQkK + kQkK / 16 * 2},                     // 15 = 292 (f32 d, bsums)
    {"iq2_xxs", kQkK, 2 + kQkK / 4},                              // 16 = 66
    {"iq2_xs", kQkK, 2 + kQkK / 4 + kQkK / 32},                   // 17 = 74
    {"iq3_xxs", kQkK, 2 + kQkK / 4 + kQkK / 8},                   // 18 = 98
    {"iq1_s", kQkK, 2 + kQkK / 8 + kQkK / 16},                    // 19 = 50
    {"iq4_nl", 32, 2 + 16},                                       // 20 = 18
    {"iq3_s", kQkK, 2 + kQkK / 4 + kQkK / 8 + kQkK / 32 + 4},     // 21 = 110
    {"iq2_s", kQkK, 2 + kQkK / 4 + kQkK / 16},                    // 22 = 82
    {"iq4_xs", kQkK, 2 + 2 + kQkK / 2 + kQkK / 64},               // 23 = 136
    {"i8", 1, 1},                                                 // 24
    {"i16", 1, 2},                                                // 25
    {"i32", 1, 4},                                                // 26
    {"i64", 1, 8},                                                // 27
    {"f64", 1, 8},                                                // 28
    {"iq1_m", kQkK, kQkK / 8 + kQkK / 16 + kQkK / 32},            // 29 = 56
    {"bf16", 1, 2},                                               // 30
    {"", 0, 0},                                                   // 31 (q4_0_4_4, removed)
    {"", 0, 0},                                                   // 32 (q4_0_4_8, removed)
    {"", 0, 0},                                                   // 33 (q4_0_8_8, removed)
    {"tq1_0", kQkK, (kQkK - 4 * kQkK / 64) / 5 + kQkK / 64 + 2},  // 34 = 54
    {"tq2_0", kQkK, kQkK / 4 + 2},                                // 35 = 66
    {"", 0, 0},                                                   // 36 (iq4_nl_4_4, removed)
    {"", 0, 0},                                                   // 37 (iq4_nl_4_8, removed)
    {"", 0, 0},                                                   // 38 (iq4_nl_8_8, removed)
    {"mxfp4", 32, 1 + 16},                                        // 39 = 17 (e8m0 e, qs[16])
}};

static_assert(kRows[10].block_bytes == 84 && kRows[11].block_bytes == 110 &&
              kRows[12].block_bytes == 144 && kRows[13].block_bytes == 176 &&
              kRows[14].block_bytes == 210 && kRows[15].block_bytes == 292);
static_assert(kRows[16].block_bytes == 66 && kRows[17].block_bytes == 74 &&
              kRows[18].block_bytes == 98 && kRows[19].block_bytes == 50 &&
              kRows[21].block_bytes == 110 && kRows[22].block_bytes == 82 &&
              kRows[23].block_bytes == 136 && kRows[29].block_bytes == 56 &&
              kRows[34].block_bytes == 54 && kRows[35].block_bytes == 66 &&
              kRows[39].block_bytes == 17);
// The types unmask computes with have these layouts as block structs in core/dtype.h.
static_assert(kRows[2].block_bytes == sizeof(BlockQ4_0) &&
              kRows[3].block_bytes == sizeof(BlockQ4_1) &&
              kRows[8].block_bytes == sizeof(BlockQ8_0) &&
              kRows[12].block_bytes == sizeof(BlockQ4_K) &&
              kRows[14].block_bytes == sizeof(BlockQ6_K));

}  // namespace

std::optional<GgmlTypeInfo> GetGgmlTypeInfo(uint32_t type_id) {
  if (type_id >= kRows.size() || kRows[type_id].name.empty()) return std::nullopt;
  const Row& row = kRows[type_id];
  return GgmlTypeInfo{row.name, row.block_size, row.block_bytes};
}

std::optional<DType> ToDType(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
      return DType::kF32;
    case GgmlType::kF16:
      return DType::kF16;
    case GgmlType::kBF16:
      return DType::kBF16;
    case GgmlType::kQ8_0:
      return DType::kQ8_0;
    case GgmlType::kQ4_0:
      return DType::kQ4_0;
    case GgmlType::kQ4_1:
      return DType::kQ4_1;
    case GgmlType::kQ4_K:
      return DType::kQ4_K;
    case GgmlType::kQ6_K:
      return DType::kQ6_K;
    case GgmlType::kI32:
      return DType::kI32;
    default:
      return std::nullopt;
  }
}

GgmlType FromDType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return GgmlType::kF32;
    case DType::kF16:
      return GgmlType::kF16;
    case DType::kBF16:
      return GgmlType::kBF16;
    case DType::kQ8_0:
      return GgmlType::kQ8_0;
    case DType::kQ4_0:
      return GgmlType::kQ4_0;
    case DType::kQ4_1:
      return GgmlType::kQ4_1;
    case DType::kQ4_K:
      return GgmlType::kQ4_K;
    case DType::kQ6_K:
      return GgmlType::kQ6_K;
    case DType::kI32:
      return GgmlType::kI32;
  }
  return GgmlType::kF32;  // unreachable: every DType is listed above
}

}  // namespace unmask::gguf
