// Dequantization / conversion to f32 of F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K and Q6_K data, and
// embedding lookup.
#ifndef UNMASK_OPS_CONVERT_H_
#define UNMASK_OPS_CONVERT_H_

#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

// Converts `n` elements of `dtype` at `src` to f32 at `dst` (n a multiple of the block size).
// Both are host (CPU) memory: raw pointers carry no device (a loader's helper, not dispatched).
// Errors: Unimplemented for dtypes without a converter; InvalidArgument for a partial block.
Status ConvertRowToF32(DType dtype, const void* src, int64_t n, float* dst);

// out[i, :] = table[ids[i], :] as f32. table: [V, D] (any dtype ConvertRowToF32
// accepts; D a multiple of its block size), out: [len(ids), D] f32.
// ids are host memory; table and out on one device (CPU kernels only in this build).
// Errors: OutOfRange naming the id when an id is outside [0, V); InvalidArgument when table and
// out are on different devices; Unimplemented for a device without a kernel.
Status GetRows(const TensorView& table, std::span<const int32_t> ids, TensorView out);

}  // namespace unmask

#endif  // UNMASK_OPS_CONVERT_H_
