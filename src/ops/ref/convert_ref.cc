#include "ops/ref/convert_ref.h"

#include <cstring>

#include "core/half.h"
#include "ops/ref/quant_ref.h"

namespace unmask::ref {

bool ConvertRowToF32(DType dtype, const void* src, int64_t n, float* dst) {
  if (n < 0) return false;
  switch (dtype) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst + i, static_cast<const char*>(src) + i * 4, 4);
      }
      return true;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(static_cast<const uint16_t*>(src)[i]);
      return true;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = BF16ToF32(static_cast<const uint16_t*>(src)[i]);
      return true;
    case DType::kQ8_0: {
      if (n % kQ8_0BlockSize != 0) return false;
      const auto* blocks = static_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < n; ++i) {
        const BlockQ8_0& b = blocks[i / kQ8_0BlockSize];
        dst[i] = F16ToF32(b.d) * static_cast<float>(b.qs[i % kQ8_0BlockSize]);
      }
      return true;
    }
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ4_K:
    case DType::kQ6_K: {
      const int64_t block = GetDTypeInfo(dtype).block_size;
      if (n % block != 0) return false;
      if (dtype == DType::kQ4_0) DequantizeQ4_0(static_cast<const BlockQ4_0*>(src), n / block, dst);
      if (dtype == DType::kQ4_1) DequantizeQ4_1(static_cast<const BlockQ4_1*>(src), n / block, dst);
      if (dtype == DType::kQ4_K) DequantizeQ4_K(static_cast<const BlockQ4_K*>(src), n / block, dst);
      if (dtype == DType::kQ6_K) DequantizeQ6_K(static_cast<const BlockQ6_K*>(src), n / block, dst);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace unmask::ref
