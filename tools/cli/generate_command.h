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
#include "model/loader.h"

namespace unmask::tools {

struct GenerateCommand {
  ModelArgs model;
  DiffusionArgs diffusion;
  ArArgs ar;
  DreamArgs dream;
  std::string prompt;
  std::string prompt_ids;
  bool chat = false;
  bool no_chat = false;
  bool json = false;
  bool visual = false;

  CLI::App* cli = nullptr;  // set by AddTo: which flags the user gave

  void AddTo(CLI::App& app);
  // Returns the process exit code; errors are printed as one line on stderr.
  int Run() const;
};

// generate_ar.cc: the AR half of Run() once the model is loaded and the prompt tokenized.
int RunArGeneration(const GenerateCommand& cmd, LoadedModel& loaded, const std::string& path,
                    const std::vector<int32_t>& ids, bool used_chat, double load_ms,
                    double tokenize_ms);

// generate_dream.cc: the Dream half of Run() (Dream's reference sampler), and the check that
// refuses Dream-only flags (--alg, --eps, --alg-temp) for other models and Dream-sampler flags
// (also --top-k/--top-p) together with block-decoder flags (InvalidArgument naming the flag).
// True when a block-decoder flag (--block-length, --cache, --commit, --threshold, ...) was given:
// a Dream model then runs the block decoder with shifted logits instead of Dream's sampler.
bool WantsBlockDecoder(const GenerateCommand& cmd);
Status CheckDreamFlags(const GenerateCommand& cmd, bool is_dream, const std::string& path,
                       const std::string& architecture);
int RunDreamGeneration(const GenerateCommand& cmd, LoadedModel& loaded, const std::string& path,
                       const std::vector<int32_t>& ids, bool used_chat, double load_ms,
                       double tokenize_ms);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_
