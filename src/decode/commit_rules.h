// Parallel commit rules of fast diffusion decoding: which of a block's masked positions one step
// commits, given each position's confidence (ALGORITHMS.md §3.2, §4.2). All functions take the
// candidates' confidences `conf` [num_candidates] (softmax probability of the chosen token, in
// (0, 1], or a uniform draw for random remasking) and return indices into `conf`, ordered by
// confidence descending (TIE RULE: lower index first, as SelectTopK). Every rule commits at least
// one candidate when there is any, so a block always finishes.
#ifndef UNMASK_DECODE_COMMIT_RULES_H_
#define UNMASK_DECODE_COMMIT_RULES_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace unmask {

// Fast-dLLM `get_transfer_index(threshold=τ)` (NVlabs/Fast-dLLM llada/generate.py): the top-1
// always, plus every other candidate with conf >= threshold.
std::vector<int32_t> SelectThreshold(std::span<const double> conf, double threshold);

// Fast-dLLM `get_transfer_index_dynamic(factor)` (same file; identical in dInfer
// parallel_strategy.py): with c_1 >= c_2 >= ... >= c_N sorted, rank r (1-based) passes when r == 1
// or c_r >= 1 - factor / (r + 1). n = the number of leading ranks that pass, except: when all
// pass the loop leaves n = N - 1, and n == N - 1 (or n == 0) is bumped by one — so when only the
// last rank fails it is committed anyway (the reference's quirk, reproduced). Commits the top n.
std::vector<int32_t> SelectFactor(std::span<const double> conf, double factor);

// dInfer `get_transfer_index_hierarchy_fast_v2` (inclusionAI/dInfer parallel_strategy.py):
// if max conf < low_threshold only the top-1; else, for each run of consecutive canvas positions
// (`positions` [num_candidates], ascending canvas positions of the candidates) its best candidate
// when its conf > low_threshold, plus every candidate with conf > threshold. unmask adds the
// top-1 always (the reference can commit nothing when the maximum equals low_threshold exactly).
std::vector<int32_t> SelectHierarchy(std::span<const double> conf,
                                     std::span<const int32_t> positions, double threshold,
                                     double low_threshold);

// dInfer credit decoding (`CreditThresholdParallelDecoder`): per block, a credit C[position,
// token] that every step first decays by beta (not on the block's first step), then, at each
// masked position, gains p_top1^gamma on its current top-1 token (p_top1 = softmax(logits) of the
// argmax); the step decodes from fused logits = logits + alpha * log(1 + C). Credit is sparse: a
// position only holds the tokens that were ever its top-1.
class CreditTracker {
 public:
  CreditTracker(double alpha, double beta, double gamma)
      : alpha_(alpha), beta_(beta), gamma_(gamma) {}
  // Starts a block of `block_length` positions (all credit dropped).
  void StartBlock(int64_t block_length);
  // Call once per step before Fuse: applies the decay (from the block's second step on).
  void StartStep();
  // Adds this step's credit at block offset `offset` and fuses it into `logits` [vocab] in place.
  // Thread-safe for distinct offsets (rows of one step may run in parallel).
  void Fuse(int64_t offset, std::span<float> logits);
  // Credit held for (offset, token); 0 when none (tests).
  double credit(int64_t offset, int32_t token) const;

 private:
  double alpha_, beta_, gamma_;
  int64_t steps_ = 0;                                            // steps started in this block
  std::vector<std::vector<std::pair<int32_t, double>>> credit_;  // [block offset] -> (token, C)
};

}  // namespace unmask

#endif  // UNMASK_DECODE_COMMIT_RULES_H_
