#include "cli/generate_command.h"

#include "cli/diffusion_output.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>

#include "cli/diffusion_output.h"
#include "common/cli_util.h"
#include "common/terminal.h"
#include "core/parallel.h"
#include "decode/decoder_diffusion.h"
#include "engine/generate.h"

namespace unmask::tools {
namespace {

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int Fail(const Status& s) {
  PrintError("unmask generate", s.message());
  return 1;
}

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

// The generated part of the canvas for --visual: masks dimmed, special tokens dimmed by name.
// Each piece is decoded as a continuation (a SentencePiece word keeps its leading space).
std::string RenderCanvas(const DiffusionDecoder& dec, const Tokenizer& tok, int32_t previous) {
  std::string out;
  const int32_t mask = dec.token_ids().mask;
  for (int32_t id : dec.generated()) {
    if (id == mask) {
      out += StyleDim() + "\u2591" + StyleReset();
    } else if (tok.IsControl(id)) {
      out += StyleDim() + std::string(tok.TokenText(id)) + StyleReset();
    } else {
      const int32_t one[1] = {id};
      // Control bytes (random-weight models produce them) would corrupt the terminal.
      for (char c : tok.DecodeContinuation(previous, one, false)) {
        const unsigned char u = static_cast<unsigned char>(c);
        out += (u < 0x20 && c != '\n') || u == 0x7f ? std::string("\u00b7") : std::string(1, c);
      }
    }
  }
  return out;
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
    return Fail(InvalidArgumentError("--prompt-ids is empty: give token ids such as 1,2,3"));
  }
  if (!prompt_given && prompt_ids.empty()) {
    return Fail(InvalidArgumentError(
        "no prompt: give one with -p TEXT (-p \"\" starts from BOS) or --prompt-ids 1,2,3"));
  }
  auto params_or = diffusion.Resolve();
  if (!params_or.ok()) return Fail(params_or.status());
  const DiffusionParams params = *params_or;
  auto backend = model.MakeBackend();
  if (!backend.ok()) return Fail(backend.status());
  auto mode = model.weight_mode();
  if (!mode.ok()) return Fail(mode.status());

  const auto load_start = std::chrono::steady_clock::now();
  auto path_or = model.Path();
  if (!path_or.ok()) return Fail(path_or.status());
  const std::string path = *path_or;
  auto loaded_or = LoadModelWithProgress(path, *mode, *backend);
  if (!loaded_or.ok()) return Fail(loaded_or.status());
  LoadedModel& loaded = *loaded_or;
  const double load_ms = MsSince(load_start);
  const Model& m = *loaded.model;
  const Tokenizer& tok = *loaded.tokenizer;

  // Flags of the other kind of model would be silently ignored: refuse them instead.
  {
    static constexpr const char* kArOnly[] = {"--n-predict",
                                              "--top-k",
                                              "--top-p",
                                              "--min-p",
                                              "--repeat-penalty",
                                              "--repeat-last-n",
                                              "--frequency-penalty",
                                              "--presence-penalty",
                                              "--stop",
                                              "--ignore-eos",
                                              "--spec",
                                              "--draft-model",
                                              "--draft-max",
                                              "--draft-p-min",
                                              "--draft-steps",
                                              "--lookup-ngram-max"};
    static constexpr const char* kDiffusionOnly[] = {
        "--steps",       "--block-length",   "--remasking",
        "--cfg-scale",   "--logits-eos-inf", "--confidence-eos-eot-inf",
        "--visual",      "--cache",          "--prefix-look",
        "--after-look",  "--commit",         "--threshold",
        "--factor",      "--low-threshold",  "--credit-alpha",
        "--credit-beta", "--credit-gamma",   "--early-stop"};
    const bool is_diffusion = m.config().is_diffusion();
    const bool is_dream = m.config().architecture == "dream";
    if (Status s = CheckDreamFlags(*this, is_dream, path, m.config().architecture); !s.ok()) {
      return Fail(s);
    }
    auto given = [&](const char* name) {
      const CLI::Option* o = cli != nullptr ? cli->get_option_no_throw(name) : nullptr;
      return o != nullptr && o->count() > 0;
    };
    for (const char* name : is_diffusion ? std::span<const char* const>(kArOnly)
                                         : std::span<const char* const>(kDiffusionOnly)) {
      const std::string_view flag(name);
      // Dream's reference sampler has top-k/top-p (checked by CheckDreamFlags).
      if (is_dream && (flag == "--top-k" || flag == "--top-p")) continue;
      if (given(name)) {
        return Fail(InvalidArgumentError(
            std::string(name) + " applies to " + (is_diffusion ? "autoregressive" : "diffusion") +
            " models; " + path + " is " + (is_diffusion ? "a diffusion" : "an autoregressive") +
            " model (" + m.config().architecture + ")"));
      }
    }
  }

  // Prompt ids: given directly, or text (optionally through the chat template).
  const auto tok_start = std::chrono::steady_clock::now();
  std::vector<int32_t> ids;
  bool used_chat = false;
  if (!prompt_ids.empty()) {
    auto parsed = ParseIds(prompt_ids);
    if (!parsed.ok()) return Fail(parsed.status());
    ids = *std::move(parsed);
  } else {
    const bool has_template = !tok.chat_template().empty();
    if (chat && !has_template) {
      return Fail(
          FailedPreconditionError("--chat: the model has no chat template "
                                  "(tokenizer.chat_template); use --no-chat"));
    }
    used_chat = chat || (has_template && !no_chat);
    std::string text = prompt;
    if (used_chat) {
      const ChatMessage msg{"user", prompt};
      auto rendered = tok.ApplyChatTemplate(std::span<const ChatMessage>(&msg, 1), true);
      if (!rendered.ok()) return Fail(rendered.status().WithContext("chat template"));
      text = *std::move(rendered);
    }
    // The template writes BOS itself when the model wants one; do not add a second.
    const int32_t bos = tok.special().bos;
    const bool starts_with_bos = bos >= 0 && text.rfind(std::string(tok.TokenText(bos)), 0) == 0;
    ids = tok.Encode(text, !(used_chat && starts_with_bos), used_chat);
    // The user's text must reach the model: a vocabulary that cannot encode it would otherwise
    // leave only the chat template.
    if (ids.empty()) {
      return Fail(InvalidArgumentError(
          "the prompt is empty and this model's tokenizer adds no BOS token "
          "(tokenizer.ggml.add_bos_token), so there is nothing to generate from"));
    }
    if (!prompt.empty() && tok.Encode(prompt, false, false).empty()) {
      return Fail(
          InvalidArgumentError("the prompt text produced no tokens with this model's "
                               "vocabulary"));
    }
    // A mask token in a text prompt (e.g. its text pasted into a chat message) would be denoised
    // as part of the canvas; --prompt-ids allows that deliberately, text prompts do not.
    for (int32_t id : ids) {
      if (m.config().is_diffusion() && id == tok.special().mask) {
        return Fail(InvalidArgumentError(
            "the prompt contains the mask token '" + std::string(tok.TokenText(id)) +
            "'; use --prompt-ids to place mask tokens in the prompt on purpose"));
      }
    }
  }
  const double tokenize_ms = MsSince(tok_start);
  if (!m.config().is_diffusion()) {
    return RunArGeneration(*this, loaded, path, ids, used_chat, load_ms, tokenize_ms);
  }
  if (m.config().architecture == "dream" && !WantsBlockDecoder(*this)) {
    return RunDreamGeneration(*this, loaded, path, ids, used_chat, load_ms, tokenize_ms);
  }

  DiffusionTokenIds dids{tok.special().mask, tok.special().eos, tok.special().eot};
  auto dec_or = DiffusionDecoder::Create(params, dids, ids, m.config().context_length,
                                         m.config().vocab_size, m.config().shift_logits);
  if (!dec_or.ok()) return Fail(dec_or.status());
  DiffusionDecoder& dec = *dec_or;

  Workspace ws;
  ProgressLine progress("generating");
  LiveBlock live;
  const auto gen_start = std::chrono::steady_clock::now();
  auto on_step = [&](const DiffusionDecoder& d, const DiffusionStepResult& r) {
    const double secs = MsSince(gen_start) / 1000.0;
    const int64_t committed = params.gen_length - d.num_masked();
    char info[160];
    std::snprintf(info, sizeof(info), "step %lld  block %lld/%lld  %.2f tokens/s",
                  static_cast<long long>(r.step + 1), static_cast<long long>(r.block + 1),
                  static_cast<long long>(params.num_blocks()),
                  secs > 0 ? static_cast<double>(committed) / secs : 0.0);
    if (visual) {
      // On a terminal the canvas is redrawn in place; into a file or pipe only the final canvas
      // is written (not one frame per step).
      if (!StderrIsTerminal() && !d.Done()) return;
      live.Draw(StyleBold() + std::string(info) + StyleReset() + "\n" +
                RenderCanvas(d, tok, ids.back()));
    } else {
      progress.Update(d.Done() ? params.gen_length : committed, params.gen_length, info);
    }
  };
  auto stats_or = RunDiffusion(m, dec, ws, on_step);
  progress.Finish();
  if (!stats_or.ok()) return Fail(stats_or.status());

  const nlohmann::json j = {{"gen_length", params.gen_length},
                            {"steps", params.steps},
                            {"block_length", params.block_length},
                            {"temperature", params.temperature},
                            {"cfg_scale", params.cfg_scale},
                            {"remasking", std::string(RemaskingName(params.remasking))},
                            {"logits_eos_inf", params.logits_eos_inf},
                            {"confidence_eos_eot_inf", params.confidence_eos_eot_inf},
                            {"seed", params.seed},
                            {"cache", std::string(CacheModeName(params.cache))},
                            {"commit", std::string(CommitRuleName(params.commit))},
                            {"threshold", params.threshold},
                            {"factor", params.factor},
                            {"low_threshold", params.low_threshold},
                            {"prefix_look", params.prefix_look},
                            {"after_look", params.after_look},
                            {"credit_alpha", params.credit_alpha},
                            {"credit_beta", params.credit_beta},
                            {"credit_gamma", params.credit_gamma},
                            {"early_stop", params.early_stop},
                            {"shift_logits", m.config().shift_logits},
                            {"chat", used_chat}};
  return PrintDiffusionResult(loaded, path, ids, dec.generated(), *stats_or, load_ms, tokenize_ms,
                              j, json);
}

}  // namespace unmask::tools
