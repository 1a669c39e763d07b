// The packing of Q4_0 / Q4_1 / Q8_0 rows in groups of 16 (layout: linear_packed_quant.h),
// portable: dword copies, at load time.
#include <cstring>

#include "ops/linear_packed_quant.h"

namespace unmask::cpu {
namespace {

struct Geometry {
  size_t block_bytes;  // stored block: f16 d (+ f16 m) + codes
  size_t header;       // bytes before the codes
  int dwords;          // dwords of codes per row and block (C)
  bool has_m;
};

constexpr Geometry GeometryOf(PackedQuant t) {
  return t == PackedQuant::kQ4_0   ? Geometry{18, 2, 4, false}
         : t == PackedQuant::kQ4_1 ? Geometry{20, 4, 4, true}
                                   : Geometry{34, 2, 8, false};
}

}  // namespace

size_t PackedBytes(PackedQuant t, int64_t rows, int64_t num_blocks) {
  const auto groups = static_cast<size_t>((rows + kPackRows - 1) / kPackRows);
  return groups * static_cast<size_t>(num_blocks) * PackedUnitBytes(t);
}

void PackRows(PackedQuant t, const uint8_t* data, size_t row_bytes, int64_t rows,
              int64_t num_blocks, uint8_t* out) {
  const Geometry geo = GeometryOf(t);
  const size_t unit = PackedUnitBytes(t), scales = 64 * static_cast<size_t>(geo.dwords);
  std::memset(out, 0, PackedBytes(t, rows, num_blocks));
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t g = j / kPackRows, n = j % kPackRows;
    const uint8_t* row = data + static_cast<size_t>(j) * row_bytes;
    for (int64_t b = 0; b < num_blocks; ++b) {
      const uint8_t* blk = row + static_cast<size_t>(b) * geo.block_bytes;
      uint8_t* u = out + static_cast<size_t>(g * num_blocks + b) * unit;
      for (int c = 0; c < geo.dwords; ++c) {
        std::memcpy(u + 64 * c + 4 * n, blk + geo.header + 4 * c, 4);
      }
      std::memcpy(u + scales + 2 * n, blk, 2);                          // d
      if (geo.has_m) std::memcpy(u + scales + 32 + 2 * n, blk + 2, 2);  // m
    }
  }
}

void UnpackRow(PackedQuant t, const uint8_t* packed, int64_t row, int64_t num_blocks,
               uint8_t* out) {
  const Geometry geo = GeometryOf(t);
  const size_t unit = PackedUnitBytes(t), scales = 64 * static_cast<size_t>(geo.dwords);
  const int64_t g = row / kPackRows, n = row % kPackRows;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* u = packed + static_cast<size_t>(g * num_blocks + b) * unit;
    uint8_t* blk = out + static_cast<size_t>(b) * geo.block_bytes;
    for (int c = 0; c < geo.dwords; ++c) {
      std::memcpy(blk + geo.header + 4 * c, u + 64 * c + 4 * n, 4);
    }
    std::memcpy(blk, u + scales + 2 * n, 2);
    if (geo.has_m) std::memcpy(blk + 2, u + scales + 32 + 2 * n, 2);
  }
}

}  // namespace unmask::cpu
