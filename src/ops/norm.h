// RMSNorm (Zhang & Sennrich 2019), as in LLaMA/LLaDA: y = x / sqrt(mean(x^2) + eps) * w.
#ifndef UNMASK_OPS_NORM_H_
#define UNMASK_OPS_NORM_H_

#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

// Device dispatch (all ops): the tensors of one call must be on one device (else InvalidArgument);
// a device without a kernel (in this build every device but kCpu) gives Unimplemented.

// x: [M, D] f32, w: [D] f32, y: [M, D] f32 (y may alias x). The sum of squares is accumulated in
// f32 or better. Errors: InvalidArgument on shape mismatch.
Status RmsNorm(const TensorView& x, const TensorView& w, float eps, TensorView y);

}  // namespace unmask

#endif  // UNMASK_OPS_NORM_H_
