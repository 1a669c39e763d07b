// Parameters of masked-diffusion generation, named after the LLaDA reference `generate`
// (ML-GSAI/LLaDA generate.py; ALGORITHMS.md §1).
#ifndef UNMASK_DECODE_DIFFUSION_PARAMS_H_
#define UNMASK_DECODE_DIFFUSION_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/status.h"

namespace unmask {

// How the positions to commit are ranked each step.
enum class Remasking {
  kLowConfidence,  // softmax probability of the chosen token; highest first ("low_confidence")
  kRandom,         // a uniform random number per position ("random")
};
std::string_view RemaskingName(Remasking r);  // "low_confidence" | "random"
std::optional<Remasking> RemaskingFromName(std::string_view name);

// Which key/value cache a bidirectional model's steps use (ALGORITHMS.md §3.1, §4.3). Every
// cached mode starts each block with one full forward that (re)writes the K/V of every position.
enum class CacheMode {
  kNone,      // every step is a full forward of the canvas (the reference; exact)
  kPrefix,    // Fast-dLLM prefix cache: later steps feed the block and everything after it
  kDual,      // Fast-dLLM dual cache: later steps feed only the block; the suffix K/V are stale
  kVicinity,  // dInfer vicinity refresh: later steps feed the block plus prefix_look positions
              // before it and after_look after it (dual-cache style, in place)
};
std::string_view CacheModeName(CacheMode c);  // "none" | "prefix" | "dual" | "vicinity"
std::optional<CacheMode> CacheModeFromName(std::string_view name);

// Which masked positions of the block a step commits (decode/commit_rules.h has the formulas).
enum class CommitRule {
  kFixed,      // LLaDA's linear schedule: steps / num_blocks steps per block (the reference)
  kThreshold,  // Fast-dLLM: the top-1 always, plus every position with confidence >= threshold
  kFactor,     // Fast-dLLM factor rule: the largest n with (n + 1)(1 - c_n) <= factor
  kHierarchy,  // dInfer hierarchical: the best position of each masked run above low_threshold,
               // plus all above threshold (and the top-1)
  kCredit,     // dInfer credit decoding: threshold rule on logits fused with a decaying credit
};
std::string_view CommitRuleName(CommitRule r);  // "fixed" | "threshold" | "factor" | ...
std::optional<CommitRule> CommitRuleFromName(std::string_view name);

struct DiffusionParams {
  int64_t gen_length = 128;   // tokens generated after the prompt
  int64_t steps = 128;        // forward passes in total (steps per block = steps / num blocks)
  int64_t block_length = 32;  // semi-autoregressive block size; == gen_length: one block
  double temperature = 0.0;   // 0: argmax; > 0: Gumbel-max sampling in float64
  double cfg_scale = 0.0;     // classifier-free guidance: un + (cfg_scale + 1) * (cond - un)
  Remasking remasking = Remasking::kLowConfidence;
  bool logits_eos_inf = false;          // EOS logit := -inf (EOS is never produced)
  bool confidence_eos_eot_inf = false;  // EOS/EOT predictions get confidence 0 (committed last)
  uint64_t seed = 0;                    // keys the counter-based RNG (temperature > 0, random)

  // Acceleration (defaults: the exact reference). With a rule other than kFixed a block takes as
  // many steps as it needs (at least one token per step) and `steps` is not used.
  CacheMode cache = CacheMode::kNone;
  int64_t prefix_look = 16;  // vicinity: positions before the block recomputed each step
  int64_t after_look = 16;   // vicinity: positions after the block recomputed each step
  CommitRule commit = CommitRule::kFixed;
  double threshold = 0.9;      // threshold / hierarchy / credit: commit confidence >= threshold
  double factor = 1.0;         // factor rule (Fast-dLLM; their eval scripts use 1.0)
  double low_threshold = 0.6;  // hierarchy: a run's best position needs > low_threshold (dInfer
                               // serving default 0.6)
  double credit_alpha = 0.7;   // credit: fused = logits + alpha * log(1 + credit) (dInfer defaults)
  double credit_beta = 0.8;    // credit: decay per step
  double credit_gamma = 0.2;   // credit: added credit = p_top1^gamma
  // dInfer early stop: when a finished block contains EOS (or EOT), every later position becomes
  // EOS and generation ends.
  bool early_stop = false;

  int64_t num_blocks() const { return block_length > 0 ? gen_length / block_length : 0; }
  int64_t steps_per_block() const { return num_blocks() > 0 ? steps / num_blocks() : 0; }
};

// Checks the parameters against a prompt length and the model's context length. InvalidArgument
// naming the parameter: gen_length <= 0, block_length <= 0, gen_length not divisible by
// block_length, steps <= 0, above gen_length or not divisible by the number of blocks (fixed
// rule only),
// temperature < 0 or not
// finite, cfg_scale < 0 or not finite, an empty prompt, threshold outside (0, 1], factor <= 0,
// low_threshold outside [0, 1], credit_* out of range, negative prefix/after look, a cache with
// cfg_scale > 0 (not supported); OutOfRange when prompt + gen_length exceeds the context length.
Status ValidateDiffusionParams(const DiffusionParams& p, int64_t prompt_length,
                               int64_t context_length);

}  // namespace unmask

#endif  // UNMASK_DECODE_DIFFUSION_PARAMS_H_
