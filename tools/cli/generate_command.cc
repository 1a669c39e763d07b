#include "cli/generate_command.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <span>

#include "cli/prompt_source.h"
#include "common/cli_util.h"
#include "common/decode_args.h"
#include "common/infill.h"
#include "common/interrupt.h"
#include "core/clock.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask generate";

// Parses "1,2,3" (spaces allowed). InvalidArgument naming the bad item.
StatusOr<std::vector<int32_t>> ParseIds(const std::string& text,
                                        const std::string& flag = "--prompt-ids") {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    item = a == std::string::npos ? "" : item.substr(a, b - a + 1);
    char* stop = nullptr;
    errno = 0;
    const long long v = item.empty() ? 0 : std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || errno != 0 || v < 0 || v > INT32_MAX) {
      return InvalidArgumentError(flag + ": '" + item +
                                  "' is not a token id (expected a comma-separated list of "
                                  "non-negative integers such as 1,2,3)");
    }
    ids.push_back(static_cast<int32_t>(v));
    start = end + 1;
  }
  return ids;
}

}  // namespace

StatusOr<std::vector<int32_t>> EncodePrompt(const Tokenizer& tok, bool needs_mask_token,
                                            std::span<const ChatMessage> messages,
                                            bool use_template) {
  std::string text;
  std::string user_text;  // what the user typed (every message's content)
  for (const ChatMessage& msg : messages) user_text += msg.content;
  if (use_template) {
    auto rendered = tok.ApplyChatTemplate(messages, /*add_generation_prompt=*/true);
    if (!rendered.ok()) return rendered.status().WithContext("chat template");
    text = *std::move(rendered);
  } else {
    text = messages.empty() ? std::string() : messages.back().content;
  }
  // The template writes BOS itself when the model wants one; do not add a second.
  const int32_t bos = tok.special().bos;
  const bool starts_with_bos = bos >= 0 && text.rfind(std::string(tok.TokenText(bos)), 0) == 0;
  std::vector<int32_t> ids = tok.Encode(text, !(use_template && starts_with_bos), use_template);
  if (ids.empty()) {
    return InvalidArgumentError(
        "the prompt is empty and this model's tokenizer adds no BOS token "
        "(tokenizer.ggml.add_bos_token), so there is nothing to generate from");
  }
  // The user's text must reach the model: a vocabulary that cannot encode it would otherwise
  // leave only the chat template.
  if (!user_text.empty() && tok.Encode(user_text, false, false).empty()) {
    return InvalidArgumentError("the prompt text produced no tokens with this model's vocabulary");
  }
  // A mask token in a text prompt (e.g. its text pasted into a chat message) would be denoised as
  // part of the canvas; --prompt-ids allows that deliberately, text prompts do not.
  for (int32_t id : ids) {
    if (needs_mask_token && id == tok.special().mask) {
      return InvalidArgumentError(
          "the prompt contains the mask token '" + std::string(tok.TokenText(id)) +
          "'; use --prompt-ids to place mask tokens in the prompt on purpose");
    }
  }
  return ids;
}

void GenerateCommand::AddTo(CLI::App& app) {
  cli = &app;
  model.AddTo(app);
  auto* p_opt = app.add_option(
      "-p,--prompt", prompt,
      chat_mode ? "system message (as llama-cli -cnv takes -p; --system is the same)"
                : "prompt text (tokenized with the model's tokenizer); - reads it from standard "
                  "input, as does a pipe when neither -p nor -f is given");
  auto* f_opt = app.add_option("-f,--file", prompt_file,
                               chat_mode ? "read the system message from a file"
                                         : "read the prompt from a file (one trailing newline "
                                           "dropped, as llama.cpp does)")
                    ->excludes(p_opt)
                    ->type_name("FILE");
  if (!chat_mode) {
    app.add_option("--prompt-ids", prompt_ids,
                   "prompt as token ids, e.g. 1,2,3 (bypasses the tokenizer and the chat "
                   "template)")
        ->excludes(p_opt)
        ->excludes(f_opt)
        ->type_name("IDS");
  }
  if (!chat_mode) {
    app.add_option("--suffix", suffix,
                   "infilling: the text after the generated span; the output (printed between "
                   "the prompt's end and this text) joins the two. Diffusion models with "
                   "bidirectional attention (LLaDA, Dream) fill it natively (canvas = prompt + "
                   "masks + suffix, one block of -n unless --block-length is given); AR models "
                   "need fill-in-the-middle tokens (<|fim_prefix|>, <fim_prefix>, <PRE>, ...). "
                   "Implies --no-chat")
        ->type_name("TEXT");
    app.add_option("--suffix-ids", suffix_ids,
                   "infilling: the suffix as token ids, e.g. 7,8,9 (as --prompt-ids)")
        ->excludes("--suffix")
        ->type_name("IDS");
  }
  auto* sys_opt = app.add_option("--system,--system-prompt", system,
                                 "system message: the chat template gets it before the prompt "
                                 "(needs a model with a chat template)");
  if (chat_mode) sys_opt->excludes(p_opt)->excludes(f_opt);
  app.add_option("-c,--ctx-size", ctx_size,
                 "context in tokens that prompt + output may use (0: the model's context_length; "
                 "a larger value is refused: unmask does not extend a model's context)")
      ->check(IntegerIn(0, kMaxLength))
      ->capture_default_str();
  AddChatTemplateFileFlag(app, &chat_template_file);
  diffusion.allow_until_done = true;
  diffusion.AddTo(app);
  ar.AddTo(app);
  dream.AddTo(app);
  constraint.AddTo(app);
  if (chat_mode) return;
  auto* chat_flag = app.add_flag("--chat", chat,
                                 "wrap the prompt in the model's chat template as one user "
                                 "message (default when the GGUF has a template)");
  app.add_flag("--no-chat", no_chat, "use the prompt as it is, without the chat template")
      ->excludes(chat_flag);
  app.add_flag("--json", json,
               "print one JSON object on stdout: text, prompt_ids, output_ids, nfe, "
               "tokens_per_second, timings (ms), ...");
  app.add_flag("--visual", visual,
               "redraw the canvas on stderr as it denoises (masks shown as \u2591)");
}

StatusOr<DecodeOptions> GenerateCommand::Options(bool* seed_drawn) const {
  UNMASK_ASSIGN_OR_RETURN(DecodeOptions options,
                          DecodeOptionsFromFlags(*cli, diffusion, ar, dream));
  options.context_length = ctx_size;
  // One canvas rule with the server: -n is rounded up to whole blocks and the text cut back to -n
  // tokens; a default block longer than -n shrinks to it.
  options.round_canvas = true;
  if (!FlagGiven(cli, "--block-length") && options.max_tokens > 0 &&
      options.max_tokens < options.diffusion.block_length) {
    options.diffusion.block_length = options.max_tokens;
  }
  // Sampling without --seed draws a seed, as llama.cpp does, and prints it (PrintDrawnSeed) so
  // that the run can be repeated.
  *seed_drawn = !FlagGiven(cli, "--seed");
  if (*seed_drawn) {
    const uint64_t seed =
        (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    options.diffusion.seed = seed;
    options.ar.sampling.seed = seed;
  }
  for (GivenParam& g : options.given) {
    if (g.name == "ctx_size") g = {"context_length", "-c/--ctx-size"};
  }
  return options;
}

StatusOr<GenerateCommand::Session> GenerateCommand::Load() const {
  Session s;
  UNMASK_ASSIGN_OR_RETURN(s.engine, model.MakeEngine());
  UNMASK_ASSIGN_OR_RETURN(const WeightMode mode, model.weight_mode());
  const auto load_start = std::chrono::steady_clock::now();
  UNMASK_ASSIGN_OR_RETURN(s.path, model.Path());
  UNMASK_ASSIGN_OR_RETURN(s.index, LoadModelWithProgress(*s.engine, s.path, mode));
  UNMASK_RETURN_IF_ERROR(
      ApplyChatTemplateFile(chat_template_file, s.engine->model(s.index).tokenizer.get()));
  s.load_ms = MsSince(load_start);
  return s;
}

Status GenerateCommand::SettleUntilDone(const ModelConfig& config, const std::string& path,
                                        int64_t prompt_length, DecodeOptions* options) const {
  if (options->max_tokens != -1) return Status::Ok();
  // The AR decoder runs -1 itself (and reports a full context as such).
  if (SelectDecoder(config, *options) == DecoderKind::kAr) {
    return UntilDoneLength(config, path, prompt_length, *options).status();
  }
  UNMASK_ASSIGN_OR_RETURN(options->max_tokens,
                          UntilDoneLength(config, path, prompt_length, *options));
  return Status::Ok();
}

void GenerateCommand::PrintDrawnSeed(const DecodeOptions& options) const {
  if (options.diffusion.temperature > 0 || options.remasking == "random") {
    const auto seed = static_cast<unsigned long long>(options.diffusion.seed);
    std::fprintf(stderr, "%s: seed %llu (drawn at random; --seed %llu repeats this run)\n",
                 cli != nullptr ? ("unmask " + cli->get_name()).c_str() : kWho, seed, seed);
  }
}

int GenerateCommand::Run() const {
  const CLI::Option* ids_opt = cli != nullptr ? cli->get_option_no_throw("--prompt-ids") : nullptr;
  const bool ids_given = ids_opt != nullptr && ids_opt->count() > 0;
  if (ids_given && prompt_ids.empty()) {
    return FailWith(kWho,
                    InvalidArgumentError("--prompt-ids is empty: give token ids such as 1,2,3"));
  }
  if (FlagGiven(cli, "--file") && prompt_file.empty()) {
    return FailWith(kWho, InvalidArgumentError("-f/--file: empty path"));
  }
  // -p "" is a prompt: generation starts from BOS alone, as in llama2.c and llama.cpp.
  auto text_or = ReadPrompt({FlagGiven(cli, "--prompt"), prompt, prompt_file, ids_given});
  if (!text_or.ok()) return FailWith(kWho, text_or.status());
  const std::optional<std::string> prompt_text = *std::move(text_or);
  if (!system.empty() && no_chat) {
    return FailWith(kWho, InvalidArgumentError("--system needs the chat template; --no-chat "
                                               "turns it off"));
  }
  if (!system.empty() && !prompt_text) {
    return FailWith(kWho, InvalidArgumentError("--system needs a text prompt; --prompt-ids "
                                               "bypasses the chat template"));
  }
  bool seed_drawn = false;
  auto options_or = Options(&seed_drawn);
  if (!options_or.ok()) return FailWith(kWho, options_or.status());
  DecodeOptions options = *std::move(options_or);
  // Ctrl-C from here on ends the command with what it has (before the first step: nothing).
  CatchInterrupt();
  auto session_or = Load();
  if (!session_or.ok()) return FailWith(kWho, session_or.status());
  if (Interrupted()) {
    if (json) std::printf("{\"text\":\"\",\"finish_reason\":\"interrupted\",\"output_ids\":[]}\n");
    std::fprintf(stderr, "interrupted (Ctrl-C) while loading the model\n");
    return 130;
  }
  Engine& engine = *session_or->engine;
  const size_t index = session_or->index;
  const std::string& path = session_or->path;
  const double load_ms = session_or->load_ms;
  const LoadedModel& loaded = engine.model(index);
  const Model& m = *loaded.model;
  const Tokenizer& tok = *loaded.tokenizer;

  // Flags of the other kind of model would be silently ignored: the factory refuses the decoding
  // ones (MakeDecoder below); --visual acts on the CLI's own output. (--stop and --ignore-eos act
  // on the text, for every kind, as in the server.)
  if (!m.config().needs_mask_token() && FlagGiven(cli, "--visual")) {
    return FailWith(kWho,
                    InvalidArgumentError("--visual applies to diffusion models; " + path + " (" +
                                         m.config().architecture + ") is an autoregressive model"));
  }

  // Prompt ids: given directly, or text (optionally through the chat template).
  const auto tok_start = std::chrono::steady_clock::now();
  std::vector<int32_t> ids;
  bool used_chat = false;
  if (!prompt_text) {
    auto parsed = ParseIds(prompt_ids);
    if (!parsed.ok()) return FailWith(kWho, parsed.status());
    ids = *std::move(parsed);
  } else {
    const std::string& user_text = *prompt_text;
    const bool has_template = !tok.chat_template().empty();
    for (const char* flag : {"--chat", "--system"}) {
      if (!has_template && FlagGiven(cli, flag)) {
        return FailWith(kWho, FailedPreconditionError(
                                  std::string(flag) + ": " + path +
                                  " has no chat template (tokenizer.chat_template): it is a base "
                                  "model; drop " +
                                  flag));
      }
    }
    if ((!suffix.empty() || !suffix_ids.empty()) && (chat || !system.empty())) {
      return FailWith(kWho, InvalidArgumentError("--suffix (infilling) continues a plain prompt: "
                                                 "drop --chat and --system"));
    }
    used_chat = suffix.empty() && suffix_ids.empty() && (chat || (has_template && !no_chat));
    std::vector<ChatMessage> msgs;
    if (!system.empty()) msgs.push_back({"system", system});
    msgs.push_back({"user", user_text});
    auto encoded = EncodePrompt(tok, m.config().needs_mask_token(), msgs, used_chat);
    if (!encoded.ok()) return FailWith(kWho, encoded.status());
    ids = *std::move(encoded);
  }
  std::vector<int32_t> suffix_tokens;
  std::string suffix_text = suffix;
  if (FlagGiven(cli, "--suffix-ids")) {
    auto parsed = ParseIds(suffix_ids, "--suffix-ids");
    if (!parsed.ok()) return FailWith(kWho, parsed.status());
    suffix_tokens = *std::move(parsed);
    suffix_text = tok.Decode(suffix_tokens, /*skip_special=*/false);
  } else if (!suffix.empty()) {
    suffix_tokens = tok.Encode(suffix, /*add_special=*/false, /*parse_special=*/false);
  }
  if (!suffix_tokens.empty()) {
    if (m.config().needs_mask_token()) {
      options.suffix = suffix_tokens;
      options.given.push_back({"suffix", FlagGiven(cli, "--suffix") ? "--suffix" : "--suffix-ids"});
    } else {
      const FimTokens fim = FindFimTokens(tok);
      if (!fim.ok()) {
        return FailWith(kWho, InvalidArgumentError(
                                  "--suffix (infilling) needs a diffusion model with bidirectional "
                                  "attention (LLaDA, Dream) or an autoregressive model with "
                                  "fill-in-the-middle tokens (<|fim_prefix|>, <fim_prefix>, "
                                  "<PRE>, ...); " +
                                  path + " has neither"));
      }
      const int32_t bos = tok.special().bos;
      const bool has_bos = bos >= 0 && !ids.empty() && ids.front() == bos;
      ids = FimPrompt(fim, std::span<const int32_t>(ids).subspan(has_bos ? 1 : 0), suffix_tokens,
                      has_bos ? bos : -1);
    }
  }
  const double tokenize_ms = MsSince(tok_start);
  if (Status st = constraint.Apply(tok, m.config().needs_mask_token(), &options); !st.ok()) {
    return FailWith(kWho, st);
  }
  if (Status st = SettleUntilDone(m.config(), path, static_cast<int64_t>(ids.size()), &options);
      !st.ok()) {
    return FailWith(kWho, st);
  }
  if (seed_drawn) PrintDrawnSeed(options);
  CatchInterrupt();
  GenerateRun run{engine, index, path, ids, used_chat, load_ms, tokenize_ms, seed_drawn};
  run.suffix_text = suffix_text;
  if (!m.config().needs_mask_token()) return RunArGeneration(*this, run, options);
  return RunDiffusionGeneration(*this, run, options);
}

}  // namespace unmask::tools
