// Ops-internal: the AVX-512 VNNI tier of the Q4_0 / Q4_1 x int8-activation kernels
// (linear_q4_vnni_cpu.cc). As linear_q8_vnni.h: that file is compiled with AVX-512 flags
// (src/CMakeLists.txt), so this header holds nothing but plain data.
#ifndef UNMASK_OPS_LINEAR_Q4_VNNI_H_
#define UNMASK_OPS_LINEAR_Q4_VNNI_H_

#include <cstddef>
#include <cstdint>

namespace unmask::cpu {

// y[i * y_stride + j] = sum over blocks b of d_w(j, b) d_x(i, b) sum_t (q_w(j, b, t) - 8) q_x(i, b,
// t) (Q4_0) or of d_w d_x sum_t q_w q_x + m_w(j, b) d_x(i, b) sum_t q_x(i, b, t) (Q4_1), for rows j
// in [0, rows) and i < m (1..4). The x arrays are those of QuantizedX (linear_impl.h).
struct Q4Int8Args {
  const uint8_t* w = nullptr;  // rows of Q4_0 (f16 d + 16 bytes) or Q4_1 (f16 d, m + 16 bytes)
  size_t row_bytes = 0;
  bool q4_1 = false;
  int64_t rows = 0;
  int64_t num_blocks = 0;                   // per row
  int m = 0;                                // x rows, 1..4
  const int8_t* xq = nullptr;               // QuantizedX::q [m, num_blocks * 32]
  const int8_t* xq_pairs = nullptr;         // QuantizedX::q_pairs [m, num_blocks * 32]
  const float* xd = nullptr;                // QuantizedX::d [m, num_blocks]
  const float* xd_sum = nullptr;            // QuantizedX::d_sum [m, num_blocks]
  const int16_t* x_pair_sum = nullptr;      // QuantizedX::pair_sum [m, num_blocks, 16]
  const int16_t* x_pair_offsets = nullptr;  // QuantizedX::pair_offsets [m, num_blocks / 2, 16]
  float* y = nullptr;                       // y[i * y_stride + j]
  int64_t y_stride = 0;
};

// True when this build compiled the VNNI kernels (x86-64 with a compiler that knows the flags).
// The caller must also check the CPU: AVX-512 F/BW/VL and AVX512_VNNI.
bool Q4VnniCompiled();
void RowsQ4Vnni(const Q4Int8Args& args);

}  // namespace unmask::cpu

#endif  // UNMASK_OPS_LINEAR_Q4_VNNI_H_
