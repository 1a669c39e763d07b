// Linear layers y = x W^T with weights prepared once at load time.
#ifndef UNMASK_OPS_LINEAR_H_
#define UNMASK_OPS_LINEAR_H_

#include <cstdint>
#include <memory>
#include <span>

#include "core/compute.h"
#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

// How a weight is kept in memory:
//   kPacked:   dequantized once and prepacked for the GEMM provider in the compute type of
//              Prepare (core/compute.h): f32 4 bytes per weight, bf16 2, int8 1 (+ a scale per
//              row). The fast path of products over many rows.
//   kOnTheFly: kept in its stored dtype (e.g. the mmap'd F16/Q8_0 data, no copy); M <= 16 runs
//              fused kernels that read each weight once, larger M dequantizes panels of rows to
//              f32 inside Linear (memory of the original file; slower for large M). On CPUs with
//              AVX512-VNNI, Q4_0 / Q4_1 / Q8_0 parts are also copied once into a 16-row layout
//              (ops/linear_packed_quant.h; as many bytes again, in owned_bytes()) whose kernel
//              multiplies all M <= 16 rows of x by one read of the weights (UNMASK_PACKED_QUANT=0:
//              no copy, the row-major kernels).
//   kAuto:     kPacked unless the caller's budget says otherwise (decided by the model loader).
enum class WeightMode { kAuto, kPacked, kOnTheFly };

// A weight matrix W [out_features, in_features] (row-major, as GGUF stores a {in, out} tensor),
// ready for Linear. Move-only; owns any packed copy. Thread-safe for concurrent Linear calls.
class LinearWeight {
 public:
  LinearWeight();
  ~LinearWeight();
  LinearWeight(LinearWeight&&) noexcept;
  LinearWeight& operator=(LinearWeight&&) noexcept;

  // Prepares the row-wise concatenation of `parts` (each [n_i, K], same K; dtypes F32, F16, BF16,
  // Q8_0, Q4_0, Q4_1, Q4_K or Q6_K, may differ; K a multiple of every part's block size: 32 for
  // Q8_0/Q4_0/Q4_1, 256 for Q4_K/Q6_K) as one [sum n_i, K] weight — used to fuse Q/K/V and
  // gate/up projections.
  // For kOnTheFly the parts are referenced, not copied: their data must outlive this weight
  // (the model keeps its mmap'd GGUF alive).
  // Errors: InvalidArgument on shape/dtype mismatch or unsupported dtype; Unimplemented for a
  // part that is not in host memory (device other than kCpu).
  // compute: the number type of the packed product (kPacked; kAuto is kPacked). kOnTheFly takes
  // kF32 only (InvalidArgument otherwise). bf16 and int8 need the oneDNN GEMM provider
  // (FailedPrecondition otherwise); int8 refuses a weight holding NaN or infinity
  // (InvalidArgument).
  static StatusOr<LinearWeight> Prepare(std::span<const TensorView> parts, WeightMode mode,
                                        ComputeType compute = ComputeType::kF32);

  int64_t out_features() const;
  int64_t in_features() const;
  WeightMode mode() const;  // never kAuto after Prepare
  // The number type of the product: the packed type, kF32 for kOnTheFly.
  ComputeType compute() const;
  // Where the prepared weight lives: kCpu (Prepare takes host memory and keeps it there).
  Device device() const { return Device::kCpu; }
  // Bytes of memory held by this object (packed copies), 0 for referenced data.
  size_t owned_bytes() const;

  struct Impl;
  const Impl* impl() const { return impl_.get(); }

 private:
  std::unique_ptr<Impl> impl_;
};

// What the fused small-M (M <= 16, in groups of 4 rows) on-the-fly kernels multiply
// Q8_0/Q4_0/Q4_1/Q4_K/Q6_K weights with (F32/F16/BF16 weights always meet f32 x). Process-wide
// (like the GEMM provider); the default is kInt8. Thread-safe to change between calls.
//   kInt8: each x row is quantized per 32 elements to int8 with an f32 scale d = max|x| / 127 (the
//          activations of llama.cpp's CPU kernels, ggml Q8_0) and the blocks are multiplied with
//          integer dot products: memory-bound instead of decode-bound (1.4-1.7x kF32 on one
//          core for the 4-bit types). y differs from the exact product by the activation
//          rounding: per x block b, |error| <= 0.51 * (max_{k in b} |x_k| / 127) *
//          sum_{k in b} |w_k|, plus f32 rounding.
//   kF32:  the f32 dot product of the exactly dequantized weights and x (what kPacked and
//          M > 16 compute, up to summation order); decode-bound.
enum class QuantActivations { kInt8, kF32 };
void SetQuantActivations(QuantActivations activations);
QuantActivations GetQuantActivations();

// y[M, N] = x[M, K] * W[N, K]^T (f32). x and y must not overlap. M may be any value >= 0.
// Errors: InvalidArgument when shapes/dtypes do not match (names the dims) or x, y and the weight
// are on different devices; Unimplemented for a device without a kernel (cpu only in this build).
Status Linear(const TensorView& x, const LinearWeight& w, TensorView y);

}  // namespace unmask

#endif  // UNMASK_OPS_LINEAR_H_
