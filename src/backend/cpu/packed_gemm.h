// A weight W [n, k] (given in f32) prepared once for the GEMM provider active at Pack time and a
// compute type (core/compute.h), for y = x W^T with f32 x and y. Used by ops/linear (kPacked
// weights). f32 runs on every provider; bf16 and int8 on oneDNN only (blas_onednn.h).
//   kOneDnn:    reordered into oneDNN's blocked matmul layout (blas_onednn.h); Run executes a
//               cached brgemm matmul primitive (~215-225 GFLOP/s at M >= 32, K 768, N 2048,
//               2 threads, vs ~170-180 for dnnl_sgemm on the plain matrix).
//   kOpenBlas:  the plain row-major matrix; Run calls cblas_sgemm (OpenBLAS has no persistent
//               packed-weight API).
//   kReference: the plain matrix; Run uses the scalar reference GEMM, rows in parallel.
// The weight keeps the provider it was packed for even if InitCpuBackend later selects another.
#ifndef UNMASK_BACKEND_CPU_PACKED_GEMM_H_
#define UNMASK_BACKEND_CPU_PACKED_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "core/compute.h"
#include "core/status.h"
#include "core/tensor.h"

namespace unmask::cpu {

namespace onednn {
class PackedWeight;
}  // namespace onednn

class PackedGemm {
 public:
  PackedGemm();
  ~PackedGemm();
  PackedGemm(PackedGemm&&) noexcept;
  PackedGemm& operator=(PackedGemm&&) noexcept;

  // w: [n, k] row-major f32 from AllocateAligned (at least n * k floats); ownership moves in
  // (the oneDNN path frees it after reordering, the others keep it). n, k >= 1.
  // Errors: InvalidArgument for n, k < 1, a null buffer, or int8 with a non-finite weight;
  // FailedPrecondition for bf16 / int8 when the active provider is not oneDNN;
  // ResourceExhausted / Internal from oneDNN.
  static StatusOr<PackedGemm> Pack(std::unique_ptr<void, AlignedDeleter> w, int64_t n, int64_t k,
                                   ComputeType type = ComputeType::kF32);

  // y[m, n] = x[m, k] * W^T; x and y contiguous (row strides k and n), not overlapping. m >= 0.
  // Thread-safe. Errors: Internal / ResourceExhausted from oneDNN; FailedPrecondition if the
  // weight is empty (default-constructed or moved from).
  Status Run(const float* x, int64_t m, float* y) const;

  GemmProvider provider() const { return provider_; }
  ComputeType type() const { return type_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  size_t bytes() const;  // memory owned (packed or plain copy)

 private:
  GemmProvider provider_ = GemmProvider::kOneDnn;
  ComputeType type_ = ComputeType::kF32;
  int64_t n_ = 0;
  int64_t k_ = 0;
  std::unique_ptr<onednn::PackedWeight> onednn_;
  std::unique_ptr<void, AlignedDeleter> plain_;  // [n, k] for kOpenBlas / kReference
};

}  // namespace unmask::cpu

#endif  // UNMASK_BACKEND_CPU_PACKED_GEMM_H_
