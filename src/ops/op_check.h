// Ops-internal argument checks shared by the <op>.cc dispatch files. Each returns OK or
// InvalidArgument with a message naming the op, the tensor and what was expected; the device
// helpers serve the dispatch on TensorView::device at the end of each op's public entry.
#ifndef UNMASK_OPS_OP_CHECK_H_
#define UNMASK_OPS_OP_CHECK_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/tensor.h"

namespace unmask::ops_internal {

// "x [2, 3] f32" ("x [2, 3] f32 on cuda" for a tensor that is not on the CPU).
std::string Describe(std::string_view name, const TensorView& t);

// A tensor argument of an op, by name.
struct NamedTensor {
  std::string_view name;
  const TensorView* tensor;
};

// The device all `tensors` (at least one) live on. Errors: InvalidArgument naming the first two
// tensors that are on different devices.
StatusOr<Device> CommonDevice(std::string_view op, std::initializer_list<NamedTensor> tensors);

// Unimplemented: `op` has no kernel for tensors on `device` (e.g. "RmsNorm: no kernel for tensors
// on cuda (this build has cpu kernels only)").
Status NoKernel(std::string_view op, Device device);

// dtype == F32, rank == `rank` (or any rank >= 1 when rank < 0), all dims >= 0, and data non-null
// when the tensor has elements.
Status CheckF32(std::string_view op, std::string_view name, const TensorView& t, int rank);

// Bytes spanned by a tensor's data (0 when it has no elements or an unsupported size).
size_t ByteSize(const TensorView& t);

// True when the byte ranges of a and b intersect (empty tensors never overlap).
bool Overlap(const TensorView& a, const TensorView& b);
bool SameData(const TensorView& a, const TensorView& b);

}  // namespace unmask::ops_internal

#endif  // UNMASK_OPS_OP_CHECK_H_
