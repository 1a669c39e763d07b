#include "backend/cuda/cuda_backend.h"

#include <cstdio>
#include <thread>

namespace unmask::cuda {

StatusOr<std::shared_ptr<Backend>> CreateCudaBackend(const BackendOptions& options) {
  if (options.gemm != "onednn" && options.gemm != "cublas") {
    return InvalidArgumentError("backend device 'cuda': GEMM provider '" + options.gemm +
                                "' is a CPU library; the CUDA backend uses cublas");
  }
  std::string why;
  if (DeviceCount(&why) == 0) {
    return FailedPreconditionError("backend device 'cuda': no CUDA device is visible (" + why +
                                   "); the CPU backend is device 'cpu'");
  }
  std::shared_ptr<CudaBackend> b(new CudaBackend());
  b->options_ = options;
  UNMASK_ASSIGN_OR_RETURN(b->info_, GetDeviceInfo(0));
  UNMASK_ASSIGN_OR_RETURN(b->gemm_, CublasGemm::Create());
  const unsigned hw = std::thread::hardware_concurrency();
  b->host_threads_ = options.num_threads > 0 ? options.num_threads : (hw > 0 ? int(hw) : 1);
  if (options.compute == "auto" || options.compute == "f32") {
    b->compute_ = ComputeType::kF32;
  } else if (options.compute == "bf16") {
    if (b->HasNativeCompute(ComputeType::kBf16)) {
      b->compute_ = ComputeType::kBf16;
    } else {
      b->compute_note_ = "bf16 compute: " + b->info_.name + " (sm_" +
                         std::to_string(b->info_.major) + std::to_string(b->info_.minor) +
                         ") has no bf16 tensor cores; using f32";
    }
  } else if (options.compute == "int8") {
    b->compute_note_ = "int8 compute: not in the CUDA backend yet; using f32";
  } else {
    return InvalidArgumentError("unknown compute type '" + options.compute +
                                "' (known: auto, f32, bf16, int8)");
  }
  return std::shared_ptr<Backend>(std::move(b));
}

std::string CudaBackend::Describe() const {
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB",
                static_cast<double>(info_.memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  return "cuda: " + info_.name + " (sm_" + std::to_string(info_.major) +
         std::to_string(info_.minor) + ", " + std::to_string(info_.multiprocessors) + " SMs, " +
         mem + "), " + gemm_->Version() + ", " + std::string(ComputeTypeName(compute_)) +
         " compute";
}

bool CudaBackend::HasNativeCompute(ComputeType type) const {
  switch (type) {
    case ComputeType::kF32:
      return true;
    case ComputeType::kBf16:
      return info_.major >= 8;
    case ComputeType::kInt8:
      return false;
  }
  return false;
}

StatusOr<double> CudaBackend::MeasureGemmPeakGflops(int reps, ComputeType type) const {
  if (reps < 1) return InvalidArgumentError("MeasureGemmPeakGflops: reps must be >= 1");
  if (type == ComputeType::kInt8) {
    return InvalidArgumentError("MeasureGemmPeakGflops: int8 is not in the CUDA backend yet");
  }
  return gemm_->MeasureGflops(type, type == ComputeType::kF32 ? 4096 : 8192, reps);
}

}  // namespace unmask::cuda
