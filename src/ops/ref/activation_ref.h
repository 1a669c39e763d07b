// Scalar references for SwiGLU (Shazeer 2020: silu(gate) * up, silu(g) = g / (1 + exp(-g)))
// and the residual add, in double.
#ifndef UNMASK_OPS_REF_ACTIVATION_REF_H_
#define UNMASK_OPS_REF_ACTIVATION_REF_H_

#include <cstdint>

namespace unmask::ref {

// gate_up: [m, 2f] (gate columns [0, f), up [f, 2f)); out: [m, f].
void SwiGlu(const float* gate_up, int64_t m, int64_t f, float* out);
// y[i] += x[i] for i < n.
void AddInPlace(float* y, const float* x, int64_t n);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_ACTIVATION_REF_H_
