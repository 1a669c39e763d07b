// Fast-dLLM v2's decoding (NVlabs/Fast-dLLM v2/generation_functions.py `batch_sample`; MODELS.md
// §5), exact for one request (use_block_cache=False, the evaluation default), on a block-causal
// model with shifted logits and a KV cache. B = block_size (the model's bd_size), b =
// small_block_size (B % b == 0), Lp = prompt length, num_blocks = max_new_tokens / B + Lp / B:
//   prefill (Lp >= B): one forward of the floor(Lp / B) * B prompt positions storing their K/V;
//     when Lp % B == 0 the argmax of its last row is appended (the AR step);
//   each block Lp / B .. num_blocks - 1: masks appended up to the block end; for each sub-block
//     of b positions in order, while it holds masks: one forward of the whole block against the
//     cache (nothing stored); TOKEN SHIFT: position j of the block reads logits row j - 1 (row 0
//     reads its own); within the sub-block p = softmax(row) in float64, x1 = argmax p (lowest
//     id on ties; T > 0: drawn from the top-p filtered softmax(row / T) by inverse CDF with
//     u = rng.Uniform(kSampling, nfe, position, 0)), c = p[x1] at masked slots; every masked slot
//     with c > threshold is committed, and always the one of largest c (the first on ties); a
//     committed x1 equal to stop_token finishes the sequence;
//   a block without masks: finished -> every position after the first stop_token of the
//     generated part becomes pad_token, and generation ends (no cache update); else one forward
//     of the block stores its K/V and the argmax of its last row is appended (always greedy).
// generated() = everything after the prompt: (num_blocks * B - Lp) positions plus the token
// appended after the last block, or up to the end of the block that finished.
// DEVIATION (as scripts/reference/fastdllm_v2_generate.py): the prefill runs when Lp >= B; the
// reference tests Lp > B and at Lp == B drops the prompt from the cache (a bug). Temperature > 0
// uses unmask's counter RNG, so it cannot reproduce torch.multinomial draws.
#ifndef UNMASK_DECODE_DECODER_FAST_DLLM_V2_H_
#define UNMASK_DECODE_DECODER_FAST_DLLM_V2_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"
#include "decode/decoder.h"
#include "model/model.h"

namespace unmask {

struct FastDllmV2Params {
  int64_t max_new_tokens = 128;  // decoded blocks = max_new_tokens / block_size
  int64_t block_size = 32;       // bd_size
  int64_t small_block_size = 8;  // v2/eval.py and run_chatbot.py
  double threshold = 0.9;        // v2/eval.py and run_chatbot.py (batch_sample's default: 0.95)
  double temperature = 0.0;
  double top_p = 0.95;      // T > 0 only (batch_sample's default)
  int32_t stop_token = -1;  // <|im_end|> for the released models; -1: none
  int32_t pad_token = -1;   // written after the stop token; -1: stop_token
  uint64_t seed = 0;
};

// InvalidArgument naming the parameter: block_size < 1, small_block_size < 1 or not dividing
// block_size, max_new_tokens < block_size (no block to decode), threshold outside [0, 1],
// temperature < 0 or not finite, top_p outside (0, 1]; an empty prompt; OutOfRange when the
// positions used exceed the context.
Status ValidateFastDllmV2Params(const FastDllmV2Params& p, int64_t prompt_length,
                                int64_t context_length);

class FastDllmV2Decoder final : public Decoder {
 public:
  // Errors: those of ValidateFastDllmV2Params; InvalidArgument for a mask id outside the
  // vocabulary or a prompt id outside it.
  static StatusOr<FastDllmV2Decoder> Create(const FastDllmV2Params& params, int32_t mask_id,
                                            std::span<const int32_t> prompt, int64_t context_length,
                                            int64_t vocab_size, int32_t kv_seq = 0);

  DecoderKind kind() const override { return DecoderKind::kFastDllmV2; }
  bool Done() const override { return finish_ != DecodeFinish::kNone; }
  DecodeFinish finish() const override { return finish_; }
  void Stop() override {
    if (finish_ == DecodeFinish::kNone) finish_ = DecodeFinish::kStopped;
  }
  bool needs_kv_cache() const override { return true; }
  int32_t kv_seq() const override { return kv_seq_; }
  void set_kv_seq(int32_t seq) override { kv_seq_ = seq; }
  // Errors: FailedPrecondition after Done().
  StatusOr<const BatchPlan*> Plan() override;
  // Consumes logits [Plan()->num_logit_rows(), vocab]. Errors: InvalidArgument for logits of the
  // wrong shape; FailedPrecondition without a Plan() for this step or after Done().
  Status Update(const TensorView& logits, DecodeStep* step) override;

  const FastDllmV2Params& params() const { return params_; }
  int32_t mask_id() const override { return mask_id_; }
  int64_t prompt_length() const override { return prompt_length_; }
  std::span<const int32_t> generated() const override;
  // Commit-time log-probabilities (Decoder::EnableLogprobs): of the row each token was committed
  // from, the model's logits (before temperature and top-p).
  Status EnableLogprobs(int32_t k) override;
  std::span<const TokenLogprob> logprobs() const override { return commit_lp_.entries(); }
  // The streaming view: the generated positions of finished blocks only (a block's tokens can
  // still change until it is finished: the over-commit rewrite), up to the first mask.
  std::span<const int32_t> committed() const override;
  int64_t nfe() const override { return nfe_; }
  int64_t step_positions() const override { return params_.block_size; }
  int64_t current_block() const { return block_; }

 private:
  enum class Phase { kPrefill, kDenoise, kStore };
  FastDllmV2Decoder() = default;
  int64_t BlockStart() const { return block_ * params_.block_size; }
  bool SubBlockHasMask(int64_t sb) const;
  void StartBlock();  // masks up to the block end; first sub-block with masks
  void AppendArgmax(std::span<const float> row);

  FastDllmV2Params params_;
  int32_t mask_id_ = 0;
  int64_t vocab_size_ = 0;
  int64_t prompt_length_ = 0;
  int64_t num_blocks_ = 0;
  std::vector<int32_t> canvas_;
  CommitLogprobs commit_lp_;  // [num_blocks * B + 1], used up to length_
  int64_t length_ = 0;
  int32_t kv_seq_ = 0;
  CounterRng rng_{0};

  Phase phase_ = Phase::kPrefill;
  int64_t block_ = 0;
  int64_t sub_block_ = 0;
  bool finished_ = false;  // a committed token was the stop token
  int64_t nfe_ = 0;
  DecodeFinish finish_ = DecodeFinish::kNone;
  bool planned_ = false;
  BatchPlan plan_;
  std::vector<int32_t> plan_rows_;
};

}  // namespace unmask

#endif  // UNMASK_DECODE_DECODER_FAST_DLLM_V2_H_
