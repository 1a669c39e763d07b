// `unmask generate` with a diffusion model: the LLaDA block decoder (every cache mode and commit
// rule), SDAR's decoding for block-diffusion models (decode/decoder_block_diffusion.h), or, for
// Dream models, Dream's reference sampler (--alg, --eps, --alg-temp, and --steps,
// --gen-length, --temperature, --seed, --top-p, --top-k) unless a block-decoder flag
// (--block-length, --cache, --commit, ...) selects the block decoder with shifted logits. Which
// one runs, and every parameter check, is the decoder factory's (decode/decoder_factory.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/diffusion_output.h"
#include "cli/generate_command.h"
#include "common/cli_util.h"
#include "common/interrupt.h"
#include "common/terminal.h"
#include "core/clock.h"
#include "engine/text_stream.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask generate";

// The generated part of the canvas for --visual: masks dimmed, special tokens dimmed by name.
// Each piece is decoded as a continuation (a SentencePiece word keeps its leading space).
std::string RenderCanvas(const Decoder& dec, const Tokenizer& tok, int32_t previous) {
  std::string out;
  const int32_t mask = dec.mask_id();
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

// The JSON "params" of the decoder that ran.
nlohmann::json ParamsJson(const BuiltDecoder& b, const ModelConfig& c, bool used_chat) {
  if (b.kind == DecoderKind::kBlockDiffusion) {
    const BlockParams& p = b.block;
    return {{"decoder", "block_diffusion"},
            {"gen_length", p.gen_length},
            {"block_length", p.block_length},
            {"denoising_steps", p.denoising_steps},
            {"remasking", std::string(BlockRemaskingName(p.remasking))},
            {"confidence_threshold", p.confidence_threshold},
            {"eb_threshold", p.eb_threshold},
            {"edit_threshold", p.edit_threshold},
            {"max_post_edit_steps", p.max_post_edit_steps},
            {"overcommit", p.overcommit},
            {"separate_store", p.separate_store},
            {"temperature", p.temperature},
            {"top_k", p.top_k},
            {"top_p", p.top_p},
            {"seed", p.seed},
            {"stop_ids", p.stop_ids},
            {"chat", used_chat}};
  }
  if (b.kind == DecoderKind::kFastDllmV2) {
    const FastDllmV2Params& p = b.fast_dllm_v2;
    return {{"decoder", "fast_dllm_v2"},
            {"max_new_tokens", p.max_new_tokens},
            {"block_length", p.block_size},
            {"small_block_size", p.small_block_size},
            {"threshold", p.threshold},
            {"temperature", p.temperature},
            {"top_p", p.top_p},
            {"seed", p.seed},
            {"stop_token", p.stop_token},
            {"pad_token", p.pad_token},
            {"shift_logits", c.shift_logits},
            {"chat", used_chat}};
  }
  if (b.kind == DecoderKind::kDream) {
    const DreamParams& p = b.dream;
    return {{"decoder", "dream"},
            {"gen_length", p.gen_length},
            {"steps", p.steps},
            {"alg", std::string(DreamAlgName(p.alg))},
            {"eps", p.eps},
            {"alg_temp", p.alg_temp},
            {"temperature", p.temperature},
            {"top_p", p.top_p},
            {"top_k", p.top_k},
            {"seed", p.seed},
            {"shift_logits", c.shift_logits},
            {"chat", used_chat}};
  }
  const DiffusionParams& p = b.diffusion;
  return {{"decoder", "diffusion"},
          {"gen_length", p.gen_length},
          {"steps", p.steps},
          {"block_length", p.block_length},
          {"temperature", p.temperature},
          {"cfg_scale", p.cfg_scale},
          {"remasking", std::string(RemaskingName(p.remasking))},
          {"logits_eos_inf", p.logits_eos_inf},
          {"confidence_eos_eot_inf", p.confidence_eos_eot_inf},
          {"seed", p.seed},
          {"cache", std::string(CacheModeName(p.cache))},
          {"commit", std::string(CommitRuleName(p.commit))},
          {"threshold", p.threshold},
          {"factor", p.factor},
          {"low_threshold", p.low_threshold},
          {"prefix_look", p.prefix_look},
          {"after_look", p.after_look},
          {"credit_alpha", p.credit_alpha},
          {"credit_beta", p.credit_beta},
          {"credit_gamma", p.credit_gamma},
          {"early_stop", p.early_stop},
          {"shift_logits", c.shift_logits},
          {"chat", used_chat}};
}

}  // namespace

int RunDiffusionGeneration(const GenerateCommand& cmd, const GenerateRun& run,
                           const DecodeOptions& options) {
  const LoadedModel& loaded = run.engine.model(run.index);
  const Tokenizer& tok = *loaded.tokenizer;
  auto built = run.engine.MakeDecoder(run.index, run.ids, options);
  if (!built.ok()) return FailWith(kWho, built.status());
  const int64_t gen_length = static_cast<int64_t>(built->decoder->generated().size());
  const int64_t blocks = built->kind == DecoderKind::kDiffusion ? built->diffusion.num_blocks()
                         : built->kind == DecoderKind::kBlockDiffusion
                             ? built->block.num_blocks(static_cast<int64_t>(run.ids.size()))
                             : 1;
  const int64_t steps =
      built->kind == DecoderKind::kDiffusion ? built->diffusion.steps : built->dream.steps;

  // The text: the committed prefix of the canvas as it grows (engine/text_stream.h, the server's
  // rule), cut at EOS, a --stop string or -n tokens; streamed to stdout unless --json or --visual.
  const int64_t max_tokens = options.max_tokens > 0 ? options.max_tokens : gen_length;
  TextStream text(tok, cmd.ar.stop, std::min(max_tokens, gen_length), options.ar.ignore_eos,
                  run.ids.empty() ? kNoToken : run.ids.back());
  const bool stream_text = !cmd.json && !cmd.visual;
  // A full canvas rounded up to whole blocks past -n: the positions after -n are not output.
  const bool rounded_up = built->kind == DecoderKind::kDiffusion && max_tokens < gen_length;

  ProgressLine progress("generating");
  bool progress_shown = true;  // until the first text: then the text is the progress
  LiveBlock live;
  const auto gen_start = std::chrono::steady_clock::now();
  auto on_step = [&](const Decoder& d, const DecodeStep& r) {
    const double secs = MsSince(gen_start) / 1000.0;
    int64_t masked = 0;
    for (int32_t t : d.generated()) masked += t == d.mask_id();
    const int64_t committed = gen_length - masked;
    char info[160];
    if (built->kind == DecoderKind::kDream) {
      std::snprintf(info, sizeof(info), "step %lld/%lld  %.2f tokens/s",
                    static_cast<long long>(r.step + 1), static_cast<long long>(steps),
                    secs > 0 ? static_cast<double>(committed) / secs : 0.0);
    } else {
      std::snprintf(info, sizeof(info), "step %lld  block %lld/%lld  %.2f tokens/s",
                    static_cast<long long>(r.step + 1), static_cast<long long>(r.block + 1),
                    static_cast<long long>(blocks),
                    secs > 0 ? static_cast<double>(committed) / secs : 0.0);
    }
    const std::string piece = text.Update(d.committed(), d.Done());
    if (cmd.visual) {
      // On a terminal the canvas is redrawn in place; into a file or pipe only the final canvas
      // is written (not one frame per step).
      if (!StderrIsTerminal() && !d.Done()) return !Interrupted();
      live.Draw(StyleBold() + std::string(info) + StyleReset() + "\n" +
                RenderCanvas(d, tok, run.ids.back()));
    } else if (stream_text && !piece.empty()) {
      if (progress_shown) progress.Finish();
      progress_shown = false;
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    } else if (progress_shown) {
      progress.Update(d.Done() ? gen_length : committed, gen_length, info);
    }
    // Ctrl-C ends the generation, and so does a text made complete by a stop string or by -n
    // tokens of a rounded-up canvas (the rest of the canvas cannot reach the text). EOS alone does
    // not: the canvas is decoded to the end, as the reference does (output_ids).
    const bool cut = text.complete() && (!cmd.ar.stop.empty() ||
                                         (rounded_up && text.finish() == FinishReason::kLength));
    return !Interrupted() && !cut;
  };
  Decoder* const one[1] = {built->decoder.get()};
  auto stats_or = run.engine.Run(run.index, one, on_step);
  if (progress_shown) progress.Finish();
  if (!stats_or.ok()) return FailWith(kWho, stats_or.status());
  // Whatever was held back (a possible stop-string start, an incomplete character) is final now.
  if (stream_text) {
    const std::string rest = text.Update(built->decoder->committed(), /*no_more=*/true);
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  } else {
    text.Update(built->decoder->committed(), /*no_more=*/true);
  }
  const auto output = built->decoder->generated();
  // A run that ended early (Ctrl-C, a stop string, -n reached in a rounded-up canvas) counts and
  // returns only what it committed, the tokens before the first masked position, which is what
  // was printed: positions unmasked past it are not part of the answer.
  GenerationStats stats = *stats_or;
  const bool ended_early = !built->decoder->Done() || Interrupted() ||
                           (text.complete() && (!cmd.ar.stop.empty() || rounded_up) &&
                            built->decoder->committed().size() < output.size());
  if (ended_early) {
    const auto committed = static_cast<int64_t>(built->decoder->committed().size());
    stats.generated_tokens = rounded_up ? std::min<int64_t>(committed, max_tokens) : committed;
  }
  DiffusionResult result;
  result.suffix = run.suffix_text;
  result.text = text.text();
  result.finish = Interrupted()                          ? "interrupted"
                  : text.finish() == FinishReason::kStop ? "stop"
                                                         : "length";
  // output_ids: every generated position, as the references return them (block diffusion: to the
  // end of the last block), but not the rounding of a full canvas past -n.
  result.output = rounded_up ? output.subspan(0, static_cast<size_t>(max_tokens)) : output;
  if (ended_early && !rounded_up) result.output = built->decoder->committed();
  result.text_printed = stream_text;
  if (run.reply != nullptr) *run.reply = result.text;
  nlohmann::json params = ParamsJson(*built, loaded.model->config(), run.used_chat);
  params["stop"] = cmd.ar.stop;
  params["ignore_eos"] = options.ar.ignore_eos;
  return PrintDiffusionResult(loaded, run.path, run.ids, result, stats, run.load_ms,
                              run.tokenize_ms, std::move(params), cmd.json);
}

}  // namespace unmask::tools
