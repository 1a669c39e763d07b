// The CUDA runtime as the backend uses it: errors as Status, the devices present, and device
// memory owned by RAII buffers. Host code (g++); includes no CUDA header, so the rest of the
// project can use it without the toolkit's include path.
#ifndef UNMASK_BACKEND_CUDA_CUDA_RUNTIME_H_
#define UNMASK_BACKEND_CUDA_CUDA_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace unmask::cuda {

// Ok for cudaSuccess (0); otherwise Internal "WHAT: cudaGetErrorName: cudaGetErrorString".
Status CudaStatus(int cuda_error, const std::string& what);

// Devices visible to the CUDA runtime (0 when there is no driver or no GPU: that is not an
// error, the reason is in *why when given).
int DeviceCount(std::string* why = nullptr);

// What a report says of device `index`, from cudaGetDeviceProperties.
struct DeviceInfo {
  std::string name;              // e.g. "NVIDIA H200"
  int major = 0, minor = 0;      // compute capability, e.g. 9.0
  int multiprocessors = 0;       // SMs
  int64_t memory_bytes = 0;      // global memory
  int64_t memory_bus_bits = 0;   // memory bus width
  int64_t memory_clock_khz = 0;  // memory clock (0 where the runtime no longer reports it)
};
// Errors: InvalidArgument for an index outside [0, DeviceCount()); those of the runtime.
StatusOr<DeviceInfo> GetDeviceInfo(int index);

// Device memory of `bytes` bytes on the current device (cudaMalloc), freed on destruction.
// Move-only. A zero-byte buffer holds no memory (data() is nullptr).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Errors: ResourceExhausted when the device has not that much free memory (the message has the
  // size); FailedPrecondition without a device; other runtime errors as Internal.
  static StatusOr<DeviceBuffer> Allocate(size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Synchronous copies (cudaMemcpy); bytes must fit both sides (unchecked).
Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes);
Status CopyToHost(void* host_dst, const void* device_src, size_t bytes);
// Waits for every launch on the current device (cudaDeviceSynchronize): asynchronous kernel
// errors surface here.
Status Synchronize(const std::string& what);

}  // namespace unmask::cuda

#endif  // UNMASK_BACKEND_CUDA_CUDA_RUNTIME_H_
