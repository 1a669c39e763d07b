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

  int64_t num_blocks() const { return block_length > 0 ? gen_length / block_length : 0; }
  int64_t steps_per_block() const { return num_blocks() > 0 ? steps / num_blocks() : 0; }
};

// Checks the parameters against a prompt length and the model's context length. InvalidArgument
// naming the parameter: gen_length <= 0, block_length <= 0, gen_length not divisible by
// block_length, steps <= 0, above gen_length or not divisible by the number of blocks,
// temperature < 0 or not
// finite, cfg_scale < 0 or not finite, an empty prompt; OutOfRange when prompt + gen_length
// exceeds the context length.
Status ValidateDiffusionParams(const DiffusionParams& p, int64_t prompt_length,
                               int64_t context_length);

}  // namespace unmask

#endif  // UNMASK_DECODE_DIFFUSION_PARAMS_H_
