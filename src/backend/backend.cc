// The backend registry: device name -> implementation. A new backend adds its case here (behind
// its build option, in this .cc only: no build flags in headers).
#include "backend/backend.h"

#include "backend/cpu/cpu_backend_object.h"
#if defined(UNMASK_HAVE_CUDA)
#include "backend/cuda/cuda_backend.h"
#endif

namespace unmask {

StatusOr<std::shared_ptr<Backend>> CreateBackend(const BackendOptions& options) {
  const std::optional<Device> device = DeviceFromName(options.device);
  if (!device) {
    return InvalidArgumentError("unknown backend device '" + options.device +
                                "' (known: cpu, cuda)");
  }
  switch (*device) {
    case Device::kCpu:
      return cpu::CreateCpuBackend(options);
    case Device::kCuda:
#if defined(UNMASK_HAVE_CUDA)
      return cuda::CreateCudaBackend(options);
#else
      break;
#endif
  }
  return UnimplementedError("backend device '" + options.device + "': this build has no " +
                            "CUDA backend (the CPU backend is device 'cpu')");
}

std::shared_ptr<Backend> DefaultBackend() {
  static const std::shared_ptr<Backend>* backend =
      new std::shared_ptr<Backend>(cpu::NewDefaultCpuBackend());
  return *backend;
}

}  // namespace unmask
