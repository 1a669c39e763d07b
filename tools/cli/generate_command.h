// `unmask generate`: text generation; the decoder follows the model's architecture (diffusion:
// the LLaDA reference decoder, or Dream's reference sampler for "dream"; causal: the AR decoder
// with optional speculative decoding).
#ifndef UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_
#define UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>

#include "common/ar_args.h"
#include "common/dream_args.h"
#include "common/model_args.h"
#include "decode/decoder_factory.h"
#include "engine/engine.h"
#include "model/loader.h"

namespace unmask::tools {

struct GenerateCommand {
  ModelArgs model;
  DiffusionArgs diffusion;
  ArArgs ar;
  DreamArgs dream;
  std::string prompt;       // -p ("-": standard input)
  std::string prompt_file;  // -f
  std::string prompt_ids;
  std::string system;    // --system: the chat template's system message
  int64_t ctx_size = 0;  // -c: the context the run may use (0: the model's)
  bool chat = false;
  bool no_chat = false;
  bool json = false;
  bool visual = false;

  CLI::App* cli = nullptr;  // set by AddTo: which flags the user gave

  void AddTo(CLI::App& app);
  // Returns the process exit code; errors are printed as one line on stderr.
  int Run() const;
};

// A generation once the model is loaded (in `engine`) and the prompt tokenized.
struct GenerateRun {
  Engine& engine;
  size_t index = 0;  // the model in `engine`
  const std::string& path;
  const std::vector<int32_t>& ids;
  bool used_chat = false;
  double load_ms = 0;
  double tokenize_ms = 0;
  bool seed_drawn = false;  // no --seed: the seed was drawn at random (and printed)
};

// generate_ar.cc: the AR half of Run() (drafters, streamed text, stop strings).
int RunArGeneration(const GenerateCommand& cmd, const GenerateRun& run, DecodeOptions options);
// generate_diffusion.cc: the diffusion half (the block decoder, or Dream's reference sampler for
// Dream models unless a block-decoder flag is given), with progress or --visual.
int RunDiffusionGeneration(const GenerateCommand& cmd, const GenerateRun& run,
                           const DecodeOptions& options);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_
