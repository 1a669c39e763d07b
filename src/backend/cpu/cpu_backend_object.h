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
  explicit CpuBackend(BackendOptions options) : options_(std::move(options)) {}

  Device device() const override { return Device::kCpu; }
  const BackendOptions& options() const override { return options_; }
  // DescribeCpuBackend(): the settings in effect.
  std::string Describe() const override;
  // GetNumThreads(): the thread count in effect.
  int num_threads() const override;
  StatusOr<double> MeasureGemmPeakGflops(int reps) const override;

 private:
  BackendOptions options_;
};

// Applies `options` with InitCpuBackend and returns a CpuBackend for them. options.device must
// be "cpu". Errors: InvalidArgument for another device or an unknown GEMM provider name; those of
// InitCpuBackend (FailedPrecondition when the provider's library cannot be loaded).
StatusOr<std::shared_ptr<Backend>> CreateCpuBackend(const BackendOptions& options);

// A CpuBackend with default options that applies nothing (DefaultBackend()).
std::shared_ptr<Backend> NewDefaultCpuBackend();

}  // namespace unmask::cpu

#endif  // UNMASK_BACKEND_CPU_CPU_BACKEND_OBJECT_H_
