// The number type the compute-bound matrix products (the packed Linear weights: every
// projection of a forward over many positions) run in. Attention, norms, softmax, RoPE and the
// KV cache stay f32 in every type. docs/decoding.md "Compute precision" has the measured
// agreement of each type with f32; backend/cpu/packed_gemm.h the kernels.
#ifndef UNMASK_CORE_COMPUTE_H_
#define UNMASK_CORE_COMPUTE_H_

#include <optional>
#include <string_view>

namespace unmask {

enum class ComputeType {
  // f32 x f32 with f32 accumulation: the exact path every golden and conformance test pins.
  kF32,
  // bf16 x bf16 with f32 accumulation (the published numerics of LLaDA, Dream, SDAR, LLaDA2):
  // weights rounded once at load, activations rounded to bf16 (round to nearest even) per call.
  kBf16,
  // s8 x s8 with int32 accumulation: weights quantized once per output channel (scale =
  // max |w_row| / 127), activations per row and call (scale = max |x_row| / 127), both
  // symmetric, rounded to nearest even; y = acc * scale_x[row] * scale_w[col].
  kInt8,
};

// "f32" | "bf16" | "int8".
std::string_view ComputeTypeName(ComputeType type);
// The inverse of ComputeTypeName (exact, lower-case names); nullopt for any other name
// (including "auto", which a backend resolves: backend/backend.h).
std::optional<ComputeType> ComputeTypeFromName(std::string_view name);
// Bytes per weight element of a packed weight of `type`: 4, 2 or 1 (plus int8's per-row scales).
int ComputeTypeBytes(ComputeType type);

}  // namespace unmask

#endif  // UNMASK_CORE_COMPUTE_H_
