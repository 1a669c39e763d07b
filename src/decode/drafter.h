// Speculative decoding drafters (ALGORITHMS.md; SERVING.md "speculative decoding"): a drafter
// proposes a few tokens that continue the committed sequence; the AR decoder verifies them with one
// target forward (decode/decoder_ar.h). Implementations:
//   LookupDrafter    prompt-lookup / n-gram drafting (Saxena 2023, llama.cpp `lookup`): copy what
//                    followed the most recent earlier occurrence of the last n tokens.
//   ModelDrafter     a smaller AR model with its own KV cache, greedy (Leviathan et al. 2023;
//                    Chen et al. 2023; llama.cpp `speculative`).
//   DiffusionDrafter a masked-diffusion model sharing the target's tokenizer: the context plus k
//                    mask tokens, one (or a few) bidirectional forwards, the k tokens at once.
#ifndef UNMASK_DECODE_DRAFTER_H_
#define UNMASK_DECODE_DRAFTER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace unmask {

// Tokens proposed after the context, and the distribution each was drawn from (q in the
// accept/reject rule). Greedy drafters give point masses.
struct DraftProposal {
  std::vector<int32_t> tokens;
  std::vector<TokenDistribution> q;  // [tokens.size()]
};

// Work done by a drafter, summed over its Propose calls. Times in ms.
struct DrafterStats {
  int64_t calls = 0;
  int64_t forwards = 0;   // forward passes of the draft model (0 for lookup)
  int64_t positions = 0;  // positions fed to the draft model
  double ms = 0;          // time inside Propose
  double flops = 0;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string_view name() const = 0;
  // Proposes at most `max_tokens` (>= 1) tokens continuing `context` (every committed token,
  // prompt included); may propose none. Counts the call and its time in stats().
  // Errors: those of the draft model's forward.
  Status Propose(std::span<const int32_t> context, int64_t max_tokens, DraftProposal* out);
  const DrafterStats& stats() const { return stats_; }

 protected:
  // The drafter's own work behind Propose (`out` arrives empty).
  virtual Status DoPropose(std::span<const int32_t> context, int64_t max_tokens,
                           DraftProposal* out) = 0;
  // Adds one draft-model forward to stats().
  void CountForward(const ForwardStats& fs);

 private:
  DrafterStats stats_;
};

struct LookupDrafterParams {
  int32_t ngram_min = 1;  // shortest suffix matched
  int32_t ngram_max = 4;  // longest suffix matched (tried first)
};
// Errors: InvalidArgument unless 1 <= ngram_min <= ngram_max.
StatusOr<std::unique_ptr<Drafter>> MakeLookupDrafter(const LookupDrafterParams& params);

struct ModelDrafterParams {
  // Stop drafting when the draft model's top probability falls below this (llama.cpp
  // --draft-p-min); 0 drafts max_tokens every time.
  double p_min = 0.0;
};
// `model` (causal, not owned, must outlive the drafter) drafts greedily.
// Errors: InvalidArgument for a bidirectional model or p_min outside [0, 1].
StatusOr<std::unique_ptr<Drafter>> MakeModelDrafter(const Model* model,
                                                    const ModelDrafterParams& params);

struct DiffusionDrafterParams {
  int32_t mask_token = -1;  // the diffusion model's mask id (from its GGUF)
  // Denoising steps per proposal: 1 = every token of the block from one forward; s > 1 commits
  // the block over s forwards, most confident positions first (LLaDA low-confidence remasking).
  int32_t steps = 1;
  // Proposal cut at the first token (left to right) whose probability is below p_min; 0: never.
  double p_min = 0.0;
};
// `model` (bidirectional, not owned) fills a block of masks after the context, greedily. The
// context is cut to its last context_length - max_tokens tokens when longer.
// Errors: InvalidArgument for a causal model, a mask id outside the vocabulary, steps < 1 or
// p_min outside [0, 1].
StatusOr<std::unique_ptr<Drafter>> MakeDiffusionDrafter(const Model* model,
                                                        const DiffusionDrafterParams& params);

}  // namespace unmask

#endif  // UNMASK_DECODE_DRAFTER_H_
