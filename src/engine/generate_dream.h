// The in-process generation loop of Dream's reference sampler (decode/decoder_dream.h): one full
// forward per step, no KV cache (the reference has none).
#ifndef UNMASK_ENGINE_GENERATE_DREAM_H_
#define UNMASK_ENGINE_GENERATE_DREAM_H_

#include <functional>

#include "core/status.h"
#include "decode/decoder_dream.h"
#include "engine/generate.h"
#include "model/model.h"

namespace unmask {

// Called after every step with the decoder's state (for progress and --visual).
using DreamStepCallback = std::function<void(const DreamDecoder&, const DreamStepResult&)>;

// Runs `decoder` to completion on `model`. Stats: nfe = steps, generated_tokens = gen_length,
// times in ms. Errors: any Forward/Update error, with the step.
StatusOr<GenerationStats> RunDream(const Model& model, DreamDecoder& decoder, Workspace& ws,
                                   const DreamStepCallback& on_step);

}  // namespace unmask

#endif  // UNMASK_ENGINE_GENERATE_DREAM_H_
