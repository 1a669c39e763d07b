// Scalar reference RoPE (RoFormer, Su et al. 2021): theta_i = pos * base^(-2i / rope_dim), pair
// (a, b) -> (a cos - b sin, a sin + b cos), computed in double from the formula (no table).
#ifndef UNMASK_OPS_REF_ROPE_REF_H_
#define UNMASK_OPS_REF_ROPE_REF_H_

#include <cstdint>

#include "ops/rope.h"

namespace unmask::ref {

// x: [m, num_heads, head_dim] in place; positions: m values >= 0; rope_dim even, <= head_dim.
void ApplyRope(float* x, int64_t m, int64_t num_heads, int64_t head_dim, const int32_t* positions,
               int64_t rope_dim, double base, RopeLayout layout);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_ROPE_REF_H_
