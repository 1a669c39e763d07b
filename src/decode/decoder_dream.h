// Dream's reference sampler (HF Dream generation_utils.py `_sample`; ALGORITHMS.md §2.2), exact
// for one request (batch = 1):
//   canvas = prompt + gen_length mask tokens; ts = DreamTimesteps(steps, eps); for step i:
//   one full forward; the logits of position p are output row p-1 (row 0 for p = 0) when the
//   model's shift_logits is set (Dream), row p otherwise; every masked position of the canvas
//   (prompt included) is a candidate;
//   origin: position p is selected when u(seed, kDreamOrigin, i, p, 0) < 1 - s/t (float32; 1 at
//     the last step) and gets DreamSampleTokens' token (which may be the mask id: the position
//     then stays masked, as in the reference);
//   other algs: every candidate is sampled (dream_sampling.h); k = DreamNumTransfer(#masked);
//     the k best confidences are committed (TIE RULE: equal confidences -> lower position first);
//     with alg_temp > 0 the k positions are drawn without replacement from
//     softmax(confidence / alg_temp), realized as Gumbel-top-k: the k largest
//     confidence / alg_temp - log(-log u(seed, kDreamAlgTemp, i, p, 0)), same tie rule.
// Differences from the PyTorch reference, on purpose: float64 sampling arithmetic (the reference
// stores bf16 confidences, which tie often); unmask's counter RNG instead of torch's generator
// (scripts/reference/dream_generate.py uses the same streams); batch = 1 (the reference commits
// the batch-average k in every row of a batch, an artefact of batching).
// The decoder owns the canvas; the caller runs Model::Forward on Plan() and passes the logits to
// Update() until Done().
#ifndef UNMASK_DECODE_DECODER_DREAM_H_
#define UNMASK_DECODE_DECODER_DREAM_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"
#include "decode/decoder.h"
#include "decode/dream_params.h"
#include "model/model.h"

namespace unmask {

// What one Update did: DecodeStep's step (0-based), num_transfer (k; origin: positions selected,
// including mask-id commits) and committed_positions (absolute canvas positions written: origin
// in ascending position, the other algs best first).
using DreamStepResult = DecodeStep;

class DreamDecoder final : public Decoder {
 public:
  // mask_id: tokenizer.ggml.mask_token_id; shift_logits: ModelConfig::shift_logits.
  // Errors: those of ValidateDreamParams; InvalidArgument for a mask id outside [0, vocab_size)
  // or a prompt id outside the vocabulary; those of CheckInfillSuffix.
  // suffix: infilling, canvas = prompt + gen_length masks + suffix (fixed context, never decoded;
  // unmask's extension, checked against scripts/reference/dream_generate.py).
  static StatusOr<DreamDecoder> Create(const DreamParams& params, int32_t mask_id,
                                       bool shift_logits, std::span<const int32_t> prompt,
                                       int64_t context_length, int64_t vocab_size,
                                       std::span<const int32_t> suffix = {});

  DecoderKind kind() const override { return DecoderKind::kDream; }
  bool Done() const override { return stopped_ || step_ >= params_.steps; }
  DecodeFinish finish() const override {
    return stopped_ ? DecodeFinish::kStopped
                    : (Done() ? DecodeFinish::kLength : DecodeFinish::kNone);
  }
  void Stop() override { stopped_ = true; }
  bool needs_kv_cache() const override { return false; }  // the reference has no cache
  int32_t kv_seq() const override { return -1; }
  void set_kv_seq(int32_t) override {}
  // The forward this step needs: the whole canvas; logit rows = the rows the masked positions
  // read (p - 1, or p without shift), deduplicated and ascending. Valid until the next Update.
  // Errors: FailedPrecondition after Done().
  StatusOr<const BatchPlan*> Plan() override;
  // Consumes logits [Plan().num_logit_rows(), vocab] and commits tokens.
  // Errors: InvalidArgument when the logits shape does not match the plan; FailedPrecondition
  // after Done() or when Plan() was not called for this step.
  Status Update(const TensorView& logits, DreamStepResult* result) override;

  const DreamParams& params() const { return params_; }
  int32_t mask_id() const override { return mask_id_; }
  int64_t prompt_length() const override { return prompt_length_; }
  // [prompt_length + gen_length + suffix]: prompt, generated tokens (mask id where still masked),
  // suffix.
  std::span<const int32_t> canvas() const { return canvas_; }
  std::span<const int32_t> generated() const override;
  // Commit-time log-probabilities (Decoder::EnableLogprobs): of the row each token was committed
  // from, the model's logits (before Dream's temperature, top-k and top-p).
  Status EnableLogprobs(int32_t k) override;
  std::span<const TokenLogprob> logprobs() const override {
    return commit_lp_.entries();
  }  // [gen_length]
  int64_t step() const { return step_; }
  int64_t nfe() const override { return step_; }  // one forward pass per step
  int64_t step_positions() const override { return static_cast<int64_t>(canvas_.size()); }
  int64_t num_masked() const;

 private:
  DreamDecoder() = default;

  DreamParams params_;
  int32_t mask_id_ = -1;
  bool shift_ = true;
  int64_t prompt_length_ = 0;
  int64_t vocab_size_ = 0;
  CounterRng rng_{0};
  std::vector<float> timesteps_;  // [steps + 1]
  std::vector<int32_t> canvas_;
  CommitLogprobs commit_lp_;
  int64_t step_ = 0;
  std::vector<int32_t> masked_;  // masked positions of this step, ascending
  std::vector<int32_t> rows_;    // logit rows of this step, ascending, unique
  std::vector<int32_t> row_of_;  // [masked_.size()]: index into rows_ of each masked position
  BatchPlan plan_;
  bool planned_ = false;
  bool stopped_ = false;
};

}  // namespace unmask

#endif  // UNMASK_DECODE_DECODER_DREAM_H_
