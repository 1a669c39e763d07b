// Masked-diffusion decoding of LLaDA-style models: the exact LLaDA reference and the published
// accelerations on top of it.
//
// Reference (cache none, commit fixed; ML-GSAI/LLaDA generate.py; ALGORITHMS.md §1.2-1.7), exact:
//   canvas = prompt + gen_length mask tokens, split into blocks of block_length;
//   per block, steps_per_block steps with NumTransferTokens(block masks, steps_per_block);
//   per step one forward (two canvases when cfg_scale > 0: conditional and unconditional, where
//   the unconditional copy has every prompt position replaced by the mask token; batched in one
//   Forward and counted as one NFE), then for every masked position p < block end:
//     logits = un + (cfg_scale + 1) * (cond - un)           (cfg_scale > 0)
//     logits[eos] = -inf                                      (logits_eos_inf)
//     x0 = argmax (T == 0) or Gumbel-max at temperature T (float64, counter RNG keyed by
//          (seed, global step, position, vocab id))
//     confidence = softmax(logits)[x0] (low_confidence) or uniform(seed, step, position) (random);
//       confidence_eos_eot_inf reproduces the reference's aliasing quirk (§1.6): at T == 0 the EOS
//       and EOT logits are -inf in that softmax, at T > 0 only the EOT logit is.
//   and the n[step] positions with the highest confidence are committed. TIE RULE: equal
//   confidences commit the lower position first. Masked positions before the current block (only
//   possible when the prompt itself contains mask tokens) compete as in the reference.
//
// Accelerations (DiffusionParams):
// - commit rule other than fixed (decode/commit_rules.h): a block runs until it has no mask left,
//   each step committing what the rule selects (at least the top-1); the mask id is never chosen
//   as a token (dInfer's rm_mask), so every step fills at least one position.
// - cache (Fast-dLLM prefix/dual cache, dInfer vicinity refresh; ALGORITHMS.md §3.1, §4.3): the
//   first step of every block is a full forward that writes the K/V of every position into the
//   KV cache (sequence kv_seq()); later steps of the block feed
//     prefix:   positions [s, L)  (the cache keeps [0, s); rows from s on are recomputed),
//     dual:     positions [s, e)  (rewritten in place; the suffix keeps its stale K/V),
//     vicinity: positions [s - prefix_look, e + after_look) clipped to [0, L), in place,
//   with s, e the block and L the canvas end, and only the block's masked positions are decoded.
//   Models with shifted logits (Dream: position p is predicted by output row p - 1) also feed
//   position s - 1, whose output predicts s.
// - early_stop (dInfer): when a finished block contains EOS or EOT, every later position of the
//   generated span becomes EOS and generation ends.
// Infilling (a suffix; unmask's extension, checked against scripts/reference/generate.py): the
// canvas is prompt + gen_length masks + suffix. The suffix is fixed context like the prompt: every
// forward sees it (bidirectional attention), it is never decoded, and with cfg_scale > 0 it is
// masked in the unconditional canvas together with the prompt.
// The decoder owns the canvas; the caller runs Model::Forward on Plan() (with a KV cache when
// needs_kv_cache()) and passes the logits to Update() until Done().
#ifndef UNMASK_DECODE_DECODER_DIFFUSION_H_
#define UNMASK_DECODE_DECODER_DIFFUSION_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"
#include "decode/commit_rules.h"
#include "decode/decoder.h"
#include "decode/diffusion_params.h"
#include "model/model.h"

namespace unmask {

// Token ids the decoder needs, from the GGUF (never constants). eos/eot may be -1 (absent).
struct DiffusionTokenIds {
  int32_t mask = -1;
  int32_t eos = -1;
  int32_t eot = -1;
  int32_t pad = -1;  // Fast-dLLM v2 writes it after the stop token
};

// What one Update did: DecodeStep's step (global, 0-based), block, committed_positions (absolute
// canvas positions, in commit order) and early_stopped.
using DiffusionStepResult = DecodeStep;

class DiffusionDecoder final : public Decoder {
 public:
  // Errors: those of ValidateDiffusionParams; InvalidArgument for a prompt or suffix id outside
  // [0, vocab_size), a missing mask token, the mask token in the suffix, or logits_eos_inf without
  // an EOS token; OutOfRange when prompt + gen_length + suffix exceeds the context length.
  // shift_logits: the model's ModelConfig::shift_logits (Dream). suffix: infilling (see above).
  static StatusOr<DiffusionDecoder> Create(const DiffusionParams& params, DiffusionTokenIds ids,
                                           std::span<const int32_t> prompt, int64_t context_length,
                                           int64_t vocab_size, bool shift_logits = false,
                                           std::span<const int32_t> suffix = {});

  DecoderKind kind() const override { return DecoderKind::kDiffusion; }
  bool Done() const override { return done_; }
  // kEos after an early stop, kLength once the canvas is full, kStopped after Stop().
  DecodeFinish finish() const override { return finish_; }
  void Stop() override;
  // True when Plan() uses a KV cache (params().cache != none): the caller passes one with at
  // least kv_seq() + 1 sequences to every Forward of this decoder.
  bool needs_kv_cache() const override { return params_.cache != CacheMode::kNone; }
  // The KV cache sequence this decoder's plans use (default 0; batched decoding gives each
  // decoder its own).
  int32_t kv_seq() const override { return kv_seq_; }
  void set_kv_seq(int32_t seq) override { kv_seq_ = seq; }
  // The forward this step needs. Its spans point into the decoder and stay valid until the next
  // Update. Logit rows: cache none: every masked position before the current block's end
  // (conditional canvas first, then the unconditional one when cfg_scale > 0); cached modes: the
  // current block's masked positions. Shifted-logit models get row p - 1 for position p.
  // Errors: FailedPrecondition after Done().
  StatusOr<const BatchPlan*> Plan() override;
  // True when the planned forward is a full forward (every step without a cache; the first step of
  // each block with one).
  bool planned_full_forward() const { return full_forward_; }
  // Consumes logits [Plan().num_logit_rows(), vocab] and commits tokens.
  // Errors: InvalidArgument when the logits shape does not match the plan; FailedPrecondition
  // after Done() or when Plan() was not called for this step.
  Status Update(const TensorView& logits, DiffusionStepResult* result) override;

  const DiffusionParams& params() const { return params_; }
  const DiffusionTokenIds& token_ids() const { return ids_; }
  int32_t mask_id() const override { return ids_.mask; }
  int64_t prompt_length() const override { return prompt_length_; }
  // [prompt_length + gen_length + suffix length]: prompt, then generated tokens (mask id where
  // still masked), then the suffix.
  std::span<const int32_t> canvas() const { return canvas_; }
  // The generated part of the canvas: [gen_length] (between prompt and suffix).
  std::span<const int32_t> generated() const override;
  // Commit-time log-probabilities (Decoder::EnableLogprobs): of the row each token was committed
  // from, after classifier-free guidance and the -inf of logits_eos_inf / the mask id, before the
  // Gumbel temperature.
  Status EnableLogprobs(int32_t k) override;
  std::span<const TokenLogprob> logprobs() const override { return commit_lp_.entries(); }
  int64_t step() const { return step_; }
  int64_t nfe() const override { return step_; }  // one forward pass (batched with CFG) per step
  int64_t step_positions() const override { return static_cast<int64_t>(canvas_.size()); }
  int64_t current_block() const { return block_; }
  int64_t num_masked() const;

 private:
  DiffusionDecoder() = default;
  // Canvas range [begin, end) of block b.
  int64_t BlockBegin(int64_t b) const { return prompt_length_ + b * params_.block_length; }
  int64_t BlockMasks(int64_t b) const;
  void StartBlock();  // schedule / credit of block_
  // After a step: moves to the next block when this one is finished; applies early stop.
  void Advance(DiffusionStepResult* result);

  DiffusionParams params_;
  DiffusionTokenIds ids_;
  int64_t prompt_length_ = 0;
  int64_t vocab_size_ = 0;
  bool shift_ = false;
  CounterRng rng_{0};
  std::vector<int32_t> canvas_;
  CommitLogprobs commit_lp_;
  std::vector<int32_t> uncond_;    // CFG: canvas with prompt positions masked
  std::vector<int64_t> schedule_;  // transfer counts of the current block (fixed rule)
  std::optional<CreditTracker> credit_;
  int64_t step_ = 0;   // global step (forwards so far)
  int64_t block_ = 0;  // current block
  int64_t step_in_block_ = 0;
  bool done_ = false;
  DecodeFinish finish_ = DecodeFinish::kNone;
  int32_t kv_seq_ = 0;
  std::vector<int32_t> rows_;        // canvas positions decoded this step (ascending)
  std::vector<int32_t> logit_rows_;  // rows of the fed tokens giving logits (ascending, unique)
  std::vector<int32_t> row_slot_;    // [rows_.size()]: index into logit_rows_ of each position
  BatchPlan plan_;
  bool planned_ = false;         // Plan() was called for the current step
  bool full_forward_ = true;     // the planned forward feeds the whole canvas
  std::vector<float> combined_;  // [rows, vocab] CFG-combined, EOS-masked (credit-fused) logits
};

}  // namespace unmask

#endif  // UNMASK_DECODE_DECODER_DIFFUSION_H_
