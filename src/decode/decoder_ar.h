// The autoregressive decoder (ARCHITECTURE.md: ArDecoder = sampler chain x optional speculative
// drafter). One sequence, KV-cached: the first forward feeds the whole prompt (prefill) and asks
// for the last row's logits; each later forward feeds the tokens not yet cached — the last
// committed token, plus the drafter's proposal when speculating — and asks for a row per token.
//
// Verification (Leviathan, Kalman, Matias 2023, "Fast Inference from Transformers via Speculative
// Decoding"; Chen et al. 2023): row i of the target forward gives p_i, the target chain's
// distribution after the committed tokens and drafts d_0..d_{i-1}. Draft d_i with draft
// distribution q_i is accepted when u_i < min(1, p_i(d_i) / q_i(d_i)); at the first rejection a
// token is drawn from norm(max(p_i - q_i, 0)) and the step ends; when every draft is accepted a
// bonus token is drawn from p_k. The committed tokens are distributed exactly as plain sampling
// from p. Greedy target (temperature 0): p_i is a point mass on the argmax, so drafts are accepted
// while they equal the argmax and the output is token-identical to plain greedy decoding.
// Random numbers: u_i = Uniform(kSpecAccept, position), residual draws from kSpecResidual, plain
// draws from kSampling, keyed by the token's absolute position.
//
// Tree verification (SpecInfer, Miao et al. 2024; Medusa; EAGLE-2, Li et al. 2024): a drafter may
// propose a tree (DraftProposal::parents). The whole tree is fed in one target forward under a
// tree attention mask (SequenceInput::tree_parents): each draft sees the context and its own
// ancestors, at the position of its depth. The walk starts at the context: among the children of
// the current node (most likely first), child c is accepted with probability p'(c), p' the
// target's distribution with the children rejected so far removed and renormalised; an accepted
// child's own row gives the next distribution; when no child is accepted a token is drawn from
// p'. This is exact sampling from p for drafts chosen deterministically (EAGLE's rule); greedy
// (p a point mass) accepts the child equal to the argmax, so the output is plain greedy decoding
// token for token. The accepted path's K/V rows are moved into place by the next forward
// (SequenceInput::kv_keep); the rejected branches' rows are dropped. Acceptance draws use
// Uniform(kSpecAccept, position, sibling index).
#ifndef UNMASK_DECODE_DECODER_AR_H_
#define UNMASK_DECODE_DECODER_AR_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"
#include "decode/decoder.h"
#include "decode/drafter.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"

namespace unmask {

struct ArParams {
  int64_t n_predict = 128;  // most tokens to generate; -1: until EOS or the context is full
  SamplingParams sampling;
  bool ignore_eos = false;  // keep going past end-of-generation tokens
  // Most tokens proposed per step when a drafter is set, in [1, kMaxDraft].
  int32_t draft_max = 3;
  // -1: off; k in [0, kMaxTopLogprobs]: record every generated token's log-probability and its k
  // most likely alternatives (Decoder::logprobs()).
  int32_t logprobs = -1;
};

inline constexpr int32_t kMaxTopLogprobs = 20;  // OpenAI's limit

// End-of-generation token ids (from the GGUF; -1 when absent).
struct ArTokenIds {
  int32_t eos = -1;
  int32_t eot = -1;
};

using ArFinish = DecodeFinish;
std::string_view ArFinishName(ArFinish f);  // "", "stop", "length", "length", "stop"

// What one Update committed: DecodeStep's tokens (1 without a drafter), drafted and accepted.
using ArStepResult = DecodeStep;

// Speculative decoding counters.
struct SpeculativeStats {
  int64_t steps = 0;     // target forwards of a speculative run (prefill included)
  int64_t drafted = 0;   // tokens proposed
  int64_t accepted = 0;  // tokens accepted
  double acceptance_rate() const {
    return drafted > 0 ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0;
  }
};

class ArDecoder final : public Decoder {
 public:
  // `drafter` may be null (plain decoding); not owned. The KV cache sequence is `kv_seq`.
  // Errors: ValidateSamplingParams errors; InvalidArgument for an empty prompt, a prompt id
  // outside [0, vocab_size), a prompt that fills the context, n_predict < -1 or draft_max outside
  // [1, kMaxDraft].
  static StatusOr<ArDecoder> Create(const ArParams& params, ArTokenIds ids,
                                    std::span<const int32_t> prompt, int64_t context_length,
                                    int64_t vocab_size, Drafter* drafter = nullptr,
                                    int32_t kv_seq = 0);

  DecoderKind kind() const override { return DecoderKind::kAr; }
  bool Done() const override { return finish_ != ArFinish::kNone; }
  ArFinish finish() const override { return finish_; }
  // The forward this step needs (runs the drafter first when there is one). The plan's spans
  // point into the decoder until the next Update. Errors: the drafter's; FailedPrecondition after
  // Done().
  StatusOr<const BatchPlan*> Plan() override;
  // Consumes logits [Plan()->num_logit_rows(), vocab] and commits tokens (result may be null).
  // Errors: InvalidArgument for logits of the wrong shape; FailedPrecondition without a Plan().
  Status Update(const TensorView& logits, ArStepResult* result) override;
  // Ends generation now (e.g. a stop string was found in the text): finish() = kStopped.
  void Stop() override { finish_ = ArFinish::kStopped; }

  bool needs_kv_cache() const override { return true; }
  int32_t kv_seq() const override { return kv_seq_; }
  // Only before the first Plan(): the cache sequence holds this decoder's prefix.
  void set_kv_seq(int32_t seq) override { kv_seq_ = seq; }
  std::span<const int32_t> tokens() const { return tokens_; }  // prompt + generated
  std::span<const int32_t> generated() const override;
  int64_t prompt_length() const override { return prompt_length_; }
  int64_t nfe() const override { return nfe_; }  // target forwards, prefill included
  int64_t step_positions() const override { return 1; }
  // The drafter reads the target's features (Medusa): Update passes it the row that gave the
  // last committed token (SetFeatures before Update; a step without them drafts nothing next).
  bool wants_features() const override {
    return drafter_ != nullptr && drafter_->uses_target_features();
  }
  void SetFeatures(const TensorView& rows) override { features_ = rows; }
  // Gives the decoder ownership of the drafter it was created with (the factory's lookup
  // drafter); `drafter` must be the one passed to Create.
  void AdoptDrafter(std::unique_ptr<Drafter> drafter) { owned_drafter_ = std::move(drafter); }
  const Drafter* drafter() const { return drafter_; }
  const SpeculativeStats& speculative() const { return spec_; }
  const ArParams& params() const { return params_; }
  std::span<const TokenLogprob> logprobs() const override { return logprobs_; }
  // Grammar-constrained sampling: before the sampling chain (penalties, top-k, top-p, ...) every
  // token `constraint` does not allow gets logit -inf, and each committed token (accepted drafts
  // included) is passed to it; a speculative draft the grammar refuses has p = 0 and is
  // rejected. The generation ends with finish kStopped when the constraint is Complete() or
  // allows nothing. Log-probabilities (logprobs) are the model's, before the mask (as vLLM
  // reports them by default). Only before the first Plan(); null removes it.
  void SetConstraint(std::unique_ptr<TokenConstraint> constraint) {
    constraint_ = std::move(constraint);
  }
  const TokenConstraint* constraint() const { return constraint_.get(); }

 private:
  ArDecoder() = default;
  // Appends `t` (drawn from logits `row`), updates finish_; false when generation has ended.
  bool Commit(int32_t t, std::span<const float> row, ArStepResult* result);
  // The row the sampling chain sees: `row` itself, or a copy with the tokens the constraint
  // refuses at -inf. Empty when the constraint allows nothing.
  std::span<const float> MaskedRow(std::span<const float> row);
  // The accept/reject walks of Update over a chain of drafts (Leviathan et al.) or a tree
  // (draft_.parents; EAGLE's rule), committing the accepted drafts and one more token.
  void VerifyChain(const TensorView& logits, const CounterRng& rng, ArStepResult* result);
  void VerifyTree(const TensorView& logits, const CounterRng& rng, ArStepResult* result);
  // Gives a feature-reading drafter the states of the rows that gave this step's tokens.
  void PassFeatures(int64_t rows, const ArStepResult* result);

  ArParams params_;
  ArTokenIds ids_;
  Sampler sampler_{SamplingParams{}};
  std::vector<TokenLogprob> logprobs_;
  Drafter* drafter_ = nullptr;
  std::unique_ptr<Drafter> owned_drafter_;
  int32_t kv_seq_ = 0;
  int64_t prompt_length_ = 0;
  int64_t context_length_ = 0;
  int64_t vocab_size_ = 0;
  std::vector<int32_t> tokens_;
  int64_t cached_ = 0;  // positions whose K/V the cache holds for this sequence
  ArFinish finish_ = ArFinish::kNone;
  int64_t nfe_ = 0;
  SpeculativeStats spec_;
  // This step's plan.
  bool planned_ = false;
  DraftProposal draft_;
  std::vector<int32_t> feed_;
  std::vector<int32_t> rows_;
  BatchPlan plan_;
  std::vector<int32_t> history_;  // scratch: tokens + accepted drafts for the penalties
  std::unique_ptr<TokenConstraint> constraint_;
  std::vector<float> masked_;  // scratch: the constrained row
  TensorView features_;        // this step's target features (SetFeatures); data null when none
  bool all_features_ = false;  // this step's plan asked for every fed position's state
  std::vector<int32_t> tree_parents_;  // this step's tree over feed_ (empty: a chain)
  std::vector<int32_t> path_;          // drafts accepted by the last tree verification
  std::vector<int32_t> kv_keep_;       // their cache rows, moved into place by the next forward
  std::vector<int32_t> feature_rows_;  // logit rows that gave the last step's tokens, in order
  std::vector<float> gathered_;        // scratch: those rows' features
};

}  // namespace unmask

#endif  // UNMASK_DECODE_DECODER_AR_H_
