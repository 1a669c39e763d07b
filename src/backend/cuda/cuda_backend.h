// The CUDA implementation of Backend (backend/backend.h): device 0 of the CUDA runtime (pick
// another with CUDA_VISIBLE_DEVICES), cuBLAS for the products. What runs on it so far: the row
// kernels of cuda_kernels.h and the cuBLAS products, each tested against the CPU kernels (ctest
// label gpu). Models do not load onto it yet (TransformerModel::Create refuses a non-CPU
// backend: weights, workspace and KV cache live in host memory; docs/engine.md "A backend").
#ifndef UNMASK_BACKEND_CUDA_CUDA_BACKEND_H_
#define UNMASK_BACKEND_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/cublas_gemm.h"
#include "backend/cuda/cuda_runtime.h"

namespace unmask::cuda {

// Errors: FailedPrecondition when no CUDA device is visible (the message has the runtime's
// reason and names the CPU backend); InvalidArgument for a GEMM provider other than "cublas" or
// the default ("onednn", which means "not given"), or an unknown compute type.
StatusOr<std::shared_ptr<Backend>> CreateCudaBackend(const BackendOptions& options);

class CudaBackend final : public Backend {
 public:
  Device device() const override { return Device::kCuda; }
  const BackendOptions& options() const override { return options_; }
  // e.g. "cuda: NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB), cuBLAS 13.0.0, f32 compute".
  std::string Describe() const override;
  // Host threads of the CPU-side work (options().num_threads, or all hardware threads).
  int num_threads() const override { return host_threads_; }
  ComputeType compute() const override { return compute_; }
  std::string compute_note() const override { return compute_note_; }
  // f32 always; bf16 on compute capability 8.0 and later (tensor cores); int8 not yet.
  bool HasNativeCompute(ComputeType type) const override;
  // cuBLAS on square products of 8192 (bf16) or 4096 (f32), not the CPU backend's 512 x 2048 x
  // 768 (which would not fill a GPU). Errors: InvalidArgument for reps < 1 or int8; as
  // CublasGemm::MeasureGflops.
  StatusOr<double> MeasureGemmPeakGflops(int reps, ComputeType type) const override;

  const DeviceInfo& info() const { return info_; }
  const CublasGemm& gemm() const { return *gemm_; }

 private:
  friend StatusOr<std::shared_ptr<Backend>> CreateCudaBackend(const BackendOptions& options);
  CudaBackend() = default;

  BackendOptions options_;
  DeviceInfo info_;
  std::unique_ptr<CublasGemm> gemm_;
  int host_threads_ = 1;
  ComputeType compute_ = ComputeType::kF32;
  std::string compute_note_;
};

}  // namespace unmask::cuda

#endif  // UNMASK_BACKEND_CUDA_CUDA_BACKEND_H_
