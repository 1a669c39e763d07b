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

// What a diffusion generation produced.
struct DiffusionResult {
  std::string text;                 // up to EOS/EOT, a stop string or -n tokens
  std::string finish = "length";    // "stop" | "length" | "interrupted" (Ctrl-C)
  std::span<const int32_t> output;  // the canvas' first -n tokens (every token, EOS and after)
  bool text_printed = false;        // the text was streamed to stdout already (not --json)
  std::string suffix;               // --suffix (infilling): printed after the text, in JSON too
};

// Prints the result: the text (unless printed) and a newline on stdout and a one-line summary
// on stderr, or one JSON object (text, finish_reason, output_ids, ...). `params` becomes the JSON
// "params" object (the decoder's parameters). Times in ms. Returns the exit code (0; 130 after
// Ctrl-C, as a shell reports SIGINT).
int PrintDiffusionResult(const LoadedModel& lm, const std::string& path,
                         std::span<const int32_t> prompt_ids, const DiffusionResult& result,
                         const GenerationStats& stats, double load_ms, double tokenize_ms,
                         nlohmann::json params, bool json);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_DIFFUSION_OUTPUT_H_
