// Row-wise softmax, numerically stable (subtract the row max).
#ifndef UNMASK_OPS_SOFTMAX_H_
#define UNMASK_OPS_SOFTMAX_H_

#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

// Device dispatch (all ops): the tensors of one call must be on one device (else InvalidArgument);
// a device without a kernel (in this build every device but kCpu) gives Unimplemented.

// x: [M, N] f32, in place. Rows of all -inf become all 0 (never NaN). Errors: InvalidArgument
// for non-f32 input.
Status SoftmaxInPlace(TensorView x);

}  // namespace unmask

#endif  // UNMASK_OPS_SOFTMAX_H_
