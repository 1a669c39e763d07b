#include "backend/cuda/cuda_runtime.h"

#include <cuda_runtime_api.h>

#include <utility>

namespace unmask::cuda {

Status CudaStatus(int cuda_error, const std::string& what) {
  if (cuda_error == 0) return Status::Ok();
  const auto e = static_cast<cudaError_t>(cuda_error);
  return InternalError(what + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

int DeviceCount(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why != nullptr) *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (n == 0 && why != nullptr) *why = "the CUDA runtime reports 0 devices";
  return n;
}

StatusOr<DeviceInfo> GetDeviceInfo(int index) {
  const int n = DeviceCount();
  if (index < 0 || index >= n) {
    return InvalidArgumentError("CUDA device " + std::to_string(index) + " does not exist (" +
                                std::to_string(n) + " visible)");
  }
  cudaDeviceProp p{};
  UNMASK_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties"));
  DeviceInfo info;
  info.name = p.name;
  info.major = p.major;
  info.minor = p.minor;
  info.multiprocessors = p.multiProcessorCount;
  info.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  info.memory_bus_bits = p.memoryBusWidth;
  int clock_khz = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, index) == cudaSuccess) {
    info.memory_clock_khz = clock_khz;
  } else {
    cudaGetLastError();
  }
  return info;
}

StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  std::string why;
  if (DeviceCount(&why) == 0) {
    return FailedPreconditionError("device memory of " + std::to_string(bytes) +
                                   " bytes: no CUDA device (" + why + ")");
  }
  const cudaError_t e = cudaMalloc(&b.data_, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return ResourceExhaustedError("cudaMalloc of " + std::to_string(bytes) +
                                  " bytes: out of device memory");
  }
  UNMASK_RETURN_IF_ERROR(CudaStatus(e, "cudaMalloc of " + std::to_string(bytes) + " bytes"));
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  return CudaStatus(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice),
                    "cudaMemcpy to the device (" + std::to_string(bytes) + " bytes)");
}

Status CopyToHost(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  return CudaStatus(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost),
                    "cudaMemcpy to the host (" + std::to_string(bytes) + " bytes)");
}

Status Synchronize(const std::string& what) { return CudaStatus(cudaDeviceSynchronize(), what); }

}  // namespace unmask::cuda
