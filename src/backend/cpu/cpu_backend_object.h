// The CPU implementation of Backend (backend/backend.h) over the process-wide CPU set-up of
// cpu_backend.h (InitCpuBackend: thread counts, GEMM provider). See backend.h for what being
// process-wide means for a second CPU backend.
#ifndef UNMASK_BACKEND_CPU_CPU_BACKEND_OBJECT_H_
#define UNMASK_BACKEND_CPU_CPU_BACKEND_OBJECT_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "core/status.h"

namespace unmask::cpu {

// The provider named `name` (GemmProviderName's inverse); nullopt for an unknown name.
std::optional<GemmProvider> GemmProviderFromName(std::string_view name);

class CpuBackend final : public Backend {
 public:
  // Wraps already-applied settings; use CreateCpuBackend to apply them.
  CpuBackend(BackendOptions options, ComputeType compute, std::string compute_note)
      : options_(std::move(options)), compute_(compute), compute_note_(std::move(compute_note)) {}

  Device device() const override { return Device::kCpu; }
  const BackendOptions& options() const override { return options_; }
  // DescribeCpuBackend() (the settings in effect) and ", <compute> compute".
  std::string Describe() const override;
  // GetNumThreads(): the thread count in effect.
  int num_threads() const override;
  ComputeType compute() const override { return compute_; }
  std::string compute_note() const override { return compute_note_; }
  bool HasNativeCompute(ComputeType type) const override;
  StatusOr<double> MeasureGemmPeakGflops(int reps, ComputeType type) const override;

 private:
  BackendOptions options_;
  ComputeType compute_;
  std::string compute_note_;
};

// Applies `options` with InitCpuBackend and returns a CpuBackend for them. options.device must
// be "cpu". The compute type resolves as backend.h says; bf16 / int8 fall back to f32 (with a
// note) when oneDNN has no native kernels of the type on this CPU (onednn::HasNativeKernels,
// which follows ONEDNN_MAX_CPU_ISA), or when a probe (one small weight packed in the type and run
// at M = 1, 3, 16, 33, 300: a few ms of JIT) fails. Errors: InvalidArgument for another device, an
// unknown GEMM provider or compute name, or bf16 / int8 with a provider other than oneDNN; those of
// InitCpuBackend (FailedPrecondition when the provider's library cannot be loaded).
StatusOr<std::shared_ptr<Backend>> CreateCpuBackend(const BackendOptions& options);

// A CpuBackend with default options that applies nothing (DefaultBackend()).
std::shared_ptr<Backend> NewDefaultCpuBackend();

}  // namespace unmask::cpu

#endif  // UNMASK_BACKEND_CPU_CPU_BACKEND_OBJECT_H_
