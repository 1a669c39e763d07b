// Activations. SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer"): out = silu(gate) * up,
// silu(x) = x / (1 + exp(-x)).
#ifndef UNMASK_OPS_ACTIVATION_H_
#define UNMASK_OPS_ACTIVATION_H_

#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

// Device dispatch (all ops): the tensors of one call must be on one device (else InvalidArgument);
// a device without a kernel (in this build every device but kCpu) gives Unimplemented.

// gate_up: [M, 2F] f32 with gate in columns [0, F) and up in [F, 2F) (a fused gate/up projection);
// out: [M, F] f32. Errors: InvalidArgument on shape mismatch.
Status SwiGlu(const TensorView& gate_up, TensorView out);

// y += x elementwise (residual add); same shapes. Errors: InvalidArgument on mismatch.
Status AddInPlace(TensorView y, const TensorView& x);

}  // namespace unmask

#endif  // UNMASK_OPS_ACTIVATION_H_
