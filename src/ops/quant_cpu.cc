// Q4_0 / Q4_1 / Q4_K / Q6_K -> f32 converters: the in-register decoders of ops/quant_simd.h
// (AVX-512 or AVX2) storing each slice, or the scalar reference (ops/ref/quant_ref.h) in the
// portable build. Bit-identical to the reference in every tier.
#include "ops/kernels_cpu.h"
#include "ops/quant_simd.h"
#include "ops/ref/quant_ref.h"

namespace unmask::cpu {
namespace {

#if defined(UNMASK_QUANT_SIMD)
inline void Store(float* dst, quant::VecF w) {
#if defined(UNMASK_HAVE_AVX512)
  _mm512_storeu_ps(dst, w);
#else
  _mm256_storeu_ps(dst, w);
#endif
}
#endif

}  // namespace

void ConvertQ4_0ToF32(const BlockQ4_0* src, int64_t num_blocks, float* dst) {
#if defined(UNMASK_QUANT_SIMD)
  for (int64_t b = 0; b < num_blocks; ++b) {
    float* out = dst + b * kQ4_0BlockSize;
    quant::DecodeQ4_0(src[b], [out](int offset, quant::VecF w) { Store(out + offset, w); });
  }
#else
  ref::DequantizeQ4_0(src, num_blocks, dst);
#endif
}

void ConvertQ4_1ToF32(const BlockQ4_1* src, int64_t num_blocks, float* dst) {
#if defined(UNMASK_QUANT_SIMD)
  for (int64_t b = 0; b < num_blocks; ++b) {
    float* out = dst + b * kQ4_1BlockSize;
    quant::DecodeQ4_1(src[b], [out](int offset, quant::VecF w) { Store(out + offset, w); });
  }
#else
  ref::DequantizeQ4_1(src, num_blocks, dst);
#endif
}

void ConvertQ4_KToF32(const BlockQ4_K* src, int64_t num_blocks, float* dst) {
#if defined(UNMASK_QUANT_SIMD)
  for (int64_t b = 0; b < num_blocks; ++b) {
    float* out = dst + b * kQkK;
    quant::DecodeQ4_K(src[b], [out](int offset, quant::VecF w) { Store(out + offset, w); });
  }
#else
  ref::DequantizeQ4_K(src, num_blocks, dst);
#endif
}

void ConvertQ6_KToF32(const BlockQ6_K* src, int64_t num_blocks, float* dst) {
#if defined(UNMASK_QUANT_SIMD)
  for (int64_t b = 0; b < num_blocks; ++b) {
    float* out = dst + b * kQkK;
    quant::DecodeQ6_K(src[b], [out](int offset, quant::VecF w) { Store(out + offset, w); });
  }
#else
  ref::DequantizeQ6_K(src, num_blocks, dst);
#endif
}

}  // namespace unmask::cpu
