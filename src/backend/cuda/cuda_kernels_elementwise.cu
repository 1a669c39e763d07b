// Element-wise kernels of the CUDA backend (cuda_kernels.h): RoPE and the embedding row gather.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_kernels.h"

namespace unmask::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per (row, head, pair): a' = fma(a, c, -(b s)), b' = fma(a, s, b c), the CPU kernel's
// operations (ops/rope_cpu.cc), so the result is bit-identical to it.
__global__ void RopeKernel(float* x, int64_t m, int64_t num_heads, int64_t head_dim,
                           int64_t rope_dim, const int32_t* positions, const float* cos_table,
                           const float* sin_table, bool neox) {
  const int64_t half = rope_dim / 2;
  const int64_t total = m * num_heads * half;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = t % half;
    const int64_t head = (t / half) % num_heads;
    const int64_t row = t / (half * num_heads);
    float* h = x + (row * num_heads + head) * head_dim;
    const int64_t pos = positions[row];
    const float c = cos_table[pos * half + i], s = sin_table[pos * half + i];
    const int64_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
    const float a = h[ia], b = h[ib];
    h[ia] = __fmaf_rn(a, c, -__fmul_rn(b, s));
    h[ib] = __fmaf_rn(a, s, __fmul_rn(b, c));
  }
}

template <typename T>
__device__ float ToF32(T v);
template <>
__device__ float ToF32<float>(float v) {
  return v;
}
template <>
__device__ float ToF32<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ float ToF32<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__global__ void GetRowsKernel(const T* table, int64_t d, const int32_t* ids, float* out) {
  const T* src = table + static_cast<int64_t>(ids[blockIdx.x]) * d;
  float* dst = out + blockIdx.x * d;
  for (int64_t i = threadIdx.x; i < d; i += kThreads) dst[i] = ToF32(src[i]);
}

unsigned GridFor(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

}  // namespace

int RopeRows(float* x, int64_t m, int64_t num_heads, int64_t head_dim, int64_t rope_dim,
             const int32_t* positions, const float* cos_table, const float* sin_table, bool neox,
             void* stream) {
  const int64_t work = m * num_heads * (rope_dim / 2);
  if (work <= 0) return 0;
  RopeKernel<<<GridFor(work), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, m, num_heads, head_dim, rope_dim, positions, cos_table, sin_table, neox);
  return static_cast<int>(cudaGetLastError());
}

int GetRows(const void* table, int dtype, int64_t d, const int32_t* ids, int64_t n, float* out,
            void* stream) {
  if (n <= 0 || d <= 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  const auto blocks = static_cast<unsigned>(n);
  switch (dtype) {
    case 0:
      GetRowsKernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(table), d, ids, out);
      break;
    case 1:
      GetRowsKernel<<<blocks, kThreads, 0, s>>>(static_cast<const __half*>(table), d, ids, out);
      break;
    case 2:
      GetRowsKernel<<<blocks, kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(table), d, ids,
                                                out);
      break;
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace unmask::cuda
