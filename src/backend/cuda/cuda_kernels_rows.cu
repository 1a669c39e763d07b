// Row kernels of the CUDA backend (cuda_kernels.h): RMSNorm, SwiGLU, softmax, top-1 confidence.
// One block of kThreads threads per row; reductions through shared memory in a fixed order, so a
// row's result does not depend on the other rows of the launch.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "backend/cuda/cuda_kernels.h"

namespace unmask::cuda {
namespace {

constexpr int kThreads = 256;

__device__ float BlockSum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? shared[threadIdx.x] : 0.0f;
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  v = shared[0];
  __syncthreads();  // shared is reused by the caller's next reduction
  return v;
}

__device__ float BlockMax(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? shared[threadIdx.x] : -INFINITY;
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

__global__ void RmsNormKernel(const float* x, const float* w, int64_t d, float eps, float* y) {
  __shared__ float shared[kThreads / 32];
  const float* xr = x + blockIdx.x * d;
  float* yr = y + blockIdx.x * d;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += kThreads) s = fmaf(xr[i], xr[i], s);
  const float mean = BlockSum(s, shared) / static_cast<float>(d);
  const float inv = 1.0f / sqrtf(mean + eps);
  for (int64_t i = threadIdx.x; i < d; i += kThreads) yr[i] = (xr[i] * inv) * w[i];
}

__global__ void SwiGluKernel(const float* gate_up, int64_t f, float* out) {
  const float* g = gate_up + blockIdx.x * 2 * f;
  const float* u = g + f;
  float* o = out + blockIdx.x * f;
  for (int64_t i = threadIdx.x; i < f; i += kThreads) {
    const float gi = g[i];
    const float e = expf(-fabsf(gi));
    const float sig = (gi < 0.0f ? e : 1.0f) / (1.0f + e);
    o[i] = (gi * sig) * u[i];
  }
}

__global__ void SoftmaxKernel(float* x, int64_t n) {
  __shared__ float shared[kThreads / 32];
  float* r = x + blockIdx.x * n;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) mx = fmaxf(mx, r[i]);
  mx = BlockMax(mx, shared);
  if (mx == -INFINITY) {  // every entry -inf (fully masked): all zero, not NaN
    for (int64_t i = threadIdx.x; i < n; i += kThreads) r[i] = 0.0f;
    return;
  }
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float e = expf(r[i] - mx);
    r[i] = e;
    s += e;
  }
  const float inv = 1.0f / BlockSum(s, shared);
  for (int64_t i = threadIdx.x; i < n; i += kThreads) r[i] *= inv;
}

__global__ void ArgmaxKernel(const float* logits, int64_t n, int32_t* ids, float* prob) {
  __shared__ float shared[kThreads / 32];
  __shared__ float best_v[kThreads];
  __shared__ int64_t best_i[kThreads];
  const float* r = logits + blockIdx.x * n;
  float v = -INFINITY;
  int64_t at = n;  // no finite-or-inf value seen yet
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    if (r[i] > v || (at == n && r[i] == v)) {  // strictly greater: the first index wins
      v = r[i];
      at = i;
    }
  }
  best_v[threadIdx.x] = v;
  best_i[threadIdx.x] = at;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      const float ov = best_v[threadIdx.x + half];
      const int64_t oi = best_i[threadIdx.x + half];
      if (ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x])) {
        best_v[threadIdx.x] = ov;
        best_i[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  const float mx = best_v[0];
  const int64_t id = best_i[0] < n ? best_i[0] : 0;
  float s = 0.0f;
  if (mx != -INFINITY) {
    for (int64_t i = threadIdx.x; i < n; i += kThreads) s += expf(r[i] - mx);
  }
  s = BlockSum(s, shared);
  if (threadIdx.x == 0) {
    ids[blockIdx.x] = static_cast<int32_t>(id);
    prob[blockIdx.x] = mx == -INFINITY ? 0.0f : 1.0f / s;
  }
}

int Launched() { return static_cast<int>(cudaGetLastError()); }

}  // namespace

int RmsNormRows(const float* x, const float* w, int64_t m, int64_t d, float eps, float* y,
                void* stream) {
  if (m <= 0 || d <= 0) return 0;
  RmsNormKernel<<<static_cast<unsigned>(m), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, w, d, eps, y);
  return Launched();
}

int SwiGluRows(const float* gate_up, int64_t m, int64_t f, float* out, void* stream) {
  if (m <= 0 || f <= 0) return 0;
  SwiGluKernel<<<static_cast<unsigned>(m), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      gate_up, f, out);
  return Launched();
}

int SoftmaxRows(float* x, int64_t m, int64_t n, void* stream) {
  if (m <= 0 || n <= 0) return 0;
  SoftmaxKernel<<<static_cast<unsigned>(m), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, n);
  return Launched();
}

int ArgmaxRows(const float* logits, int64_t m, int64_t n, int32_t* ids, float* prob, void* stream) {
  if (m <= 0 || n <= 0) return 0;
  ArgmaxKernel<<<static_cast<unsigned>(m), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      logits, n, ids, prob);
  return Launched();
}

}  // namespace unmask::cuda
