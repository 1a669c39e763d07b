#include "cli/generate_command.h"

#include <chrono>
#include <cstdio>
#include <span>

#include "common/cli_util.h"
#include "common/decode_args.h"
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
  app.add_option("-p,--prompt", prompt, "prompt text (tokenized with the model's tokenizer)");
  app.add_option("--prompt-ids", prompt_ids,
                 "prompt as token ids, e.g. 1,2,3 (bypasses the tokenizer and the chat template)")
      ->excludes("--prompt")
      ->type_name("IDS");
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
  // -p "" is a prompt: generation starts from BOS alone, as in llama2.c and llama.cpp.
  const CLI::Option* prompt_opt = cli != nullptr ? cli->get_option_no_throw("--prompt") : nullptr;
  const bool prompt_given = !prompt.empty() || (prompt_opt != nullptr && prompt_opt->count() > 0);
  const CLI::Option* ids_opt = cli != nullptr ? cli->get_option_no_throw("--prompt-ids") : nullptr;
  if (ids_opt != nullptr && ids_opt->count() > 0 && prompt_ids.empty()) {
    return FailWith(kWho,
                    InvalidArgumentError("--prompt-ids is empty: give token ids such as 1,2,3"));
  }
  if (!prompt_given && prompt_ids.empty()) {
    return FailWith(
        kWho,
        InvalidArgumentError(
            "no prompt: give one with -p TEXT (-p \"\" starts from BOS) or --prompt-ids 1,2,3"));
  }
  auto options_or = DecodeOptionsFromFlags(*cli, diffusion, ar, dream);
  if (!options_or.ok()) return FailWith(kWho, options_or.status());
  DecodeOptions options = *std::move(options_or);
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
  // ones (MakeDecoder below); these act on the CLI's own output.
  {
    const bool is_diffusion = m.config().needs_mask_token();  // full-canvas or block diffusion
    const std::string what = path + " (" + m.config().architecture + ") is " +
                             (is_diffusion ? "a diffusion" : "an autoregressive") + " model";
    for (const char* name : {"--stop", "--ignore-eos"}) {
      if (is_diffusion && FlagGiven(cli, name)) {
        return FailWith(kWho, InvalidArgumentError(std::string(name) +
                                                   " applies to autoregressive models; " + what));
      }
    }
    if (!is_diffusion && FlagGiven(cli, "--visual")) {
      return FailWith(kWho, InvalidArgumentError("--visual applies to diffusion models; " + what));
    }
  }

  // Prompt ids: given directly, or text (optionally through the chat template).
  const auto tok_start = std::chrono::steady_clock::now();
  std::vector<int32_t> ids;
  bool used_chat = false;
  if (!prompt_ids.empty()) {
    auto parsed = ParseIds(prompt_ids);
    if (!parsed.ok()) return FailWith(kWho, parsed.status());
    ids = *std::move(parsed);
  } else {
    const bool has_template = !tok.chat_template().empty();
    if (chat && !has_template) {
      return FailWith(kWho, FailedPreconditionError("--chat: the model has no chat template "
                                                    "(tokenizer.chat_template); use --no-chat"));
    }
    used_chat = chat || (has_template && !no_chat);
    std::string text = prompt;
    if (used_chat) {
      const ChatMessage msg{"user", prompt};
      auto rendered = tok.ApplyChatTemplate(std::span<const ChatMessage>(&msg, 1), true);
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
    if (!prompt.empty() && tok.Encode(prompt, false, false).empty()) {
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
  const GenerateRun run{engine, index, path, ids, used_chat, load_ms, tokenize_ms};
  if (!m.config().needs_mask_token()) return RunArGeneration(*this, run, options);
  return RunDiffusionGeneration(*this, run, options);
}

}  // namespace unmask::tools
