// Ops-internal: Q4_0 / Q4_1 / Q8_0 weights repacked in groups of 16 rows for the AVX512-VNNI
// kernel that multiplies every x row of a call by one read of the weights
// (linear_packed_quant_vnni_cpu.cc), and the portable packing and unpacking
// (linear_packed_quant.cc). Plain declarations only: the kernel's file is compiled with AVX-512
// flags (src/CMakeLists.txt).
//
// Layout of a packed segment: groups of 16 rows (the last one padded with zero rows), each group
// its blocks in order, each block a unit of
//   codes[C][64]   codes[c][4 n + t] = byte 4 c + t of row n's block codes: a 16 x C dword
//                  transpose, bytes unchanged (C = 4 for the 16 bytes of 4-bit codes, 8 for Q8_0's
//                  32 int8). Q4: the low nibble of codes[c][4 n + t] is element 4 c + t of row n,
//                  the high nibble element 16 + 4 c + t (ggml's order in a Q4 block); Q8_0: the
//                  byte is element 4 c + t.
//   d[16]          the 16 rows' f16 scales
//   m[16]          Q4_1 only: the 16 rows' f16 minimums
// 288 (Q4_0), 320 (Q4_1) or 544 (Q8_0) bytes per unit: the bytes of the 16 rows' blocks, no more.
// One register of codes then holds 4 consecutive elements of each of 16 rows, vpdpbusd's operand
// for 16 rows at once (lane n = row n).
#ifndef UNMASK_OPS_LINEAR_PACKED_QUANT_H_
#define UNMASK_OPS_LINEAR_PACKED_QUANT_H_

#include <cstddef>
#include <cstdint>

namespace unmask::cpu {

enum class PackedQuant { kQ4_0, kQ4_1, kQ8_0 };

constexpr int64_t kPackRows = 16;

// Bytes of one unit (16 rows x 1 block): 288, 320 or 544.
constexpr size_t PackedUnitBytes(PackedQuant t) {
  return t == PackedQuant::kQ4_0 ? 288 : t == PackedQuant::kQ4_1 ? 320 : 544;
}
// Bytes of `rows` rows of `num_blocks` blocks packed (the last group padded to 16 rows): also the
// offset of row `rows` when it is a multiple of 16.
size_t PackedBytes(PackedQuant t, int64_t rows, int64_t num_blocks);

// Packs rows [0, rows) of a segment (row_bytes apart, num_blocks blocks each) into `out`
// (PackedBytes bytes, zeroed first).
void PackRows(PackedQuant t, const uint8_t* data, size_t row_bytes, int64_t rows,
              int64_t num_blocks, uint8_t* out);
// Writes row `row` of a packed segment back in its stored layout at `out` (num_blocks blocks of
// 18, 20 or 34 bytes): the bytes PackRows read.
void UnpackRow(PackedQuant t, const uint8_t* packed, int64_t row, int64_t num_blocks, uint8_t* out);

// y[i * y_stride + j] = the int8 dot products of x row i with weight row j, for i < m (1..16) and
// rows j in [0, rows) of the packed groups at `packed` (group 0 = rows 0..15). Per block the
// exact int32 dot of the 32 weights' codes with x's 32 int8 values (vpdpbusd, lane n = row n),
// then in f32:
//   Q4_0: y += float(dot - 8 sum(q_x)) * (d_w d_x)
//   Q4_1: y += float(dot) * (d_w d_x), then y += m_w (d_x sum(q_x))
//   Q8_0: y += float(dot) * (d_w d_x)  (the codes enter vpdpbusd as w + 128, exactly undone)
// block after block, the same operations whatever m: a row's result does not depend on how many
// x rows share the call (speculative verification reproduces one-token decoding bit for bit).
struct PackedQuantArgs {
  PackedQuant type = PackedQuant::kQ4_0;
  const uint8_t* packed = nullptr;
  int64_t rows = 0;
  int64_t num_blocks = 0;
  int m = 0;                       // x rows, 1..16
  const int8_t* xq = nullptr;      // QuantizedX::q [m, num_blocks * 32]
  const float* xd = nullptr;       // QuantizedX::d [m, num_blocks]
  const float* xd_sum = nullptr;   // QuantizedX::d_sum [m, num_blocks]
  const int32_t* x_sum = nullptr;  // QuantizedX::sum [m, num_blocks]
  float* y = nullptr;
  int64_t y_stride = 0;
};

// True when this build compiled the kernel (x86-64 with a compiler that knows the AVX-512 VNNI
// flags). The caller must also check the CPU: AVX-512 F/BW/VL and AVX512_VNNI.
bool PackedQuantCompiled();
void RowsPackedVnni(const PackedQuantArgs& args);

}  // namespace unmask::cpu

#endif  // UNMASK_OPS_LINEAR_PACKED_QUANT_H_
