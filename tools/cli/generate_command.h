// `unmask generate`: text generation; the decoder follows the model's architecture (diffusion:
// the LLaDA reference decoder, or Dream's reference sampler for "dream"; causal: the AR decoder
// with optional speculative decoding).
#ifndef UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_
#define UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <span>
#include <string>

#include "common/ar_args.h"
#include "common/constraint_args.h"
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
  ConstraintArgs constraint;  // --grammar, -j/--json-schema, ...
  std::string prompt;         // -p ("-": standard input)
  std::string prompt_file;    // -f
  std::string prompt_ids;
  std::string suffix;              // --suffix: infilling, the text after the generated span
  std::string suffix_ids;          // --suffix-ids: the same as token ids
  std::string system;              // --system: the chat template's system message
  std::string chat_template_file;  // --chat-template-file: replaces the model's template
  int64_t ctx_size = 0;            // -c: the context the run may use (0: the model's)
  bool chat = false;
  bool no_chat = false;
  bool json = false;
  bool visual = false;

  CLI::App* cli = nullptr;  // set by AddTo: which flags the user gave

  // chat_mode (set before AddTo): the flags of `unmask chat` (no --prompt-ids, --json,
  // --visual, --chat, --no-chat; -p / -f give the system message, as llama-cli -cnv takes them).
  bool chat_mode = false;

  void AddTo(CLI::App& app);
  // Returns the process exit code; errors are printed as one line on stderr.
  int Run() const;
  // `unmask chat` (generate_chat.cc): the interactive multi-turn loop.
  int RunChat() const;

  // The pieces both share.
  struct Session {
    std::unique_ptr<Engine> engine;
    size_t index = 0;
    std::string path;
    double load_ms = 0;
  };
  // The decoding options of the flags, with the CLI's rules (the server's canvas rule, -c, a
  // drawn seed when --seed is absent: *seed_drawn). Errors: DecodeOptionsFromFlags'.
  StatusOr<DecodeOptions> Options(bool* seed_drawn) const;
  // The engine with the model loaded (a progress line on stderr). Errors: the loader's.
  StatusOr<Session> Load() const;
  // -n -1 (until EOS or the context): the length a block-diffusion decoder gets after
  // `prompt_length` tokens. InvalidArgument for a full-canvas model; OutOfRange when no token fits.
  Status SettleUntilDone(const ModelConfig& config, const std::string& path, int64_t prompt_length,
                         DecodeOptions* options) const;
  // "seed N (drawn at random; --seed N repeats this run)" on stderr when the run samples.
  void PrintDrawnSeed(const DecodeOptions& options) const;
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
  bool seed_drawn = false;       // no --seed: the seed was drawn at random (and printed)
  std::string* reply = nullptr;  // chat: receives the generated text (not printed as JSON)
  std::string suffix_text = {};  // --suffix / --suffix-ids: printed after the text
};

// The prompt ids of `messages`: through the chat template (use_template; BOS not doubled), else
// the last message's text. Errors: InvalidArgument for an empty result without BOS, a text the
// vocabulary cannot encode, a mask token in the text of a diffusion model (needs_mask_token); the
// template's render errors.
StatusOr<std::vector<int32_t>> EncodePrompt(const Tokenizer& tok, bool needs_mask_token,
                                            std::span<const ChatMessage> messages,
                                            bool use_template);

// generate_ar.cc: the AR half of Run() (drafters, streamed text, stop strings).
int RunArGeneration(const GenerateCommand& cmd, const GenerateRun& run, DecodeOptions options);
// generate_diffusion.cc: the diffusion half (the block decoder, or Dream's reference sampler for
// Dream models unless a block-decoder flag is given), with progress or --visual.
int RunDiffusionGeneration(const GenerateCommand& cmd, const GenerateRun& run,
                           const DecodeOptions& options);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_
