// The decoder interface (ARCHITECTURE.md "Main interfaces"): a decoder owns one request's token
// state and decides, step by step, which positions a forward pass feeds and what the logits
// commit. It never runs the model: the engine's step (engine/step.h) batches the plans of many
// decoders into one Model::Forward, routes each its logit rows and calls Update.
//
//   while (!d.Done()) { plan = d.Plan(); Forward(plan) -> logits; d.Update(logits, &step); }
//
// Implemented by ArDecoder (decode/decoder_ar.h: sampling chain, optional speculative drafter),
// DiffusionDecoder (decoder_diffusion.h: LLaDA block decoding, every cache mode and commit rule)
// DreamDecoder (decoder_dream.h: Dream's reference sampler) and BlockDiffusionDecoder
// (decoder_block_diffusion.h: SDAR's block-diffusion decoding on block-causal models) and
// FastDllmV2Decoder (decoder_fast_dllm_v2.h: Fast-dLLM v2's sub-block decoding).
// decode/decoder_factory.h builds the right one from a model and a request; it is the only place
// request parameters are settled.
#ifndef UNMASK_DECODE_DECODER_H_
#define UNMASK_DECODE_DECODER_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "model/model.h"

namespace unmask {

enum class DecoderKind { kAr, kDiffusion, kDream, kBlockDiffusion, kFastDllmV2 };
// "ar" | "diffusion" | "dream" | "block_diffusion" | "fast_dllm_v2"
std::string_view DecoderKindName(DecoderKind k);

// Why a decoder ended.
enum class DecodeFinish {
  kNone,     // still running
  kEos,      // an end-of-generation token (AR), or a finished block holding EOS (early stop)
  kLength,   // the token budget or the canvas is used up
  kContext,  // the context is full (AR)
  kStopped,  // Stop() was called (a stop string, or the text is complete)
};

// What one Update did. Each decoder fills the fields that apply to it and leaves the others at
// their defaults (Update resets the struct first).
struct DecodeStep {
  int64_t step = 0;                          // 0-based index of this step (= forwards before it)
  int64_t block = 0;                         // diffusion: block index (0 for AR and Dream)
  std::vector<int32_t> tokens;               // AR: tokens committed, in order
  std::vector<int32_t> committed_positions;  // diffusion, Dream: absolute canvas positions written
                                             // (block decoder: commit order; Dream: see its header)
  int64_t num_transfer = 0;                  // Dream: k, positions selected this step
  int64_t drafted = 0;                       // AR speculative: tokens proposed for this step
  int64_t accepted = 0;                      // of which accepted
  bool early_stopped = false;                // diffusion: this step ended generation (early stop)

  void Reset() {
    step = block = num_transfer = drafted = accepted = 0;
    tokens.clear();
    committed_positions.clear();
    early_stopped = false;
  }
};

// The log-probability of one generated token under the model, and its most likely alternatives
// (OpenAI's logprobs / top_logprobs). AR: log_softmax of the raw logits of the row the token was
// drawn from (before penalties, filters and temperature: vLLM's default), in nats.
// Diffusion decoders: the same, of the row the token was committed from, at the step it was
// committed (a position re-committed by an edit keeps its last one).
struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // the k most likely tokens, most likely first
};

// log_softmax(row)[token] (in double, stored as float) and the k most likely ids of `row` (ties
// to the lower id). `row` is [vocab] logits; k is clamped to the row's length.
TokenLogprob LogprobOf(std::span<const float> row, int32_t token, int32_t k);

// Per generated position of a diffusion canvas: its TokenLogprob once committed (token -1
// before). Off until Enable.
class CommitLogprobs {
 public:
  void Enable(int32_t k, int64_t gen_length) {
    k_ = k;
    entries_.assign(static_cast<size_t>(std::max<int64_t>(gen_length, 0)), TokenLogprob{});
  }
  bool enabled() const { return k_ >= 0; }
  // Records generated position `index` (outside [0, gen_length): ignored) committed as `token`
  // from `row`.
  void Record(int64_t index, std::span<const float> row, int32_t token) {
    if (k_ < 0 || index < 0 || index >= static_cast<int64_t>(entries_.size())) return;
    entries_[static_cast<size_t>(index)] = LogprobOf(row, token, k_);
  }
  std::span<const TokenLogprob> entries() const { return entries_; }

 private:
  int32_t k_ = -1;
  std::vector<TokenLogprob> entries_;
};

class Decoder {
 public:
  virtual ~Decoder() = default;

  virtual DecoderKind kind() const = 0;
  virtual bool Done() const = 0;
  virtual DecodeFinish finish() const = 0;
  // The forward this step needs. The plan's spans point into the decoder and stay valid until the
  // next Update. Errors: FailedPrecondition after Done(); a drafter's errors (AR).
  virtual StatusOr<const BatchPlan*> Plan() = 0;
  // Consumes logits [Plan()->num_logit_rows(), vocab] f32 and commits tokens; `step` may be null.
  // Errors: InvalidArgument for logits of the wrong shape; FailedPrecondition without a Plan() for
  // this step or after Done().
  virtual Status Update(const TensorView& logits, DecodeStep* step) = 0;
  // Ends generation now (a stop string was found, or the text is complete): Done() becomes true
  // and finish() kStopped.
  virtual void Stop() = 0;

  // KV cache: when true the caller passes a cache with at least kv_seq() + 1 sequences to every
  // Forward of this decoder's plans.
  virtual bool needs_kv_cache() const = 0;
  virtual int32_t kv_seq() const = 0;
  virtual void set_kv_seq(int32_t seq) = 0;

  virtual int64_t prompt_length() const = 0;
  // The generated part: AR the tokens so far; diffusion and Dream the whole generated canvas
  // ([gen_length], mask_id() where still masked).
  virtual std::span<const int32_t> generated() const = 0;
  // The streaming view: the generated tokens that are final and in order, i.e. what may be shown
  // to a user now. AR: generated(); diffusion and Dream: the generated positions before the first
  // one still masked.
  virtual std::span<const int32_t> committed() const;
  // The mask token id of a diffusion decoder; -1 for AR.
  virtual int32_t mask_id() const { return -1; }
  // One entry per generated token when the request asked for log-probabilities (AR decoders with
  // ArParams::logprobs >= 0, diffusion decoders after EnableLogprobs); empty otherwise.
  virtual std::span<const TokenLogprob> logprobs() const { return {}; }
  // Diffusion decoders: record each committed token's log-probability and k alternatives (k in
  // [0, 20]) from the row it is committed from. Call before the first Update. Unimplemented for a
  // decoder that does not report them (and for AR, whose ArParams::logprobs does it).
  virtual Status EnableLogprobs(int32_t k) {
    (void)k;
    return UnimplementedError(std::string(DecoderKindName(kind())) +
                              " decoding does not report log-probabilities");
  }
  virtual int64_t nfe() const = 0;  // forward passes so far (a CFG pair counts once)
  // Positions a steady step of this decoder feeds, for the scheduler's token budget: the whole
  // canvas (prompt included) for diffusion and Dream, 1 for AR after its prefill.
  virtual int64_t step_positions() const = 0;
  // Target features for a drafter that reads them (Drafter::uses_target_features; Medusa, EAGLE):
  // when true, the caller passes SetFeatures(rows) before each Update, `rows` [num_logit_rows,
  // feature_size] f32 the model's final hidden states of the plan's logit rows (after the output
  // norm: Workspace::last_normed), or [fed positions, feature_size] of every fed position when
  // the plan asked for them (SequenceInput::all_features: Workspace::all_features), valid until
  // Update returns.
  virtual bool wants_features() const { return false; }
  virtual void SetFeatures(const TensorView& rows) { (void)rows; }
};

// Shared checks of the decoders' Create and Update. InvalidArgument: a mask id outside
// [0, vocab_size); a prompt id outside the vocabulary (naming its index); logits that are not f32
// [rows, vocab_size].
Status CheckMaskAndPrompt(int32_t mask_id, std::span<const int32_t> prompt, int64_t vocab_size);
Status CheckLogitsShape(const TensorView& logits, int64_t rows, int64_t vocab_size);
// The suffix of an infilling canvas (prompt + gen_length masks + suffix; LLaDA and Dream
// decoders). InvalidArgument for an id outside [0, vocab_size) or the mask id (naming the index);
// OutOfRange when the canvas exceeds context_length. OK for an empty suffix.
Status CheckInfillSuffix(std::span<const int32_t> suffix, int32_t mask_id, int64_t vocab_size,
                         int64_t prompt_length, int64_t gen_length, int64_t context_length);

// The id of the largest of `logits` [vocab] other than `mask_id` (lowest id on ties; mask_id
// itself when the vocabulary has one entry): what the block decoders write when a slot's
// sampled token is the mask. DELIBERATE DEVIATION from SDAR's, LLaDA 2.x's and Fast-dLLM v2's
// references, which write the mask id back and leave the slot masked: a model that keeps
// predicting the mask would then never finish its block (SDAR's generate raises after steps + 1
// iterations, the others loop). Confidences, and so every selection, stay the reference's.
int32_t BestNonMaskToken(std::span<const float> logits, int32_t mask_id);

}  // namespace unmask

#endif  // UNMASK_DECODE_DECODER_H_
