// Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel Random
// Numbers: As Easy as 1, 2, 3", SC'11; constants and round function as in Random123).
// A draw is a pure function of (seed, stream, step, position, index), so results do not depend on
// batch composition, visiting order or thread count (ARCHITECTURE.md "Numerics and determinism").
// scripts/reference/rng.py implements the same mapping for the Python reference.
#ifndef UNMASK_CORE_RNG_H_
#define UNMASK_CORE_RNG_H_

#include <array>
#include <cstdint>

namespace unmask {

// One Philox4x32-10 block: 10 rounds, key bumped between rounds.
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// What a draw is used for; part of the counter so that different uses never share numbers.
enum class RngStream : uint32_t {
  kGumbel = 1,        // Gumbel-max token sampling: index = vocabulary id
  kRemaskRandom = 2,  // `random` remasking confidence: index = 0
  kSampling = 3,      // generic categorical sampling: index = 0
  kSpecAccept = 4,    // speculative decoding: accept/reject draws, index = 0
  kSpecResidual = 5,  // speculative decoding: draws from the residual max(p - q, 0), index = 0
  kDreamOrigin = 6,   // Dream alg origin: rand < 1 - s/t per masked position, index = 0
  kDreamAlgTemp = 7,  // Dream alg_temp > 0: Gumbel-top-k over positions, index = 0
                      // (Dream's categorical token draw at T > 0 uses kGumbel, index = vocab id)
};

class CounterRng {
 public:
  explicit CounterRng(uint64_t seed) : seed_(seed) {}
  uint64_t seed() const { return seed_; }

  // Uniform double in [0, 1) with 53 random bits. counter = (index, position, step, stream),
  // key = (seed & 0xffffffff, seed >> 32); from the block's first two words w0, w1:
  // u = ((w0 >> 5) * 2^26 + (w1 >> 6)) * 2^-53.
  double Uniform(RngStream stream, uint32_t step, uint32_t position, uint32_t index) const;

 private:
  uint64_t seed_;
};

}  // namespace unmask

#endif  // UNMASK_CORE_RNG_H_
