// In-process generation loops over a Model and a decoder (the CLI and benchmarks use these; the
// server's scheduler comes later and drives the same decoder interface).
#ifndef UNMASK_ENGINE_GENERATE_H_
#define UNMASK_ENGINE_GENERATE_H_

#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "decode/decoder_diffusion.h"
#include "model/model.h"

namespace unmask {

// Timings and work of one generation. Times in milliseconds.
struct GenerationStats {
  int64_t nfe = 0;                // forward passes (a CFG step's batched pair counts once)
  int64_t generated_tokens = 0;   // gen_length
  int64_t forward_positions = 0;  // positions fed, summed over forwards (CFG: both canvases)
  double forward_ms = 0;          // time inside Model::Forward
  double decode_ms = 0;           // time inside the decoder (sampling, confidence, commit)
  double total_ms = 0;            // wall time of the whole loop
  double flops = 0;               // FLOPs executed by the forwards (ModelConfig::ForwardFlops)
  double bytes = 0;               // bytes the forwards moved (ForwardStats::bytes)

  double tokens_per_second() const {
    return total_ms > 0 ? 1000.0 * static_cast<double>(generated_tokens) / total_ms : 0;
  }
  double tokens_per_forward() const {
    return nfe > 0 ? static_cast<double>(generated_tokens) / static_cast<double>(nfe) : 0;
  }
  double gflops_per_second() const { return forward_ms > 0 ? flops / forward_ms / 1e6 : 0; }
  // FLOPs per byte moved over the whole generation (the roofline's x axis).
  double arithmetic_intensity() const { return bytes > 0 ? flops / bytes : 0; }
};

// Called after every step with the decoder's state (for progress and --visual).
using DiffusionStepCallback =
    std::function<void(const DiffusionDecoder&, const DiffusionStepResult&)>;

// Runs `decoder` to completion on `model` (with a KV cache of its own when the decoder's cache
// mode needs one). Errors: any Forward/Update error, with the step.
StatusOr<GenerationStats> RunDiffusion(const Model& model, DiffusionDecoder& decoder, Workspace& ws,
                                       const DiffusionStepCallback& on_step);

// Batched diffusion: every step, the plans of all unfinished decoders are run as ONE forward
// (ragged canvases side by side, each at its own positions: no padding, no position shift, no
// attention across requests), then each decoder consumes its own logit rows. Decoders finish
// independently (a finished one leaves the batch). Decoder i uses KV cache sequence i. Each
// request's tokens are those of running it alone (the forward computes every row with the same
// operations whatever the batch; tests/engine checks it at temperature 0).
// Stats: nfe = batched forwards, generated_tokens = the sum of gen_length, times for the batch.
// Errors: any Forward/Update error, with the step; InvalidArgument for an empty batch or a null
// decoder.
StatusOr<GenerationStats> RunDiffusionBatch(const Model& model,
                                            std::span<DiffusionDecoder* const> decoders,
                                            Workspace& ws, const DiffusionStepCallback& on_step);

}  // namespace unmask

#endif  // UNMASK_ENGINE_GENERATE_H_
