// `unmask generate` with an autoregressive model: KV-cached decoding, the sampling chain, stop
// strings, and speculative decoding (--spec lookup|draft|diffusion|medusa). Text streams to stdout
// as it is generated (unless --json).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "cli/generate_command.h"
#include "common/cli_util.h"
#include "common/draft_heads.h"
#include "common/interrupt.h"
#include "common/moe_report.h"
#include "common/terminal.h"
#include "decode/decoder_ar.h"
#include "decode/drafter.h"
#include "model/draft_file.h"
#include "sampling/stop_strings.h"
#include "tokenizer/unicode_util.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask generate";

// The drafter's model and tokenizer must agree with the target's on every token.
Status CheckSameVocabulary(const Tokenizer& target, const Tokenizer& draft, int64_t target_vocab,
                           int64_t draft_vocab) {
  if (target_vocab != draft_vocab || target.vocab_size() != draft.vocab_size()) {
    return InvalidArgumentError("the draft model's vocabulary (" + std::to_string(draft_vocab) +
                                " tokens) differs from the target's (" +
                                std::to_string(target_vocab) + ")");
  }
  for (int32_t id = 0; id < static_cast<int32_t>(target.vocab_size()); ++id) {
    if (target.TokenText(id) != draft.TokenText(id)) {
      return InvalidArgumentError("the draft model's token " + std::to_string(id) + " is '" +
                                  std::string(draft.TokenText(id)) + "', the target's is '" +
                                  std::string(target.TokenText(id)) + "'");
    }
  }
  return Status::Ok();
}

}  // namespace

int RunArGeneration(const GenerateCommand& cmd, const GenerateRun& run, DecodeOptions options) {
  const LoadedModel& loaded = run.engine.model(run.index);
  const Model& m = *loaded.model;
  const Tokenizer& tok = *loaded.tokenizer;
  const std::vector<int32_t>& ids = run.ids;
  const std::string& path = run.path;
  const int32_t previous = ids.empty() ? kNoToken : ids.back();  // the text continues the prompt

  // Speculative decoding: the drafter (and its model) live as long as the generation.
  LoadedModel draft_loaded;
  std::unique_ptr<Drafter> drafter;
  bool draft_is_diffusion = false;
  if (!cmd.ar.draft_model.empty()) {
    auto mode = cmd.model.weight_mode();
    if (!mode.ok()) return FailWith(kWho, mode.status());
    auto d = LoadModelWithProgress(cmd.ar.draft_model, *mode, loaded.backend);
    if (!d.ok()) return FailWith(kWho, d.status().WithContext("--draft-model"));
    draft_loaded = std::move(d).value();
    draft_is_diffusion = draft_loaded.model->config().is_diffusion();
    if (Status s = CheckSameVocabulary(tok, *draft_loaded.tokenizer, m.config().vocab_size,
                                       draft_loaded.model->config().vocab_size);
        !s.ok()) {
      return FailWith(kWho, s.WithContext("--draft-model " + cmd.ar.draft_model));
    }
  }
  std::string heads_kind = "medusa";
  if (!cmd.ar.draft_heads.empty()) {
    auto kind = DraftFileKind(cmd.ar.draft_heads);
    if (!kind.ok()) return FailWith(kWho, kind.status().WithContext("--draft-heads"));
    heads_kind = *kind;
  }
  const std::string spec = cmd.ar.SpecMode(draft_is_diffusion, heads_kind);
  if (Status s = cmd.ar.CheckModeFlags(spec); !s.ok()) return FailWith(kWho, s);
  tools::DraftHeads heads;
  if (spec != "medusa" && spec != "eagle" && !cmd.ar.draft_heads.empty()) {
    return FailWith(kWho, InvalidArgumentError("--draft-heads is for --spec medusa or eagle, not "
                                               "--spec " +
                                               spec));
  }
  if (spec == "lookup" && !cmd.ar.draft_model.empty()) {
    return FailWith(kWho, InvalidArgumentError("--draft-model is for --spec draft or diffusion; "
                                               "--spec lookup drafts from the prompt"));
  }
  if (spec == "lookup") {
    options.speculative_lookup = true;
  } else if (spec == "medusa" || spec == "eagle") {
    if (!cmd.ar.draft_model.empty()) {
      return FailWith(kWho, InvalidArgumentError("--spec " + spec +
                                                 " drafts with --draft-heads, "
                                                 "not --draft-model (a separate model)"));
    }
    auto h = tools::LoadDraftHeads(spec, cmd.ar.draft_heads, path, m.config());
    if (!h.ok()) return FailWith(kWho, h.status().WithContext("--spec " + spec));
    heads = std::move(h).value();
    heads.Use(m, cmd.ar.draft_p_min, options);
    const bool draft_max_given =
        cmd.ar.draft_max_option != nullptr && cmd.ar.draft_max_option->count() > 0;
    if (heads.medusa != nullptr && draft_max_given &&
        cmd.ar.draft_max > heads.medusa->head_count()) {
      // Each Medusa head drafts one position: the file's head count is the most a step drafts.
      std::fprintf(stderr, "note: --draft-max %d is more than %s's %lld heads: drafting %lld\n",
                   static_cast<int>(cmd.ar.draft_max), path.c_str(),
                   static_cast<long long>(heads.medusa->head_count()),
                   static_cast<long long>(heads.medusa->head_count()));
    }
    options.eagle.depth = cmd.ar.draft_depth;
    options.eagle.top_k = cmd.ar.draft_topk;
    if (spec == "eagle") {
      // A tree has more nodes than a chain: EAGLE's own default unless --draft-max is given.
      options.eagle.total_tokens =
          draft_max_given ? cmd.ar.draft_max : EagleDrafterParams{}.total_tokens;
      options.ar.draft_max = options.eagle.total_tokens;
    }
  } else if (spec == "draft" || spec == "diffusion") {
    if (!draft_loaded.model) {
      return FailWith(kWho,
                      InvalidArgumentError("--spec " + spec + " needs --draft-model FILE.gguf"));
    }
    if (spec == "draft") {
      auto d = MakeModelDrafter(draft_loaded.model.get(), {cmd.ar.draft_p_min});
      if (!d.ok()) return FailWith(kWho, d.status().WithContext("--spec draft"));
      drafter = std::move(d).value();
    } else {
      DiffusionDrafterParams dp;
      dp.mask_token = draft_loaded.tokenizer->special().mask;
      dp.steps = cmd.ar.draft_steps;
      dp.p_min = cmd.ar.draft_p_min;
      auto d = MakeDiffusionDrafter(draft_loaded.model.get(), dp);
      if (!d.ok()) return FailWith(kWho, d.status().WithContext("--spec diffusion"));
      drafter = std::move(d).value();
    }
    options.drafter = drafter.get();
  }

  // As for diffusion: a length that cannot fit is an error, not a silent cut (--n-predict -1
  // generates until EOS or a full context).
  auto built = run.engine.MakeDecoder(run.index, ids, options);
  if (!built.ok()) {
    Status s = built.status();
    if (s.code() == StatusCode::kOutOfRange) {
      const int64_t ctx = m.config().context_length;
      const int64_t limit =
          options.context_length > 0 ? std::min(options.context_length, ctx) : ctx;
      const int64_t room = limit - static_cast<int64_t>(ids.size());
      s = room <= 0 ? OutOfRangeError("the prompt (" + std::to_string(ids.size()) +
                                      " tokens) fills the context of " + std::to_string(limit) +
                                      " tokens: nothing can be generated; shorten the prompt")
                    : OutOfRangeError(s.message() + "; at most " + std::to_string(room) +
                                      " tokens fit after this prompt: -n " + std::to_string(room) +
                                      ", or -n -1 to stop when the context is full");
    }
    return FailWith(kWho, s);
  }
  const ArParams& params = built->ar;
  const ArDecoder& dec = static_cast<const ArDecoder&>(*built->decoder);
  const Drafter* active_drafter = dec.drafter();

  // Text of the generated tokens (end-of-generation tokens excluded), cut at a stop string;
  // streamed to stdout as it grows unless --json.
  // Constrained output is printed as the grammar matched it: the tokens' bytes, no clean-up.
  const bool clean_spaces = !options.make_constraint;
  std::string text;
  size_t printed = 0;
  bool stopped_by_string = false;
  size_t kept_tokens = 0;  // output_ids: with a stop string, up to the token that completed it
  auto on_step = [&](const Decoder& d, const DecodeStep&) {
    std::vector<int32_t> out(d.generated().begin(), d.generated().end());
    kept_tokens = out.size();
    if (!out.empty() && tok.IsEog(out.back()) && !params.ignore_eos) out.pop_back();
    text = tok.DecodeContinuation(previous, out, /*skip_special=*/true, clean_spaces);
    const size_t at = FindStopString(text, cmd.ar.stop);
    if (at != std::string::npos) {
      text.resize(at);
      stopped_by_string = true;
      // A speculative step may have committed tokens past the stop string: keep the shortest
      // prefix whose text contains it, which is where plain decoding stops.
      for (size_t n = 1; n <= out.size(); ++n) {
        const std::string prefix = tok.DecodeContinuation(
            previous, std::span<const int32_t>(out.data(), n), true, clean_spaces);
        if (FindStopString(prefix, cmd.ar.stop) != std::string::npos) {
          kept_tokens = n;
          break;
        }
      }
    }
    if (!cmd.json) {
      size_t end = text.size();
      if (!stopped_by_string && !d.Done()) {
        end -= std::max(PartialStopSuffix(text, cmd.ar.stop), unicode::IncompleteUtf8Tail(text));
      }
      if (end > printed) {
        std::fwrite(text.data() + printed, 1, end - printed, stdout);
        std::fflush(stdout);
        printed = end;
      }
    }
    return !stopped_by_string && !Interrupted();
  };
  Decoder* const one[1] = {built->decoder.get()};
  auto stats_or = run.engine.Run(run.index, one, on_step);
  if (!stats_or.ok()) return FailWith(kWho, stats_or.status());
  const GenerationStats& st = *stats_or;
  const DrafterStats& drafter_stats = st.drafter;
  const std::string finish =
      Interrupted() ? "interrupted" : std::string(ArFinishName(dec.finish()));
  if (run.reply != nullptr) *run.reply = text;

  if (cmd.json) {
    nlohmann::json j;
    j["text"] = text;
    j["finish_reason"] = finish;
    if (!run.suffix_text.empty()) j["suffix"] = run.suffix_text;
    j["prompt_ids"] = ids;
    j["output_ids"] = std::vector<int32_t>(
        dec.generated().begin(), dec.generated().begin() + static_cast<ptrdiff_t>(kept_tokens));
    j["nfe"] = st.nfe;
    j["tokens_per_second"] = st.tokens_per_second();
    j["decode_tokens_per_second"] = st.decode_tokens_per_second();
    j["tokens_per_forward"] = st.tokens_per_forward();
    j["gflops_per_second"] = st.forward_ms > 0 ? st.flops / st.forward_ms / 1e6 : 0.0;
    j["flops"] = st.flops;
    j["bytes"] = st.bytes;
    j["arithmetic_intensity"] = st.arithmetic_intensity();
    if (m.config().is_moe()) j["moe"] = MoeJson(m.config(), st);
    j["timings"] = {{"load_ms", run.load_ms},      {"tokenize_ms", run.tokenize_ms},
                    {"ttft_ms", st.ttft_ms},       {"prefill_ms", st.ttft_ms},
                    {"generate_ms", st.total_ms},  {"forward_ms", st.forward_ms},
                    {"draft_ms", drafter_stats.ms}};
    if (active_drafter != nullptr) {
      j["speculative"] = {
          {"mode", spec},
          // What a step can draft: Medusa drafts one token per head.
          {"draft_max", heads.medusa != nullptr
                            ? std::min<int64_t>(params.draft_max, heads.medusa->head_count())
                            : int64_t{params.draft_max}},
          {"drafted", st.speculative.drafted},
          {"accepted", st.speculative.accepted},
          {"acceptance_rate", st.speculative.acceptance_rate()},
          {"target_forwards", st.nfe},
          {"draft_forwards", drafter_stats.forwards},
          {"draft_model", heads.path.empty() ? cmd.ar.draft_model : heads.path}};
    }
    j["model"] = {{"path", path},
                  {"architecture", m.config().architecture},
                  {"parameters", m.config().NumParameters()}};
    const SamplingParams& sp = params.sampling;
    j["params"] = {{"n_predict", params.n_predict},
                   {"temperature", sp.temperature},
                   {"top_k", sp.top_k},
                   {"top_p", sp.top_p},
                   {"min_p", sp.min_p},
                   {"repeat_penalty", sp.repeat_penalty},
                   {"repeat_last_n", sp.repeat_last_n},
                   {"frequency_penalty", sp.frequency_penalty},
                   {"presence_penalty", sp.presence_penalty},
                   {"seed", sp.seed},
                   {"ignore_eos", params.ignore_eos},
                   {"stop", cmd.ar.stop},
                   {"chat", run.used_chat}};
    j["backend"] = m.backend().Describe();
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    if (printed < text.size()) std::fwrite(text.data() + printed, 1, text.size() - printed, stdout);
    std::printf("%s\n", run.suffix_text.c_str());
    std::fflush(stdout);  // the text before the statistics on a shared terminal
    if (Interrupted()) std::fprintf(stderr, "interrupted (Ctrl-C)\n");
    std::string spec_info;
    if (active_drafter != nullptr) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), " | %s: %lld/%lld drafts accepted (%.0f%%)", spec.c_str(),
                    static_cast<long long>(st.speculative.accepted),
                    static_cast<long long>(st.speculative.drafted),
                    100.0 * st.speculative.acceptance_rate());
      spec_info = buf;
    }
    std::fprintf(stderr,
                 "%lld tokens in %.2f s: %.2f tokens/s (decode %.2f) | TTFT %.0f ms | %lld "
                 "forwards (%.2f tokens/forward)%s | %s\n",
                 static_cast<long long>(st.generated_tokens), st.total_ms / 1000.0,
                 st.tokens_per_second(), st.decode_tokens_per_second(), st.ttft_ms,
                 static_cast<long long>(st.nfe), st.tokens_per_forward(), spec_info.c_str(),
                 m.backend().Describe().c_str());
    if (m.config().is_moe()) std::fprintf(stderr, "%s\n", MoeSummary(m.config(), st).c_str());
  }
  std::fflush(stdout);
  return Interrupted() ? 130 : 0;
}

}  // namespace unmask::tools
