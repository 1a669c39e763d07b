// Speculative decoding drafters (ALGORITHMS.md; SERVING.md "speculative decoding"): a drafter
// proposes a few tokens that continue the committed sequence; the AR decoder verifies them with one
// target forward (decode/decoder_ar.h). Implementations:
//   LookupDrafter    prompt-lookup / n-gram drafting (Saxena 2023, llama.cpp `lookup`): copy what
//                    followed the most recent earlier occurrence of the last n tokens.
//   ModelDrafter     a smaller AR model with its own KV cache, greedy (Leviathan et al. 2023;
//                    Chen et al. 2023; llama.cpp `speculative`).
//   DiffusionDrafter a masked-diffusion model sharing the target's tokenizer: the context plus k
//                    mask tokens, one (or a few) bidirectional forwards, the k tokens at once.
//   MedusaDrafter    Medusa heads (model/medusa_heads.h) on the target's own final hidden state:
//                    no draft-model forward at all.
//   EagleDrafter     an EAGLE draft layer (model/eagle_head.h) over the target's features, with
//                    EAGLE-2's dynamic draft tree (verified as a tree: decode/decoder_ar.h).
#ifndef UNMASK_DECODE_DRAFTER_H_
#define UNMASK_DECODE_DRAFTER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/eagle_head.h"
#include "model/medusa_heads.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace unmask {

// Longest draft (chain or tree): a verification then feeds at most 16 tokens, which the batch-1
// kernels compute row by row exactly as one-token forwards (ops/linear_cpu.cc, attention_cpu.cc),
// so greedy speculative decoding stays token-identical to plain decoding.
inline constexpr int32_t kMaxDraft = 15;

// Tokens proposed after the context, and the distribution each was drawn from (q in the
// accept/reject rule). Greedy drafters give point masses.
//
// A tree (Medusa's and EAGLE-2's candidate trees; SpecInfer) instead of a chain: parents[i] is the
// index of draft i's parent among the drafts (< i), or -1 for a child of the last committed
// token. Siblings are tried in index order (most likely first). Tree drafts are deterministic
// choices of the drafter (point masses): the verifier accepts a child with the target's
// probability of it, renormalised over the siblings not yet rejected (EAGLE's multi-round rule),
// which preserves the target distribution. Empty parents: a chain (parents[i] = i - 1).
struct DraftProposal {
  std::vector<int32_t> tokens;
  std::vector<TokenDistribution> q;  // [tokens.size()]
  std::vector<int32_t> parents;      // [tokens.size()] or empty (a chain)
};

// Errors: InvalidArgument unless parents is empty or a tree over the drafts (parents[i] in
// [-1, i)).
Status ValidateDraftTree(const DraftProposal& d);

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

  // Drafters that read the target model's features (Medusa, EAGLE): after each verification the
  // decoder passes the target's final hidden states (after its output norm) and
  // `context_length`, the number of committed tokens. h is [rows, feature_size()] row-major; row i
  // is the state at position context_length - rows - 1 + i, whose logits gave the token at
  // position context_length - rows + i: one row per token the step committed, or, after a prefill
  // that asked for them (wants_prompt_features), one row per prompt position. Such a drafter
  // proposes only for that context. `h` is valid during the call only.
  virtual bool uses_target_features() const { return false; }
  virtual int64_t feature_size() const { return 0; }
  // The prefill should give every prompt position's state (EAGLE's draft layer reads them all),
  // not only the last one.
  virtual bool wants_prompt_features() const { return false; }
  virtual void ObserveFeatures(std::span<const float> h, int64_t rows, int64_t context_length) {
    (void)h;
    (void)rows;
    (void)context_length;
  }

 protected:
  // The drafter's own work behind Propose (`out` arrives empty).
  virtual Status DoPropose(std::span<const int32_t> context, int64_t max_tokens,
                           DraftProposal* out) = 0;
  // Adds one draft-model forward to stats().
  void CountForward(const ForwardStats& fs);
  // Adds work done without a model forward (draft heads) to stats().
  void CountFlops(double flops) { stats_.flops += flops; }
  // Adds one pass of a draft layer over `positions` rows (EAGLE) to stats().
  void CountPass(int64_t positions, double flops) {
    ++stats_.forwards;
    stats_.positions += positions;
    stats_.flops += flops;
  }

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

struct MedusaDrafterParams {
  // Cut the draft at the first head whose top probability is below this; 0: every head.
  double p_min = 0.0;
};
// Drafts with `heads` (not owned; outlive the drafter), one greedy token per head. The heads must
// belong to the target model (MedusaHeads::Load checks the sizes).
// Errors: InvalidArgument for null heads or p_min outside [0, 1].
StatusOr<std::unique_ptr<Drafter>> MakeMedusaDrafter(const MedusaHeads* heads,
                                                     const MedusaDrafterParams& params);

struct EagleDrafterParams {
  // EAGLE-2's dynamic tree: `depth` levels, the `top_k` best nodes of a level expanded into
  // `top_k` children each, and the `total_tokens` nodes of highest path probability verified.
  // SGLang's defaults on a GPU are 5 / 4 / 8 (speculative_num_steps, eagle_topk,
  // num_draft_tokens); a CPU pays for every verified node, so fewer pay off here.
  int32_t depth = 4;
  int32_t top_k = 2;
  int32_t total_tokens = 6;
  // A node whose own draft probability (its token's, given its parent) is below p_min is not
  // drafted, nor its subtree: --draft-p-min, the chain drafters' cut applied to every branch
  // (with top_k 1 the same cut as theirs). 0: off.
  double p_min = 0.0;
};
// Drafts with the EAGLE draft layer `head` (model/eagle_head.h) over the features of `base` (the
// target; its token embeddings feed the layer). Neither is owned; both outlive the drafter.
// Errors: InvalidArgument for null arguments, a layer of another hidden size, depth or top_k
// outside [1, 16], total_tokens outside [1, kMaxDraft] or p_min outside [0, 1].
StatusOr<std::unique_ptr<Drafter>> MakeEagleDrafter(const EagleHead* head, const Model* base,
                                                    const EagleDrafterParams& params);

}  // namespace unmask

#endif  // UNMASK_DECODE_DRAFTER_H_
