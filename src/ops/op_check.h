// Ops-internal argument checks shared by the <op>.cc dispatch files. Each returns OK or
// InvalidArgument with a message naming the op, the tensor and what was expected.
#ifndef UNMASK_OPS_OP_CHECK_H_
#define UNMASK_OPS_OP_CHECK_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/tensor.h"

namespace unmask::ops_internal {

// "x [2, 3] f32"
std::string Describe(std::string_view name, const TensorView& t);

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
