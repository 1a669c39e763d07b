// SDAR's block-diffusion decoding (JetAstra/SDAR generate.py `block_diffusion_generate`;
// ALGORITHMS.md §5.1-5.2), exact for one request, on a block-causal model with a KV cache (the
// attention blocks follow params.block_length, as the reference's mask does):
//   canvas = prompt + masks up to num_blocks * B positions (num_blocks = ceil((Lp + G) / B));
//   prefill: one forward of the floor(Lp / B) * B prompt positions that fill whole blocks, writing
//     their K/V (no logits);
//   each later block (the first one holds the prompt's tail): while it has masks, one forward of
//     its B positions against the cache (denoising step s, quota n_s = BlockTransferSchedule(B,
//     denoising_steps)[s]), sample every position's x0 and confidence, choose positions by the
//     remasking strategy and write x0 there; once it has none, one forward of the clean block
//     writes its K/V (SDAR's store_kv=True pass); then, when the generated part holds a stop id,
//     generation ends.
// That is the reference's schedule (BlockParams::separate_store = true). The default fused
// schedule runs the same steps with the same logits but no prefill or store forwards: a block's
// first denoising forward also feeds, in front of the block, the clean positions whose K/V the
// cache lacks (the prompt's whole blocks, or the block just finished), pos0 at the first of them.
// Under the block-causal mask those positions see exactly what the prefill or store forward would
// show them, and the block sees their clean K/V as it would from the cache, so only the forward
// count changes (by the prefill and one per finished block; the last block's store is not needed
// at all). Stopping is checked when a block's last mask is filled.
// Sampling per position (SDAR sample_with_temperature_topk_topp, in float64): l = logits / T
//   (T > 0; T = 0: the logits as they are), top-k (entries below the k-th largest -> -inf; ties
//   at the k-th kept), top-p (sorted descending, ties lower id first; an entry is removed when the
//   cumulative probability before it exceeds top_p; the first is always kept), probs = softmax(l).
//   T > 0: token drawn by inverse CDF in id order with u = rng.Uniform(kSampling, s, position,
//   0) (s: denoising forwards before this one, the same under both schedules); T = 0 (the reference
//   divides by zero; MODELS.md §4): token = argmax l (lowest id on ties). Confidence =
//   probs[token]; at T = 0 without top-k/top-p (and not for entropy_bounded) it is
//   1 / sum_v exp(l_v - max) with f32 terms summed in f64 (ops/softmax.h SumExpShifted, ~1e-7
//   relative), without a float64 copy of the row. Entropy (entropy_bounded) = -sum_v max(p_v,
//   1e-12) log max(p_v, 1e-12) (the reference's clamp_min(1e-12)).
// Strategies (confidences of unmasked positions are -inf; TIE RULE: equal values -> lower position
// first, -inf included):
//   sequential: the n_s positions from the first masked one (within the block);
//   low_confidence_static: the n_s most confident;
//   low_confidence_dynamic: all with confidence > threshold if at least n_s are, else the n_s most
//     confident;
//   entropy_bounded: the entropies of the masked positions' distributions, ascending; k = number of
//   prefix sums <
//     eb_threshold, clamped to [1, #masked]; the first k. DELIBERATE DEVIATION: the reference's
//     branch reuses an uninitialised transfer_index and takes the "entropy" of the sampled token's
//     probability alone (MODELS.md §4); this is the rule it evidently means.
// REPRODUCED EDGE CASE: when n_s exceeds the masked positions left (a prompt-sharing first block,
// or after a dynamic step committed more than its quota), the top-n_s picks unmasked positions
// too (lower positions first among them), which are overwritten with their sampled x0 - prompt
// tokens included, as in the reference. Those steps ask for logits of every block position; other
// steps only of the masked ones.
// A block keeps denoising until it has no masks (every strategy commits at least one masked
// position per step while n_s >= 1); denoising_steps <= block_length is required, so the
// reference's steps + 1 iterations always suffice for the first three strategies.
#ifndef UNMASK_DECODE_DECODER_BLOCK_DIFFUSION_H_
#define UNMASK_DECODE_DECODER_BLOCK_DIFFUSION_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"
#include "decode/block_params.h"
#include "decode/decoder.h"
#include "model/model.h"

namespace unmask {

class BlockDiffusionDecoder final : public Decoder {
 public:
  // Errors: those of ValidateBlockParams; InvalidArgument for a mask id outside [0, vocab_size) or
  // a prompt id outside the vocabulary.
  static StatusOr<BlockDiffusionDecoder> Create(const BlockParams& params, int32_t mask_id,
                                                std::span<const int32_t> prompt,
                                                int64_t context_length, int64_t vocab_size,
                                                int32_t kv_seq = 0);

  DecoderKind kind() const override { return DecoderKind::kBlockDiffusion; }
  bool Done() const override { return finish_ != DecodeFinish::kNone; }
  DecodeFinish finish() const override { return finish_; }
  void Stop() override {
    if (finish_ == DecodeFinish::kNone) finish_ = DecodeFinish::kStopped;
  }
  bool needs_kv_cache() const override { return true; }
  int32_t kv_seq() const override { return kv_seq_; }
  void set_kv_seq(int32_t seq) override { kv_seq_ = seq; }
  // The forward this step needs (see the file comment); valid until the next Update.
  // Errors: FailedPrecondition after Done().
  StatusOr<const BatchPlan*> Plan() override;
  // Consumes logits [Plan()->num_logit_rows(), vocab]. `step` gets block, step (forwards so far),
  // committed_positions (absolute canvas positions written, in the strategy's order).
  // Errors: InvalidArgument for logits of the wrong shape; FailedPrecondition without a Plan()
  // for this step or after Done().
  Status Update(const TensorView& logits, DecodeStep* step) override;

  const BlockParams& params() const { return params_; }
  int32_t mask_id() const override { return mask_id_; }
  int64_t prompt_length() const override { return prompt_length_; }
  std::span<const int32_t> canvas() const { return canvas_; }
  // [num_blocks * B - prompt_length]: everything after the prompt, mask id where still masked.
  std::span<const int32_t> generated() const override;
  // Commit-time log-probabilities (Decoder::EnableLogprobs): of the row each token was committed
  // from, the model's logits (before temperature, top-k and top-p); an edited position keeps its
  // last commit's.
  Status EnableLogprobs(int32_t k) override;
  std::span<const TokenLogprob> logprobs() const override { return commit_lp_.entries(); }
  // The streaming view: the generated positions of finished blocks only (a block's tokens can
  // still change until it is finished: the over-commit rewrite), up to the first mask.
  std::span<const int32_t> committed() const override;
  int64_t nfe() const override { return nfe_; }
  // Positions the next Plan() feeds: the prefill's whole blocks, the block, or (fused) the block
  // with the clean positions in front of it; the scheduler budgets admissions with it.
  int64_t step_positions() const override {
    if (phase_ == Phase::kPrefill) return BlockStart();
    return BlockStart() + params_.block_length - (params_.separate_store ? BlockStart() : cached_);
  }
  int64_t current_block() const { return block_; }

 private:
  enum class Phase { kPrefill, kDenoise, kStore };
  BlockDiffusionDecoder() = default;
  int64_t BlockStart() const { return block_ * params_.block_length; }
  int64_t MaskedInBlock() const;
  void Advance();  // after a store forward: next block or done
  Status UpdateJoint(int32_t* x, const std::vector<int32_t>& x0, const std::vector<double>& conf,
                     DecodeStep& out);
  void FinishJointBlock();
  int64_t post_edit_steps_ = 0;    // joint_threshold: editing steps after the block's last mask
  std::vector<double> edit_conf_;  // joint_threshold: confidences of the decoded slots

  BlockParams params_;
  std::vector<int64_t> schedule_;
  int32_t mask_id_ = 0;
  int64_t vocab_size_ = 0;
  int64_t prompt_length_ = 0;
  int64_t num_blocks_ = 0;
  std::vector<int32_t> canvas_;
  CommitLogprobs commit_lp_;
  // This Update's logits and the row of each block offset (-1: none), for commit_lp_.
  const float* step_logits_ = nullptr;
  std::vector<int64_t> row_of_j_;
  // Records block offset j (block start `start`) committed as `token` when logprobs are on.
  void RecordCommit(int64_t start, int32_t j, int32_t token);
  int32_t kv_seq_ = 0;
  CounterRng rng_{0};

  Phase phase_ = Phase::kPrefill;
  int64_t block_ = 0;       // the block being decoded
  int64_t block_step_ = 0;  // denoising steps done in it
  int64_t nfe_ = 0;
  int64_t denoise_forwards_ = 0;  // the forwards that ask for logits (the sampling stream's step)
  DecodeFinish finish_ = DecodeFinish::kNone;
  bool planned_ = false;
  BatchPlan plan_;
  std::vector<int32_t> plan_rows_;   // logit rows of the pending plan (block offsets)
  std::vector<int32_t> logit_rows_;  // the same rows as indices into the fed tokens
  int64_t cached_ = 0;               // canvas positions [0, cached_) have clean K/V in the cache
};

}  // namespace unmask

#endif  // UNMASK_DECODE_DECODER_BLOCK_DIFFUSION_H_
