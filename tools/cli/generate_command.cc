#include "cli/generate_command.h"

#include <chrono>
#include <cstdio>
#include <random>
#include <span>

#include "cli/prompt_source.h"
#include "common/cli_util.h"
#include "common/decode_args.h"
#include "common/interrupt.h"
#include "core/clock.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask generate";

// Parses "1,2,3" (spaces allowed). InvalidArgument naming the bad item.
StatusOr<std::vector<int32_t>> ParseIds(const std::string& text) {
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
      return InvalidArgumentError("--prompt-ids: '" + item +
                                  "' is not a token id (expected a comma-separated list of "
                                  "non-negative integers such as 1,2,3)");
    }
    ids.push_back(static_cast<int32_t>(v));
    start = end + 1;
  }
  return ids;
}

}  // namespace

void GenerateCommand::AddTo(CLI::App& app) {
  cli = &app;
  model.AddTo(app);
  auto* p_opt =
      app.add_option("-p,--prompt", prompt,
                     "prompt text (tokenized with the model's tokenizer); - reads it from "
                     "standard input, as does a pipe when neither -p nor -f is given");
  auto* f_opt = app.add_option("-f,--file", prompt_file,
                               "read the prompt from a file (one trailing newline dropped, as "
                               "llama.cpp does)")
                    ->excludes(p_opt)
                    ->type_name("FILE");
  app.add_option("--prompt-ids", prompt_ids,
                 "prompt as token ids, e.g. 1,2,3 (bypasses the tokenizer and the chat template)")
      ->excludes(p_opt)
      ->excludes(f_opt)
      ->type_name("IDS");
  app.add_option("--system,--system-prompt", system,
                 "system message: the chat template gets it before the prompt (needs a model "
                 "with a chat template)");
  app.add_option("-c,--ctx-size", ctx_size,
                 "context in tokens that prompt + output may use (0: the model's context_length; "
                 "a larger value is refused: unmask does not extend a model's context)")
      ->check(IntegerIn(0, kMaxLength))
      ->capture_default_str();
  diffusion.allow_until_done = true;
  diffusion.AddTo(app);
  ar.AddTo(app);
  dream.AddTo(app);
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

int GenerateCommand::Run() const {
  const CLI::Option* ids_opt = cli != nullptr ? cli->get_option_no_throw("--prompt-ids") : nullptr;
  const bool ids_given = ids_opt != nullptr && ids_opt->count() > 0;
  if (ids_given && prompt_ids.empty()) {
    return FailWith(kWho,
                    InvalidArgumentError("--prompt-ids is empty: give token ids such as 1,2,3"));
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
  auto options_or = DecodeOptionsFromFlags(*cli, diffusion, ar, dream);
  if (!options_or.ok()) return FailWith(kWho, options_or.status());
  DecodeOptions options = *std::move(options_or);
  options.context_length = ctx_size;
  // One canvas rule with the server: -n is rounded up to whole blocks and the text cut back to -n
  // tokens; a default block longer than -n shrinks to it.
  options.round_canvas = true;
  if (!FlagGiven(cli, "--block-length") && options.max_tokens > 0 &&
      options.max_tokens < options.diffusion.block_length) {
    options.diffusion.block_length = options.max_tokens;
  }
  // Sampling without --seed draws a seed, as llama.cpp does, and prints it (below) so that the run
  // can be repeated.
  const bool seed_drawn = !FlagGiven(cli, "--seed");
  if (seed_drawn) {
    const uint64_t seed =
        (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    options.diffusion.seed = seed;
    options.ar.sampling.seed = seed;
  }
  for (GivenParam& g : options.given) {
    if (g.name == "ctx_size") g = {"context_length", "-c/--ctx-size"};
  }
  auto engine_or = model.MakeEngine();
  if (!engine_or.ok()) return FailWith(kWho, engine_or.status());
  Engine& engine = **engine_or;
  auto mode = model.weight_mode();
  if (!mode.ok()) return FailWith(kWho, mode.status());

  const auto load_start = std::chrono::steady_clock::now();
  auto path_or = model.Path();
  if (!path_or.ok()) return FailWith(kWho, path_or.status());
  const std::string path = *path_or;
  auto index_or = LoadModelWithProgress(engine, path, *mode);
  if (!index_or.ok()) return FailWith(kWho, index_or.status());
  const size_t index = *index_or;
  const LoadedModel& loaded = engine.model(index);
  const double load_ms = MsSince(load_start);
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
    used_chat = chat || (has_template && !no_chat);
    std::string text = user_text;
    if (used_chat) {
      std::vector<ChatMessage> msgs;
      if (!system.empty()) msgs.push_back({"system", system});
      msgs.push_back({"user", user_text});
      auto rendered = tok.ApplyChatTemplate(msgs, true);
      if (!rendered.ok()) return FailWith(kWho, rendered.status().WithContext("chat template"));
      text = *std::move(rendered);
    }
    // The template writes BOS itself when the model wants one; do not add a second.
    const int32_t bos = tok.special().bos;
    const bool starts_with_bos = bos >= 0 && text.rfind(std::string(tok.TokenText(bos)), 0) == 0;
    ids = tok.Encode(text, !(used_chat && starts_with_bos), used_chat);
    // The user's text must reach the model: a vocabulary that cannot encode it would otherwise
    // leave only the chat template.
    if (ids.empty()) {
      return FailWith(kWho,
                      InvalidArgumentError(
                          "the prompt is empty and this model's tokenizer adds no BOS token "
                          "(tokenizer.ggml.add_bos_token), so there is nothing to generate from"));
    }
    if (!user_text.empty() && tok.Encode(user_text, false, false).empty()) {
      return FailWith(kWho,
                      InvalidArgumentError("the prompt text produced no tokens with this model's "
                                           "vocabulary"));
    }
    // A mask token in a text prompt (e.g. its text pasted into a chat message) would be denoised
    // as part of the canvas; --prompt-ids allows that deliberately, text prompts do not.
    for (int32_t id : ids) {
      if (m.config().needs_mask_token() && id == tok.special().mask) {
        return FailWith(
            kWho, InvalidArgumentError(
                      "the prompt contains the mask token '" + std::string(tok.TokenText(id)) +
                      "'; use --prompt-ids to place mask tokens in the prompt on purpose"));
      }
    }
  }
  const double tokenize_ms = MsSince(tok_start);
  // -n -1: until EOS or the context, for the models that decode until EOS.
  if (options.max_tokens == -1) {
    const DecoderKind kind = SelectDecoder(m.config(), options);
    const int64_t ctx =
        ctx_size > 0 ? std::min(ctx_size, m.config().context_length) : m.config().context_length;
    ModelConfig limited_view = m.config();
    limited_view.context_length = ctx;
    if (kind == DecoderKind::kDiffusion || kind == DecoderKind::kDream) {
      return FailWith(kWho, InvalidArgumentError(
                                "-n -1 (until EOS or the context) applies to autoregressive and "
                                "block-diffusion models; " +
                                path + " (" + m.config().architecture +
                                ") denoises a canvas of fixed length: give -n N"));
    }
    if (kind != DecoderKind::kAr) {
      const int64_t block = FlagGiven(cli, "--block-length") ? options.diffusion.block_length
                                                             : m.config().block_length;
      options.max_tokens =
          MaxTokensInContext(limited_view, kind, static_cast<int64_t>(ids.size()), block);
      if (options.max_tokens < 1) {
        return FailWith(kWho, OutOfRangeError("the prompt (" + std::to_string(ids.size()) +
                                              " tokens) leaves no room in the context of " +
                                              std::to_string(ctx) + " tokens"));
      }
    }
  }
  if (seed_drawn) {
    const double t = options.diffusion.temperature;
    if (t > 0 || options.remasking == "random") {
      std::fprintf(stderr, "%s: seed %llu (drawn at random; --seed %llu repeats this run)\n", kWho,
                   static_cast<unsigned long long>(options.diffusion.seed),
                   static_cast<unsigned long long>(options.diffusion.seed));
    }
  }
  CatchInterrupt();
  const GenerateRun run{engine, index, path, ids, used_chat, load_ms, tokenize_ms, seed_drawn};
  if (!m.config().needs_mask_token()) return RunArGeneration(*this, run, options);
  return RunDiffusionGeneration(*this, run, options);
}

}  // namespace unmask::tools
