// The in-process autoregressive generation loop (the CLI and benchmarks use it; the server's
// scheduler will drive the same ArDecoder).
#ifndef UNMASK_ENGINE_GENERATE_AR_H_
#define UNMASK_ENGINE_GENERATE_AR_H_

#include <functional>

#include "core/status.h"
#include "decode/decoder_ar.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace unmask {

// Timings and work of one AR generation. Times in milliseconds.
struct ArGenerationStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t first_step_tokens = 0;  // committed by the first forward (more than 1 when drafting)
  int64_t nfe = 0;                // target forwards (prefill included)
  int64_t forward_positions = 0;  // positions fed to the target
  double prefill_ms = 0;          // first forward (prompt), including its drafting
  double ttft_ms = 0;             // time to the first generated token
  double total_ms = 0;            // wall time of the whole loop
  double forward_ms = 0;          // time inside the target's Forward
  double flops = 0;               // target FLOPs (ModelConfig::ForwardFlops)
  double bytes = 0;               // bytes the target's forwards moved (ForwardStats::bytes)
  SpeculativeStats speculative;   // zeros without a drafter
  DrafterStats drafter;           // zeros without a drafter

  // Generated tokens per second after the first forward (the decode phase; 0 when the first
  // forward committed everything), and overall.
  double decode_tokens_per_second() const {
    const double ms = total_ms - ttft_ms;
    const int64_t n = generated_tokens - first_step_tokens;
    return n > 0 && ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0;
  }
  double arithmetic_intensity() const { return bytes > 0 ? flops / bytes : 0; }
  double tokens_per_second() const {
    return total_ms > 0 ? 1000.0 * static_cast<double>(generated_tokens) / total_ms : 0;
  }
  // Generated tokens per target forward, prefill included (1 without speculation).
  double tokens_per_forward() const {
    return nfe > 0 ? static_cast<double>(generated_tokens) / static_cast<double>(nfe) : 0;
  }
};

// Called after every step with the tokens it committed; returning false ends the generation
// (decoder.Stop(): a stop string was found).
using ArStepCallback = std::function<bool(const ArDecoder&, const ArStepResult&)>;

// Runs `decoder` to completion on `model` with `kv` (its sequence must be empty or hold a prefix
// of the decoder's tokens). `drafter` (may be null) is only read for its statistics.
// Errors: any Plan/Forward/Update error, with the step.
StatusOr<ArGenerationStats> RunAr(const Model& model, KvCache& kv, ArDecoder& decoder,
                                  Workspace& ws, const Drafter* drafter,
                                  const ArStepCallback& on_step);

}  // namespace unmask

#endif  // UNMASK_ENGINE_GENERATE_AR_H_
