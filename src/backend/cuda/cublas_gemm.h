// Matrix products of the CUDA backend through cuBLAS (cublasGemmEx): the projections' y = x W^T
// in f32 (full f32: no TF32) or bf16 inputs with f32 accumulation and f32 output, on device
// pointers, and the card's GEMM rate for the roofline. Host code; no CUDA header.
#ifndef UNMASK_BACKEND_CUDA_CUBLAS_GEMM_H_
#define UNMASK_BACKEND_CUDA_CUBLAS_GEMM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "core/compute.h"
#include "core/status.h"

namespace unmask::cuda {

// Loads cuBLAS (dlopen of libcublas.so.<major of the headers>, once per process) and finds every
// function the backend calls: Ok, or FailedPrecondition saying which library or symbol is
// missing. Needs no device. CublasGemm::Create calls it.
Status LoadCublas();

class CublasGemm {
 public:
  // A cuBLAS handle on the current device. Errors: FailedPrecondition without a device; cuBLAS
  // errors as Internal (cublasGetStatusName).
  static StatusOr<std::unique_ptr<CublasGemm>> Create();
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // y [m, n] f32 = x [m, k] W [n, k]^T, row-major, all device pointers; x and w are f32 for
  // type kF32, bf16 for kBf16 (f32 accumulation). Errors: InvalidArgument for kInt8 (not in this
  // backend yet) or a dimension < 1 or above INT32_MAX; cuBLAS errors as Internal.
  Status Run(ComputeType type, const void* x, const void* w, int64_t m, int64_t n, int64_t k,
             float* y) const;

  // "cuBLAS 13.0.0".
  std::string Version() const;

  // The rate of Run on square products of `size` (x, W, y of size x size, device memory of its
  // own, filled with a small constant), best of `reps` timed runs after one warm-up, timed with
  // CUDA events: GFLOP/s (2 size^3 per run). Errors: InvalidArgument for reps < 1 or size < 1;
  // ResourceExhausted when the buffers do not fit; as Run.
  StatusOr<double> MeasureGflops(ComputeType type, int64_t size, int reps) const;

 private:
  CublasGemm() = default;
  void* handle_ = nullptr;  // cublasHandle_t
};

// The device's copy rate: cudaMemcpy device to device of `bytes` (read once, written once), best
// of `reps` after a warm-up, in GB/s of bytes read + written (2 bytes / time). The roofline's
// memory axis as the card reaches it. Errors: InvalidArgument for reps < 1 or bytes < 1; as
// DeviceBuffer::Allocate.
StatusOr<double> MeasureCopyGbps(int64_t bytes, int reps);

}  // namespace unmask::cuda

#endif  // UNMASK_BACKEND_CUDA_CUBLAS_GEMM_H_
