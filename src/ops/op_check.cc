#include "ops/op_check.h"

#include <cstdint>

namespace unmask::ops_internal {

std::string Describe(std::string_view name, const TensorView& t) {
  std::string s =
      std::string(name) + " " + t.shape.ToString() + " " + std::string(DTypeName(t.dtype));
  if (t.device != Device::kCpu) s += " on " + std::string(DeviceName(t.device));
  return s;
}

StatusOr<Device> CommonDevice(std::string_view op, std::initializer_list<NamedTensor> tensors) {
  const NamedTensor& first = *tensors.begin();
  for (const NamedTensor& t : tensors) {
    if (t.tensor->device != first.tensor->device) {
      return InvalidArgumentError(std::string(op) + ": " + std::string(t.name) + " is on " +
                                  std::string(DeviceName(t.tensor->device)) + " but " +
                                  std::string(first.name) + " on " +
                                  std::string(DeviceName(first.tensor->device)) +
                                  " (an op's tensors must be on one device)");
    }
  }
  return first.tensor->device;
}

Status NoKernel(std::string_view op, Device device) {
  return UnimplementedError(std::string(op) + ": no kernel for tensors on " +
                            std::string(DeviceName(device)) + " (this build has cpu kernels only)");
}

Status CheckF32(std::string_view op, std::string_view name, const TensorView& t, int rank) {
  if (t.dtype != DType::kF32) {
    return InvalidArgumentError(std::string(op) + ": " + Describe(name, t) + " must be f32");
  }
  if (rank >= 0 ? t.shape.rank() != rank : t.shape.rank() < 1) {
    return InvalidArgumentError(std::string(op) + ": " + Describe(name, t) + " must have rank " +
                                (rank >= 0 ? std::to_string(rank) : std::string(">= 1")));
  }
  for (int i = 0; i < t.shape.rank(); ++i) {
    if (t.shape[i] < 0) {
      return InvalidArgumentError(std::string(op) + ": " + Describe(name, t) +
                                  " has a negative dim");
    }
  }
  if (t.data == nullptr && t.num_elements() > 0) {
    return InvalidArgumentError(std::string(op) + ": " + Describe(name, t) + " has null data");
  }
  return Status::Ok();
}

size_t ByteSize(const TensorView& t) {
  for (int i = 0; i < t.shape.rank(); ++i) {
    if (t.shape[i] <= 0) return 0;
  }
  const auto row = RowBytes(t.dtype, t.cols());
  return row ? *row * static_cast<size_t>(t.rows()) : 0;
}

bool Overlap(const TensorView& a, const TensorView& b) {
  const size_t na = ByteSize(a), nb = ByteSize(b);
  if (na == 0 || nb == 0 || a.data == nullptr || b.data == nullptr) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a.data);
  const auto pb = reinterpret_cast<uintptr_t>(b.data);
  return pa < pb + nb && pb < pa + na;
}

bool SameData(const TensorView& a, const TensorView& b) { return a.data == b.data; }

}  // namespace unmask::ops_internal
