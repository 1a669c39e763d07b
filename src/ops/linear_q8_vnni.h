// Ops-internal: the AVX-512 VNNI tier of the Q8_0 x int8-activation kernel (linear_q8_vnni_cpu.cc).
// That file is compiled with AVX-512 flags (src/CMakeLists.txt), so this header holds nothing
// but plain data: an inline function or template instantiated there could be linked into code
// that runs on CPUs without AVX-512.
#ifndef UNMASK_OPS_LINEAR_Q8_VNNI_H_
#define UNMASK_OPS_LINEAR_Q8_VNNI_H_

#include <cstddef>
#include <cstdint>

namespace unmask::cpu {

// y[i * y_stride + j] = sum over blocks b of d_w(j, b) d_x(i, b) sum_t w(j, b, t) q_x(i, b, t)
// for rows j in [0, rows) of a Q8_0 matrix and i < m (1..4).
struct Q8_0Int8Args {
  const uint8_t* w = nullptr;  // rows of Q8_0 blocks (f16 d + 32 int8), row_bytes apart
  size_t row_bytes = 0;
  int64_t rows = 0;
  int64_t num_blocks = 0;      // per row
  int m = 0;                   // x rows, 1..4
  const int8_t* xq = nullptr;  // [m, num_blocks * 32]
  const float* xd = nullptr;   // [m, num_blocks]
  float* y = nullptr;          // y[i * y_stride + j]
  int64_t y_stride = 0;
};

// True when this build compiled the VNNI kernel (x86-64 with a compiler that knows the flags).
// The caller must also check the CPU: AVX-512 F/BW/VL and AVX512_VNNI.
bool Q8_0VnniCompiled();
void RowsQ8_0Vnni(const Q8_0Int8Args& args);

}  // namespace unmask::cpu

#endif  // UNMASK_OPS_LINEAR_Q8_VNNI_H_
