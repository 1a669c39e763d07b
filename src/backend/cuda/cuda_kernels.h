// The CUDA kernels of the CUDA backend (cuda_kernels_*.cu), as host-callable launchers on device
// pointers. Each mirrors one CPU kernel of src/ops/kernels_cpu.h (same shapes, same formula) and
// is tested against it (tests/cuda/cuda_kernels_test.cc, ctest label gpu). Callers have checked
// shapes and pointers; the launchers check nothing but the launch itself. No CUDA header here:
// `stream` is a cudaStream_t (nullptr: the legacy default stream), the return value a
// cudaError_t (0 = cudaSuccess) of the launch (asynchronous errors surface at the next sync).
#ifndef UNMASK_BACKEND_CUDA_CUDA_KERNELS_H_
#define UNMASK_BACKEND_CUDA_CUDA_KERNELS_H_

#include <cstdint>

namespace unmask::cuda {

// x, y [m, d] f32 (y may be x): y = x / sqrt(mean(x^2) + eps) * w, w [d]. One block per row,
// the sum of squares as a tree of f32 partial sums.
int RmsNormRows(const float* x, const float* w, int64_t m, int64_t d, float eps, float* y,
                void* stream);

// gate_up [m, 2f] (gate then up per row) -> out [m, f]: out = gate * sigmoid(gate) * up, the
// sigmoid as the CPU computes it: e = exp(-|g|), (g < 0 ? e : 1) / (1 + e).
int SwiGluRows(const float* gate_up, int64_t m, int64_t f, float* out, void* stream);

// x [m, n] f32, in place: softmax per row (max subtracted); a row of only -inf becomes all 0.
int SoftmaxRows(float* x, int64_t m, int64_t n, void* stream);

// logits [m, n] f32 -> ids [m] (the first index of the row's maximum: the greedy tie rule) and
// prob [m] (its softmax probability, 1 / sum exp(x - max); 0 for a row of only -inf, id 0): the
// top-1 confidence the commit rules read, so only m ids and m floats cross to the host.
int ArgmaxRows(const float* logits, int64_t m, int64_t n, int32_t* ids, float* prob, void* stream);

// x [m, num_heads, head_dim] f32 rotated in place (ops/rope.h): cos_table / sin_table
// [max_positions, rope_dim / 2] in device memory (ops RopeTable's values), positions [m] in
// device memory (already checked against max_positions); interleaved pairs (2i, 2i + 1) when
// neox is false, else (i, i + rope_dim / 2). Dimensions >= rope_dim are left unchanged.
// Bit-identical to the CPU kernel (the same fma and products).
int RopeRows(float* x, int64_t m, int64_t num_heads, int64_t head_dim, int64_t rope_dim,
             const int32_t* positions, const float* cos_table, const float* sin_table, bool neox,
             void* stream);

// table [rows, d] of f32 (dtype 0), f16 (1) or bf16 (2) -> out [n, d] f32, out row i = table row
// ids[i] (ids in device memory, already checked); conversions exact (ops GetRows).
int GetRows(const void* table, int dtype, int64_t d, const int32_t* ids, int64_t n, float* out,
            void* stream);

}  // namespace unmask::cuda

#endif  // UNMASK_BACKEND_CUDA_CUDA_KERNELS_H_
