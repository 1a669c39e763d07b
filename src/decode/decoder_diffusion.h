// The LLaDA reference decoder (ML-GSAI/LLaDA generate.py; ALGORITHMS.md §1.2-1.7), exact:
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
// The decoder owns the canvas; the caller runs Model::Forward on Plan() and passes the logits to
// Update() until Done().
#ifndef UNMASK_DECODE_DECODER_DIFFUSION_H_
#define UNMASK_DECODE_DECODER_DIFFUSION_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"
#include "decode/diffusion_params.h"
#include "model/model.h"

namespace unmask {

// Token ids the decoder needs, from the GGUF (never constants). eos/eot may be -1 (absent).
struct DiffusionTokenIds {
  int32_t mask = -1;
  int32_t eos = -1;
  int32_t eot = -1;
};

// What one Update did.
struct DiffusionStepResult {
  int64_t step = 0;                          // global step index (0-based)
  int64_t block = 0;                         // block index
  std::vector<int32_t> committed_positions;  // absolute canvas positions, in commit order
};

class DiffusionDecoder {
 public:
  // Errors: those of ValidateDiffusionParams; InvalidArgument for a prompt id outside
  // [0, vocab_size), a missing mask token, or logits_eos_inf without an EOS token.
  static StatusOr<DiffusionDecoder> Create(const DiffusionParams& params, DiffusionTokenIds ids,
                                           std::span<const int32_t> prompt, int64_t context_length,
                                           int64_t vocab_size);

  bool Done() const { return step_ >= params_.steps; }
  // The forward this step needs. Its spans point into the decoder and stay valid until the next
  // Update. Logit rows: every masked position before the current block's end (conditional
  // canvas first, then the unconditional one when cfg_scale > 0).
  const BatchPlan& Plan();
  // Consumes logits [Plan().num_logit_rows(), vocab] and commits tokens.
  // Errors: InvalidArgument when the logits shape does not match the plan; FailedPrecondition
  // after Done() or when Plan() was not called for this step.
  Status Update(const TensorView& logits, DiffusionStepResult* result);

  const DiffusionParams& params() const { return params_; }
  const DiffusionTokenIds& token_ids() const { return ids_; }
  int64_t prompt_length() const { return prompt_length_; }
  // [prompt_length + gen_length]: prompt, then generated tokens (mask id where still masked).
  std::span<const int32_t> canvas() const { return canvas_; }
  // The generated part of the canvas: [gen_length].
  std::span<const int32_t> generated() const;
  int64_t step() const { return step_; }
  int64_t nfe() const { return step_; }  // one forward pass (batched with CFG) per step
  int64_t current_block() const;
  int64_t num_masked() const;

 private:
  DiffusionDecoder() = default;

  DiffusionParams params_;
  DiffusionTokenIds ids_;
  int64_t prompt_length_ = 0;
  int64_t vocab_size_ = 0;
  CounterRng rng_{0};
  std::vector<int32_t> canvas_;
  std::vector<int32_t> uncond_;    // CFG: canvas with prompt positions masked
  std::vector<int64_t> schedule_;  // transfer counts of the current block
  int64_t step_ = 0;               // global step
  std::vector<int32_t> rows_;      // logit rows of this step (masked positions < end)
  BatchPlan plan_;
  bool planned_ = false;         // Plan() was called for the current step
  std::vector<float> combined_;  // [rows, vocab] CFG-combined, EOS-masked logits
};

}  // namespace unmask

#endif  // UNMASK_DECODE_DECODER_DIFFUSION_H_
