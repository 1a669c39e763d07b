#include "ops/ref/quant_ref.h"

#include "core/half.h"

namespace unmask::ref {

void Q4KScaleMin(const uint8_t* scales, int j, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = static_cast<uint8_t>(scales[j] & 63);
    *mn = static_cast<uint8_t>(scales[j + 4] & 63);
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

void DequantizeQ4_0(const BlockQ4_0* src, int64_t num_blocks, float* dst) {
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = F16ToF32(src[b].d);
    float* out = dst + b * kQ4_0BlockSize;
    for (int j = 0; j < kQ4_0BlockSize / 2; ++j) {
      const int lo = (src[b].qs[j] & 0x0F) - 8;
      const int hi = (src[b].qs[j] >> 4) - 8;
      out[j] = d * static_cast<float>(lo);
      out[j + kQ4_0BlockSize / 2] = d * static_cast<float>(hi);
    }
  }
}

void DequantizeQ4_1(const BlockQ4_1* src, int64_t num_blocks, float* dst) {
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = F16ToF32(src[b].d);
    const float m = F16ToF32(src[b].m);
    float* out = dst + b * kQ4_1BlockSize;
    for (int j = 0; j < kQ4_1BlockSize / 2; ++j) {
      const float lo = d * static_cast<float>(src[b].qs[j] & 0x0F);  // exact
      const float hi = d * static_cast<float>(src[b].qs[j] >> 4);
      out[j] = lo + m;
      out[j + kQ4_1BlockSize / 2] = hi + m;
    }
  }
}

void DequantizeQ4_K(const BlockQ4_K* src, int64_t num_blocks, float* dst) {
  for (int64_t b = 0; b < num_blocks; ++b) {
    const BlockQ4_K& blk = src[b];
    const float d = F16ToF32(blk.d);
    const float dmin = F16ToF32(blk.dmin);
    float* out = dst + b * kQkK;
    for (int pair = 0; pair < 4; ++pair) {  // sub-blocks 2 pair (low nibbles), 2 pair + 1 (high)
      const uint8_t* q = blk.qs + 32 * pair;
      for (int half = 0; half < 2; ++half) {
        uint8_t sc = 0, mn = 0;
        Q4KScaleMin(blk.scales, 2 * pair + half, &sc, &mn);
        const float d1 = d * static_cast<float>(sc);     // exact
        const float m1 = dmin * static_cast<float>(mn);  // exact
        float* o = out + 64 * pair + 32 * half;
        for (int l = 0; l < 32; ++l) {
          const int nibble = half == 0 ? (q[l] & 0x0F) : (q[l] >> 4);
          const float scaled = d1 * static_cast<float>(nibble);  // exact
          o[l] = scaled - m1;
        }
      }
    }
  }
}

void DequantizeQ6_K(const BlockQ6_K* src, int64_t num_blocks, float* dst) {
  for (int64_t b = 0; b < num_blocks; ++b) {
    const BlockQ6_K& blk = src[b];
    const float d = F16ToF32(blk.d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk.ql + 64 * h;
      const uint8_t* qh = blk.qh + 32 * h;
      const int8_t* sc = blk.scales + 8 * h;
      float* out = dst + b * kQkK + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q[4] = {
            ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32,
            ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32,
            ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32,
            ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32,
        };
        for (int g = 0; g < 4; ++g) {
          const float d1 = d * static_cast<float>(sc[s + 2 * g]);  // exact
          out[l + 32 * g] = d1 * static_cast<float>(q[g]);         // exact
        }
      }
    }
  }
}

}  // namespace unmask::ref
