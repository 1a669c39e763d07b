#include "core/rng.h"

namespace unmask {
namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

}  // namespace

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kPhiloxW0;
      k[1] += kPhiloxW1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kPhiloxM0, c[0], &hi0, &lo0);
    MulHiLo(kPhiloxM1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

double CounterRng::Uniform(RngStream stream, uint32_t step, uint32_t position,
                           uint32_t index) const {
  const auto w = Philox4x32({index, position, step, static_cast<uint32_t>(stream)},
                            {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)});
  const uint64_t a = w[0] >> 5;  // 27 bits
  const uint64_t b = w[1] >> 6;  // 26 bits
  return static_cast<double>((a << 26) | b) * (1.0 / 9007199254740992.0);
}

}  // namespace unmask
