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

// sum_i exp(x_i - shift) over host values x [n] (n >= 0; 0 for n = 0): the normalizer of a
// sampler's softmax, with shift = max x so that every term is in (0, 1]. Each term is computed in
// f32 (x_i - shift rounded to f32, then the ops' vectorized exp, about 2 ulp) and the terms are
// summed in f64: relative error about 3 u_f32 + |x_i - shift| u_f32 per term, so for shift = max x
// the result is within ~(3 + max_i |x_i - shift| e^-1) u_f32 relative of the exact sum (the
// largest terms have |x_i - shift| near 0). -inf entries contribute 0; a NaN gives NaN.
double SumExpShifted(const float* x, int64_t n, float shift);

}  // namespace unmask

#endif  // UNMASK_OPS_SOFTMAX_H_
