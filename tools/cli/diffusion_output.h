// Output of a diffusion generation (LLaDA block decoder or Dream's sampler): the text up to the
// first end-of-generation token on stdout and a one-line summary on stderr, or one JSON object.
#ifndef UNMASK_TOOLS_CLI_DIFFUSION_OUTPUT_H_
#define UNMASK_TOOLS_CLI_DIFFUSION_OUTPUT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "engine/engine.h"
#include "model/loader.h"

namespace unmask::tools {

// Prints the result. `output` = the generated canvas [gen_length]; the text ends at its first
// EOS/EOT (finish_reason "stop", else "length"); output_ids keep every token. `params` becomes the
// JSON "params" object (the decoder's parameters). Times in ms. Returns the exit code (0).
int PrintDiffusionResult(const LoadedModel& lm, const std::string& path,
                         std::span<const int32_t> prompt_ids, std::span<const int32_t> output,
                         const GenerationStats& stats, double load_ms, double tokenize_ms,
                         nlohmann::json params, bool json);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_DIFFUSION_OUTPUT_H_
