// Where a tensor's memory lives and which backend runs the ops on it. In core (not in
// src/backend) so that tensors can carry it without depending on any backend.
#ifndef UNMASK_CORE_DEVICE_H_
#define UNMASK_CORE_DEVICE_H_

#include <optional>
#include <string_view>

namespace unmask {

enum class Device {
  kCpu,   // host memory; the CPU backend (src/backend/cpu) and the ops' *_cpu.cc kernels
  kCuda,  // CUDA device memory; src/backend/cuda (builds with UNMASK_CUDA; no op dispatches yet)
};

// "cpu" | "cuda".
std::string_view DeviceName(Device device);
// The inverse of DeviceName (exact, lower-case names); nullopt for any other name.
std::optional<Device> DeviceFromName(std::string_view name);

}  // namespace unmask

#endif  // UNMASK_CORE_DEVICE_H_
