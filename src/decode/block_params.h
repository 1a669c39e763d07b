// Parameters of block-diffusion generation, named after SDAR's reference `block_diffusion_generate`
// (JetAstra/SDAR generate.py; ALGORITHMS.md §5.2, MODELS.md §4).
#ifndef UNMASK_DECODE_BLOCK_PARAMS_H_
#define UNMASK_DECODE_BLOCK_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace unmask {

// SDAR's remasking_strategy: which masked positions of the block a denoising step commits.
enum class BlockRemasking {
  kSequential,            // "sequential": the quota of leftmost masked positions
  kLowConfidenceStatic,   // "low_confidence_static": the quota of most confident positions
  kLowConfidenceDynamic,  // "low_confidence_dynamic": all with confidence > threshold when at
                          // least the quota are, else the quota of most confident
  kEntropyBounded,        // "entropy_bounded": lowest-entropy prefix with sum < eb_threshold
  // "joint_threshold" (LLaDA 2.1's mask-to-token + token-to-token editing; SGLang
  // dllm/algorithm/joint_threshold.py, MODELS.md §3.5): every masked slot with confidence >
  // threshold (else the single most confident), plus every decoded non-prompt slot of the block
  // whose argmax differs from it with confidence > edit_threshold; after the block's masks are
  // gone, up to max_post_edit_steps editing steps; the block ends at the first step that changes
  // nothing (or when the edit budget is spent).
  kJointThreshold,
};
std::string_view BlockRemaskingName(BlockRemasking r);
std::optional<BlockRemasking> BlockRemaskingFromName(std::string_view name);
// "sequential, low_confidence_static, low_confidence_dynamic, entropy_bounded", for messages.
std::string_view BlockRemaskingNames();

struct BlockParams {
  int64_t gen_length = 128;     // tokens asked for after the prompt (the canvas ends at the end
                                // of the block holding prompt + gen_length)
  int64_t block_length = 4;     // SDAR's default; the model's diffusion.block_length
  int64_t denoising_steps = 4;  // per block (SDAR's denoising_steps, default 4)
  double temperature = 0.0;     // 0: argmax (see decoder_block_diffusion.h); > 0: sampling
  int64_t top_k = 0;            // 0: off
  double top_p = 1.0;           // 1: off
  BlockRemasking remasking = BlockRemasking::kLowConfidenceDynamic;
  double confidence_threshold = 0.85;  // low_confidence_dynamic (generate.py default)
  double eb_threshold = 0.35;          // entropy_bounded (generate.py default)
  double edit_threshold = 0.0;         // joint_threshold: T2T edits need p(argmax) > this
  int64_t max_post_edit_steps = 16;    // joint_threshold: editing steps after the last mask
  uint64_t seed = 0;                   // temperature > 0
  // false (default): the engine's fused schedule: the clean K/V the cache still lacks (the
  // prompt's whole blocks, then each finished block) is written by the next denoising forward,
  // which feeds those positions in front of the block (block-causal attention gives the block the
  // same keys and values as after a separate store): one forward per denoising step, none for
  // prefill or stores, the same tokens. true: SDAR's schedule: one prefill forward and one clean
  // store forward per finished block (store_kv=True), the reference's NFE.
  bool separate_store = false;
  // true (SDAR generate.py): a step's quota (the schedule's entry) may exceed the masks left in
  // the block, and "the quota most confident" then re-commits decoded (or prompt) slots (the
  // over-commit quirk). false (LLaDA 2.x generate: top-min(quota, masks)): the quota is capped at
  // the masks left. The factory sets false for llada2-moe models.
  bool overcommit = true;
  // SDAR's stopping_criteria_idx: generation ends after the first block whose commit puts one of
  // these ids into the generated part (the model's EOS/EOT by default, from the factory).
  std::vector<int32_t> stop_ids;

  int64_t num_blocks(int64_t prompt_length) const {
    return (prompt_length + gen_length + block_length - 1) / block_length;
  }
};

// InvalidArgument naming the parameter: gen_length < 1, block_length < 1, denoising_steps < 1 or
// > block_length (a step with quota 0 would commit nothing: SDAR's schedule gives 0 to the steps
// past block_length), temperature < 0 or not finite, top_k < 0, top_p outside (0, 1],
// confidence_threshold outside [0, 1], eb_threshold <= 0 or not finite, edit_threshold outside
// [0, 1], max_post_edit_steps outside [0, 4096], joint_threshold with temperature > 0 (editing
// has no reference for sampling); an empty prompt;
// OutOfRange when the canvas (whole blocks) exceeds the context length.
Status ValidateBlockParams(const BlockParams& p, int64_t prompt_length, int64_t context_length);

// SDAR get_num_transfer_tokens(block_length, steps): block_length / steps per step, the remainder
// one each to the first steps. [steps]
std::vector<int64_t> BlockTransferSchedule(int64_t block_length, int64_t steps);

}  // namespace unmask

#endif  // UNMASK_DECODE_BLOCK_PARAMS_H_
