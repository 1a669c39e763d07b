// Rotary position embedding (Su et al. 2021, RoFormer). For pair index i in [0, rope_dim/2):
// theta_i = pos * base^(-2i / rope_dim); the pair (a, b) becomes (a cos - b sin, a sin + b cos).
// Two layouts of the pairs inside a head of size head_dim:
//   kInterleaved ("normal" in ggml, what llama.cpp's converters store for LLaMA/LLaDA GGUF):
//                pairs are (2i, 2i+1).
//   kNeox ("rotate_half", HF transformers; ggml NEOX, used by Qwen2/Dream): pairs are
//                (i, i + rope_dim/2).
// Dimensions >= rope_dim are left unchanged.
#ifndef UNMASK_OPS_ROPE_H_
#define UNMASK_OPS_ROPE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

// Device dispatch (all ops): the tensors of one call must be on one device (else InvalidArgument);
// a device without a kernel (in this build every device but kCpu) gives Unimplemented.

enum class RopeLayout { kInterleaved, kNeox };

// Precomputed cos/sin for positions [0, max_positions): angles computed in double, stored as f32.
class RopeTable {
 public:
  RopeTable() = default;
  // Errors: InvalidArgument for rope_dim odd or <= 0, base <= 0, max_positions <= 0.
  static StatusOr<RopeTable> Create(int64_t rope_dim, double base, int64_t max_positions);
  int64_t rope_dim() const { return rope_dim_; }
  int64_t max_positions() const { return max_positions_; }
  const float* cos(int64_t pos) const { return cos_.data() + pos * (rope_dim_ / 2); }
  const float* sin(int64_t pos) const { return sin_.data() + pos * (rope_dim_ / 2); }

 private:
  int64_t rope_dim_ = 0;
  int64_t max_positions_ = 0;
  std::vector<float> cos_;  // [max_positions, rope_dim / 2]
  std::vector<float> sin_;  // [max_positions, rope_dim / 2]
};

// x: [M, num_heads, head_dim] f32, rotated in place; positions: M absolute positions.
// Errors: InvalidArgument if a position is outside the table, rope_dim > head_dim, or shapes
// differ.
Status ApplyRope(TensorView x, std::span<const int32_t> positions, const RopeTable& table,
                 RopeLayout layout);

}  // namespace unmask

#endif  // UNMASK_OPS_ROPE_H_
