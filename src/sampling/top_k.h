// Selecting the k best-scored candidates with a documented tie rule.
#ifndef UNMASK_SAMPLING_TOP_K_H_
#define UNMASK_SAMPLING_TOP_K_H_

#include <cstdint>
#include <span>
#include <vector>

namespace unmask {

// Indices of the k largest scores, ordered by score descending. TIE RULE: equal scores are
// ordered by lower index first (torch.topk leaves this unspecified on CUDA; unmask fixes it,
// ARCHITECTURE.md "Numerics"). k is clamped to [0, scores.size()]. -inf scores are allowed and
// rank last; NaN ranks below -inf.
std::vector<int32_t> SelectTopK(std::span<const double> scores, int64_t k);

}  // namespace unmask

#endif  // UNMASK_SAMPLING_TOP_K_H_
