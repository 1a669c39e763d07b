// oneDNN (libdnnl 2.6, OpenMP runtime) GEMM: plain row-major sgemm, and y = x W^T with W packed
// once into the blocked layout oneDNN's matmul chooses (format_tag::any).
#ifndef UNMASK_BACKEND_CPU_BLAS_ONEDNN_H_
#define UNMASK_BACKEND_CPU_BLAS_ONEDNN_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/compute.h"
#include "core/status.h"
#include "core/tensor.h"

namespace unmask::cpu::onednn {

// "2.6.3" from dnnl_version().
std::string Version();

// The instruction set oneDNN's JIT kernels use on this CPU, after ONEDNN_MAX_CPU_ISA (e.g.
// "avx512_core_amx", "avx512_core_bf16", "avx512_core_vnni", "avx512_core", "avx2_vnni", "avx2").
std::string EffectiveIsaName();
// True when that ISA multiplies `type` in hardware: f32 always; bf16 with AVX512-BF16 or AMX-BF16
// (below them oneDNN 2.6 emulates bf16, slower than f32, or has no kernel); int8 with VNNI
// (AVX512-VNNI, AVX-VNNI) or AMX-INT8.
bool HasNativeKernels(ComputeType type);

// Row-major dnnl_sgemm: C[m,n] = alpha op(A) op(B) + beta C. Uses omp_get_max_threads() threads,
// or runs on the calling thread alone inside an OpenMP parallel region. Returns false if oneDNN
// rejected the arguments (the caller has validated them; this is a bug report, not input checking).
bool Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// W [n, k] f32 converted to a compute type (core/compute.h) and reordered into oneDNN's blocked
// matmul weight layout of that type: f32 (4 bytes per weight), bf16 (2) or s8 (1, plus an f32
// scale per output channel). Run takes f32 x and gives f32 y in every type: bf16 converts x to
// bf16 per call (into a buffer of the calling thread), int8 quantizes each row of x to s8
// (gemm_convert.h), runs s8 x s8 -> s32 and rescales the accumulators in y's memory. The layout is
// chosen once by a matmul primitive descriptor for a representative M (kPackM); oneDNN's brgemm
// matmul accepts the same layout for every M (checked for M = 1..4096, K = 768, N = 2048 with
// oneDNN 2.6.3). Matmul primitives are created per (M, K, N, layout) on first use (~0.05 ms
// descriptor + ~0.3 ms JIT) and kept in a process-wide LRU cache (kDefaultCacheCapacity entries)
// shared by weights of the same shape; lookups take a mutex, execution does not. Thread-safe for
// concurrent Run calls.
class PackedWeight {
 public:
  static constexpr int64_t kPackM = 256;
  static constexpr size_t kDefaultCacheCapacity = 256;

  ~PackedWeight();
  PackedWeight(const PackedWeight&) = delete;
  PackedWeight& operator=(const PackedWeight&) = delete;

  // w: [n, k] row-major f32, read only during the call. n, k >= 1. Any type packs on any CPU
  // oneDNN supports (use HasNativeKernels to know whether it is fast).
  // Errors: InvalidArgument for int8 when a row of w holds a NaN or an infinity;
  // ResourceExhausted / Internal / Unimplemented-like Internal with oneDNN's message when it
  // fails (e.g. no bf16 kernel below AVX-512).
  static StatusOr<std::unique_ptr<PackedWeight>> Pack(const float* w, int64_t n, int64_t k,
                                                      ComputeType type = ComputeType::kF32);

  // y[m, n] = x[m, k] * W^T; x rows have stride k, y rows stride n (both contiguous). m >= 1.
  // int8: a row of x holding a NaN or an infinity gives a row of NaN in y.
  // Errors: Internal with oneDNN's message when it fails.
  Status Run(const float* x, int64_t m, float* y) const;

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  ComputeType type() const { return type_; }
  size_t bytes() const { return bytes_; }

  struct State;

 private:
  PackedWeight(int64_t n, int64_t k, ComputeType type);
  int64_t n_;
  int64_t k_;
  ComputeType type_;
  size_t bytes_ = 0;
  std::unique_ptr<State> state_;  // oneDNN objects (dnnl.hpp stays out of this header)
};

// The process-wide matmul primitive cache: entry count, clearing, and its capacity (default
// PackedWeight::kDefaultCacheCapacity; >= 1, smaller values evict at once). For tests and
// benchmarks; thread-safe.
size_t CachedPrimitives();
// also_onednn_cache: also empty oneDNN's own process-wide primitive cache (which would otherwise
// return the JIT-compiled kernel again), so that the next Run pays the full creation cost.
void ClearPrimitiveCache(bool also_onednn_cache = false);
void SetPrimitiveCacheCapacity(size_t capacity);

}  // namespace unmask::cpu::onednn

#endif  // UNMASK_BACKEND_CPU_BLAS_ONEDNN_H_
