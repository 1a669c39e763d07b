#include "decode/decoder_factory.h"

#include <algorithm>
#include <array>

namespace unmask {
namespace {

// Parameters only the AR decoder uses. top_k and top_p are also Dream's sampler's. (Stop strings
// and ignore_eos act on the text, engine/text_stream.h, for every kind.)
constexpr std::array<std::string_view, 18> kArOnly = {"n_predict",
                                                      "top_k",
                                                      "top_p",
                                                      "min_p",
                                                      "repeat_penalty",
                                                      "repeat_last_n",
                                                      "frequency_penalty",
                                                      "presence_penalty",
                                                      "spec",
                                                      "speculative",
                                                      "draft_model",
                                                      "draft_max",
                                                      "draft_p_min",
                                                      "draft_steps",
                                                      "draft_heads",
                                                      "draft_depth",
                                                      "draft_topk",
                                                      "lookup_ngram_max"};
// Parameters of the block decoder; on a Dream model any of them selects it.
constexpr std::array<std::string_view, 16> kBlockOnly = {
    "block_length", "remasking",     "cfg_scale",    "logits_eos_inf", "confidence_eos_eot_inf",
    "cache",        "prefix_look",   "after_look",   "commit",         "threshold",
    "factor",       "low_threshold", "credit_alpha", "credit_beta",    "credit_gamma",
    "early_stop"};
// Parameters of diffusion decoding in general.
constexpr std::array<std::string_view, 1> kDiffusionOnly = {"steps"};
// Dream's sampler only.
constexpr std::array<std::string_view, 3> kDreamOnly = {"alg", "eps", "alg_temp"};
// SDAR's decoding only (block-diffusion models).
constexpr std::array<std::string_view, 5> kBlockDiffusionOnly = {
    "denoising_steps", "eb_threshold", "separate_store", "edit_threshold", "max_post_edit_steps"};
// Parameters a block-diffusion model takes (besides the common temperature, seed, max tokens).
constexpr std::array<std::string_view, 11> kBlockDiffusionUses = {"denoising_steps",
                                                                  "eb_threshold",
                                                                  "remasking",
                                                                  "threshold",
                                                                  "block_length",
                                                                  "steps",
                                                                  "top_k",
                                                                  "top_p",
                                                                  "separate_store",
                                                                  "edit_threshold",
                                                                  "max_post_edit_steps"};
// Parameters a Fast-dLLM v2 model takes (besides temperature, seed, max tokens).
constexpr std::array<std::string_view, 4> kFastDllmV2Uses = {"small_block_size", "block_length",
                                                             "threshold", "top_p"};

bool In(std::span<const std::string_view> set, std::string_view name) {
  return std::find(set.begin(), set.end(), name) != set.end();
}

bool UsesThreshold(CommitRule r) {
  return r == CommitRule::kThreshold || r == CommitRule::kHierarchy || r == CommitRule::kCredit;
}

// Adds `p` to `unused`, or returns an error when unused parameters are refused.
Status Unused(const DecodeOptions& o, const GivenParam& p, const std::string& why,
              std::vector<std::string>* unused) {
  if (o.refuse_unused) return InvalidArgumentError(p.label + " " + why);
  if (unused != nullptr) unused->push_back(p.label);
  return Status::Ok();
}

// How the caller names parameter `name` in messages: as it wrote the given ones (flags: "--" and
// dashes, e.g. --commit; request fields: the name itself).
const GivenParam* FindGiven(const DecodeOptions& o, std::string_view name) {
  for (const GivenParam& g : o.given) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// True when the caller writes parameters as command-line flags ("--top-k").
bool FlagStyle(const DecodeOptions& o) {
  return !o.given.empty() && o.given.front().label.rfind("--", 0) == 0;
}

std::string LabelOf(const DecodeOptions& o, std::string_view name) {
  if (const GivenParam* g = FindGiven(o, name)) return g->label;
  std::string label(name);
  if (FlagStyle(o)) {
    std::replace(label.begin(), label.end(), '_', '-');
    label = "--" + label;
  }
  return label;
}

std::string Describe(const DecoderModel& m) {
  return (m.name.empty() ? std::string("the model") : m.name) + " (" + m.config->architecture + ")";
}

}  // namespace

bool Given(const DecodeOptions& options, std::string_view name) {
  return FindGiven(options, name) != nullptr;
}

int64_t DiffusionCanvasLength(int64_t max_tokens, int64_t block_length) {
  if (block_length <= 0 || max_tokens <= 0) return max_tokens;
  return (max_tokens + block_length - 1) / block_length * block_length;
}

int64_t DefaultDiffusionSteps(int64_t gen_length, int64_t block_length) {
  constexpr int64_t kMaxDefaultSteps = 128;
  if (gen_length <= kMaxDefaultSteps) return gen_length;
  const int64_t blocks = block_length > 0 ? std::max<int64_t>(gen_length / block_length, 1) : 1;
  return std::max(blocks, kMaxDefaultSteps / blocks * blocks);
}

StatusOr<DiffusionParams> SettleDiffusionParams(const DecodeOptions& o,
                                                std::vector<std::string>* unused) {
  if (o.max_tokens < 1) return InvalidArgumentError("max_tokens must be at least 1");
  DiffusionParams p = o.diffusion;
  if (!o.remasking.empty()) {
    const auto r = RemaskingFromName(o.remasking);
    if (!r) {
      return InvalidArgumentError(
          LabelOf(o, "remasking") + " '" + o.remasking + "' is not a strategy of this decoder " +
          "(low_confidence, random)" +
          (BlockRemaskingFromName(o.remasking) ? "; it is SDAR's, for block-diffusion models"
                                               : ""));
    }
    p.remasking = *r;
  }
  if (p.block_length <= 0) p.block_length = std::min<int64_t>(32, o.max_tokens);
  p.gen_length =
      o.round_canvas ? DiffusionCanvasLength(o.max_tokens, p.block_length) : o.max_tokens;
  if (p.steps <= 0) p.steps = DefaultDiffusionSteps(p.gen_length, p.block_length);
  // The rule a parameter implies when no rule is named.
  const GivenParam* implied_by = nullptr;
  auto find = [&](std::string_view name) { return FindGiven(o, name); };
  if (!Given(o, "commit")) {
    if ((implied_by = find("low_threshold")) != nullptr) {
      p.commit = CommitRule::kHierarchy;
    } else if ((implied_by = find("factor")) != nullptr) {
      p.commit = CommitRule::kFactor;
    } else if ((implied_by = find("threshold")) != nullptr && !UsesThreshold(p.commit)) {
      p.commit = CommitRule::kThreshold;
    }
  }
  const std::string rule = LabelOf(o, "commit") + " " + std::string(CommitRuleName(p.commit));
  // Why a rule parameter does not apply.
  auto why = [&](const GivenParam&) {
    if (implied_by == nullptr) return "does not apply to " + rule;
    return "and " + implied_by->label + " belong to different commit rules (" + implied_by->label +
           " implies " + rule + "); give the parameters of one rule";
  };
  for (const GivenParam& g : o.given) {
    Status s;
    if (g.name == "threshold" && !UsesThreshold(p.commit)) {
      s = Unused(o, g, why(g), unused);
    } else if (g.name == "factor" && p.commit != CommitRule::kFactor) {
      s = Unused(o, g, why(g), unused);
    } else if (g.name == "low_threshold" && p.commit != CommitRule::kHierarchy) {
      s = Unused(o, g, why(g), unused);
    } else if (g.name.rfind("credit_", 0) == 0 && p.commit != CommitRule::kCredit) {
      s = Unused(o, g, why(g), unused);
    } else if ((g.name == "prefix_look" || g.name == "after_look") &&
               p.cache != CacheMode::kVicinity) {
      s = Unused(o, g,
                 "applies to " + LabelOf(o, "cache") + " vicinity, not " + LabelOf(o, "cache") +
                     " " + std::string(CacheModeName(p.cache)),
                 unused);
    } else if (g.name == "steps" && p.commit != CommitRule::kFixed && unused != nullptr) {
      // Dynamic rules run each block until it is full: steps is documented as ignored there.
      unused->push_back(g.label);
    }
    UNMASK_RETURN_IF_ERROR(s);
  }
  return p;
}

DecoderKind SelectDecoder(const ModelConfig& config, const DecodeOptions& o) {
  if (config.is_block_diffusion()) {
    return config.architecture == "fast_dllm_v2" ? DecoderKind::kFastDllmV2
                                                 : DecoderKind::kBlockDiffusion;
  }
  if (!config.is_diffusion()) return DecoderKind::kAr;
  if (config.architecture != "dream" || o.sampler == DiffusionSampler::kBlock) {
    return DecoderKind::kDiffusion;
  }
  if (o.sampler == DiffusionSampler::kDream) return DecoderKind::kDream;
  for (const GivenParam& g : o.given) {
    if (In(kBlockOnly, g.name)) return DecoderKind::kDiffusion;
  }
  return DecoderKind::kDream;
}

int64_t MaxTokensInContext(const ModelConfig& config, DecoderKind kind, int64_t prompt_length,
                           int64_t block_length) {
  const int64_t ctx = config.context_length;
  const int64_t l = std::max<int64_t>(block_length, 1);
  switch (kind) {
    case DecoderKind::kAr:
    case DecoderKind::kDream:
      return ctx - prompt_length;
    case DecoderKind::kBlockDiffusion:
      return ctx / l * l - prompt_length;
    case DecoderKind::kFastDllmV2:
      return ((ctx - 1) / l - prompt_length / l) * l;
    case DecoderKind::kDiffusion:
      return (ctx - prompt_length) / l * l;
  }
  return 0;
}

StatusOr<int64_t> UntilDoneLength(const ModelConfig& config, std::string_view name,
                                  int64_t prompt_length, const DecodeOptions& o) {
  const DecoderKind kind = SelectDecoder(config, o);
  if (kind == DecoderKind::kDiffusion || kind == DecoderKind::kDream) {
    return InvalidArgumentError(
        "until EOS or the context (" + std::string(FlagStyle(o) ? "-n -1" : "max_tokens -1") +
        ") applies to autoregressive and block-diffusion models; " + std::string(name) + " (" +
        config.architecture + ") denoises a canvas of fixed length: give a length");
  }
  ModelConfig limited = config;
  if (o.context_length > 0)
    limited.context_length = std::min(o.context_length, config.context_length);
  const int64_t block = Given(o, "block_length") ? o.diffusion.block_length : config.block_length;
  const int64_t room = MaxTokensInContext(limited, kind, prompt_length, block);
  if (room < 1) {
    return OutOfRangeError("the prompt (" + std::to_string(prompt_length) +
                           " tokens) leaves no room in the context of " +
                           std::to_string(limited.context_length) + " tokens of " +
                           std::string(name));
  }
  return room;
}

namespace {

// Diffusion decoders: the request's logprobs (DecodeOptions::ar.logprobs, as the AR decoder takes
// it) as commit-time log-probabilities.
Status EnableCommitLogprobs(const DecodeOptions& o, Decoder* d) {
  if (o.ar.logprobs < 0) return Status::Ok();
  return d->EnableLogprobs(o.ar.logprobs);
}

}  // namespace

StatusOr<BuiltDecoder> MakeDecoder(const DecoderModel& model, std::span<const int32_t> prompt,
                                   const DecodeOptions& o) {
  if (model.config == nullptr) return InvalidArgumentError("MakeDecoder: no model config");
  if (o.context_length < 0 || o.context_length > model.config->context_length) {
    return InvalidArgumentError(
        LabelOf(o, "context_length") + " (" + std::to_string(o.context_length) +
        ") is larger than the context of " + Describe(model) + ", " +
        std::to_string(model.config->context_length) +
        " tokens (unmask does not extend a model's context; 0 = the model's)");
  }
  ModelConfig limited;
  if (o.context_length > 0 && o.context_length < model.config->context_length) {
    limited = *model.config;
    limited.context_length = o.context_length;
  }
  const ModelConfig& c = limited.context_length > 0 ? limited : *model.config;
  BuiltDecoder out;
  out.kind = SelectDecoder(c, o);
  const bool is_dream_model = c.architecture == "dream";
  if (o.sampler == DiffusionSampler::kDream && !is_dream_model) {
    return InvalidArgumentError("Dream's sampler needs a Dream model; " + Describe(model) +
                                " is not one");
  }
  if (o.make_constraint && out.kind != DecoderKind::kAr) {
    // Never just listed as unused: an unconstrained answer is not what was asked for.
    return InvalidArgumentError(
        o.constraint_label +
        " (grammar-constrained sampling) needs an autoregressive model: constrained unmasking "
        "for diffusion decoding is not implemented, and " +
        Describe(model) + " is a diffusion model");
  }
  // Parameters of another model kind or sampler.
  const bool flags = FlagStyle(o);
  const std::string dream_sampler_only =
      "applies to Dream's reference sampler, but the block-decoder " +
      std::string(flags ? "flags" : "parameters") + " given (" + LabelOf(o, "block_length") + ", " +
      LabelOf(o, "cache") + ", " + LabelOf(o, "commit") + ", ...) select the block decoder";
  for (const GivenParam& g : o.given) {
    Status s;
    switch (out.kind) {
      case DecoderKind::kFastDllmV2:
        if ((In(kArOnly, g.name) || In(kBlockOnly, g.name) || In(kDreamOnly, g.name) ||
             In(kDiffusionOnly, g.name) || In(kBlockDiffusionOnly, g.name)) &&
            !In(kFastDllmV2Uses, g.name)) {
          s = Unused(o, g,
                     "does not apply to " + Describe(model) +
                         ", a Fast-dLLM v2 model (its decoding: " + LabelOf(o, "block_length") +
                         ", " + LabelOf(o, "small_block_size") + ", " + LabelOf(o, "threshold") +
                         ", " + LabelOf(o, "temperature") + ", " + LabelOf(o, "top_p") + ")",
                     &out.unused);
        }
        break;
      case DecoderKind::kBlockDiffusion:
        if (g.name == "small_block_size") {
          s = Unused(o, g, "applies to Fast-dLLM v2 models; " + Describe(model) + " is not one",
                     &out.unused);
        } else if ((In(kArOnly, g.name) || In(kBlockOnly, g.name) || In(kDreamOnly, g.name)) &&
                   !In(kBlockDiffusionUses, g.name)) {
          s = Unused(o, g,
                     "does not apply to " + Describe(model) +
                         ", a block-diffusion model (SDAR decoding: " +
                         LabelOf(o, "denoising_steps") + ", " + LabelOf(o, "remasking") + ", " +
                         LabelOf(o, "threshold") + ", " + LabelOf(o, "eb_threshold") + ")",
                     &out.unused);
        }
        break;
      case DecoderKind::kAr:
        if (In(kBlockOnly, g.name) || In(kDiffusionOnly, g.name) || In(kDreamOnly, g.name) ||
            In(kBlockDiffusionOnly, g.name)) {
          s = Unused(
              o, g,
              "applies to diffusion models; " + Describe(model) + " is an autoregressive model",
              &out.unused);
        }
        break;
      case DecoderKind::kDiffusion:
        if (In(kBlockDiffusionOnly, g.name)) {
          s = Unused(o, g,
                     "applies to block-diffusion models (SDAR); " + Describe(model) + " is not one",
                     &out.unused);
        } else if (is_dream_model && (g.name == "top_k" || g.name == "top_p")) {
          s = Unused(o, g, dream_sampler_only, &out.unused);
        } else if (In(kArOnly, g.name)) {
          s = Unused(
              o, g,
              "applies to autoregressive models; " + Describe(model) + " is a diffusion model",
              &out.unused);
        } else if (In(kDreamOnly, g.name)) {
          s = Unused(o, g,
                     is_dream_model ? dream_sampler_only
                                    : "applies to Dream models; " + Describe(model) + " is not one",
                     &out.unused);
        }
        break;
      case DecoderKind::kDream:
        if (In(kBlockDiffusionOnly, g.name)) {
          s = Unused(o, g,
                     "applies to block-diffusion models (SDAR); " + Describe(model) + " is not one",
                     &out.unused);
        } else if (In(kArOnly, g.name) && g.name != "top_k" && g.name != "top_p") {
          s = Unused(
              o, g,
              "applies to autoregressive models; " + Describe(model) + " is a diffusion model",
              &out.unused);
        }
        break;
    }
    UNMASK_RETURN_IF_ERROR(s);
  }

  const int64_t prompt_length = static_cast<int64_t>(prompt.size());
  if (!o.suffix.empty() && out.kind != DecoderKind::kDiffusion && out.kind != DecoderKind::kDream) {
    return InvalidArgumentError(
        LabelOf(o, "suffix") +
        " (infilling) needs a diffusion model with bidirectional attention " + "(LLaDA, Dream): " +
        Describe(model) + " runs the " + std::string(DecoderKindName(out.kind)) +
        " decoder, whose tokens cannot see text after them");
  }
  switch (out.kind) {
    case DecoderKind::kAr: {
      if (o.max_tokens < -1) {
        return InvalidArgumentError("max_tokens must be -1 (until EOS or a full context) or >= 0");
      }
      if (o.max_tokens > 0 && prompt_length + o.max_tokens > c.context_length) {
        // Named as the caller gave it: max_tokens (server), --n-predict or -n (CLI).
        const std::string what = Given(o, "n_predict") ? LabelOf(o, "n_predict")
                                 : flags               ? std::string("-n/--gen-length")
                                                       : std::string("max_tokens");
        return OutOfRangeError("the prompt (" + std::to_string(prompt_length) + " tokens) + " +
                               what + " (" + std::to_string(o.max_tokens) +
                               ") exceed the context of " + std::to_string(c.context_length) +
                               " tokens");
      }
      out.ar = o.ar;
      out.ar.n_predict = o.max_tokens;
      std::unique_ptr<Drafter> lookup;  // a drafter the decoder owns
      Drafter* drafter = o.drafter;
      if (drafter == nullptr && o.medusa_heads != nullptr) {
        if (o.medusa_heads->hidden_size() != c.hidden_size) {
          return InvalidArgumentError("Medusa heads " + o.medusa_heads->path() +
                                      " are for a hidden size of " +
                                      std::to_string(o.medusa_heads->hidden_size()) +
                                      ", the model's is " + std::to_string(c.hidden_size));
        }
        UNMASK_ASSIGN_OR_RETURN(lookup, MakeMedusaDrafter(o.medusa_heads, o.medusa));
        drafter = lookup.get();
      } else if (drafter == nullptr && o.eagle_head != nullptr) {
        if (o.eagle_base == nullptr || o.eagle_base->config().hidden_size != c.hidden_size ||
            o.eagle_base->config().vocab_size != c.vocab_size) {
          return InvalidArgumentError("EAGLE draft layer " + o.eagle_head->path() +
                                      ": eagle_base must be the model the decoder runs on");
        }
        UNMASK_ASSIGN_OR_RETURN(lookup, MakeEagleDrafter(o.eagle_head, o.eagle_base, o.eagle));
        drafter = lookup.get();
      } else if (drafter == nullptr && o.speculative_lookup) {
        UNMASK_ASSIGN_OR_RETURN(lookup, MakeLookupDrafter({1, o.lookup_ngram_max}));
        drafter = lookup.get();
      }
      UNMASK_ASSIGN_OR_RETURN(
          ArDecoder d, ArDecoder::Create(out.ar, ArTokenIds{model.ids.eos, model.ids.eot}, prompt,
                                         c.context_length, c.vocab_size, drafter, o.kv_seq));
      if (lookup) d.AdoptDrafter(std::move(lookup));
      if (o.make_constraint) d.SetConstraint(o.make_constraint());
      out.decoder = std::make_unique<ArDecoder>(std::move(d));
      return out;
    }
    case DecoderKind::kDiffusion: {
      if (!o.suffix.empty() && !Given(o, "block_length") && o.max_tokens > 0) {
        // Infilling: one block of exactly max_tokens (see DecodeOptions::suffix).
        DecodeOptions one_block = o;
        one_block.diffusion.block_length = o.max_tokens;
        UNMASK_ASSIGN_OR_RETURN(out.diffusion, SettleDiffusionParams(one_block, &out.unused));
      } else if (!o.suffix.empty() && o.diffusion.block_length > 0 &&
                 o.max_tokens % o.diffusion.block_length != 0) {
        // A canvas rounded up to whole blocks and cut back would not join the suffix.
        return InvalidArgumentError(
            LabelOf(o, "suffix") + " (infilling) with " + LabelOf(o, "block_length") + " " +
            std::to_string(o.diffusion.block_length) + " needs " +
            (FlagStyle(o) ? std::string("-n/--gen-length") : std::string("max_tokens")) + " (" +
            std::to_string(o.max_tokens) +
            ") to be a multiple of it: the generated span must end where the suffix begins");
      } else {
        UNMASK_ASSIGN_OR_RETURN(out.diffusion, SettleDiffusionParams(o, &out.unused));
      }
      const DiffusionParams& p = out.diffusion;
      UNMASK_ASSIGN_OR_RETURN(
          DiffusionDecoder d,
          DiffusionDecoder::Create(p, {model.ids.mask, model.ids.eos, model.ids.eot}, prompt,
                                   c.context_length, c.vocab_size, c.shift_logits, o.suffix));
      // More steps than tokens is the reference's behaviour (the extra forwards commit nothing),
      // but no request may cost more forwards than the longest canvas the context allows.
      if (p.commit == CommitRule::kFixed && p.steps > c.context_length) {
        return InvalidArgumentError(
            "steps (" + std::to_string(p.steps) + ") exceeds the model's context length (" +
            std::to_string(c.context_length) + "), the most forwards a request may take");
      }
      d.set_kv_seq(o.kv_seq);
      out.decoder = std::make_unique<DiffusionDecoder>(std::move(d));
      UNMASK_RETURN_IF_ERROR(EnableCommitLogprobs(o, out.decoder.get()));
      return out;
    }
    case DecoderKind::kFastDllmV2: {
      if (o.max_tokens < 1) return InvalidArgumentError("max_tokens must be at least 1");
      FastDllmV2Params p = o.fast_dllm_v2;
      p.block_size = Given(o, "block_length") ? o.diffusion.block_length : c.block_length;
      // The reference decodes max_new_tokens / block_size whole blocks; the server (round_canvas)
      // rounds max_tokens up so that at least max_tokens are made.
      p.max_new_tokens =
          o.round_canvas ? DiffusionCanvasLength(o.max_tokens, p.block_size) : o.max_tokens;
      if (Given(o, "threshold")) p.threshold = o.diffusion.threshold;
      p.temperature = o.diffusion.temperature;
      p.seed = o.diffusion.seed;
      if (Given(o, "top_p")) p.top_p = o.ar.sampling.top_p;
      // Fast-dLLM v2's stop_token is the end of a chat turn, <|im_end|>: the checkpoints' eos.
      p.stop_token = model.ids.eos >= 0 ? model.ids.eos : model.ids.eot;
      p.pad_token = model.ids.pad >= 0 ? model.ids.pad : p.stop_token;
      out.fast_dllm_v2 = p;
      UNMASK_ASSIGN_OR_RETURN(FastDllmV2Decoder d,
                              FastDllmV2Decoder::Create(p, model.ids.mask, prompt, c.context_length,
                                                        c.vocab_size, o.kv_seq));
      out.decoder = std::make_unique<FastDllmV2Decoder>(std::move(d));
      UNMASK_RETURN_IF_ERROR(EnableCommitLogprobs(o, out.decoder.get()));
      return out;
    }
    case DecoderKind::kBlockDiffusion: {
      UNMASK_ASSIGN_OR_RETURN(out.block, SettleBlockParams(model, o));
      UNMASK_ASSIGN_OR_RETURN(
          BlockDiffusionDecoder d,
          BlockDiffusionDecoder::Create(out.block, model.ids.mask, prompt, c.context_length,
                                        c.vocab_size, o.kv_seq));
      out.decoder = std::make_unique<BlockDiffusionDecoder>(std::move(d));
      UNMASK_RETURN_IF_ERROR(EnableCommitLogprobs(o, out.decoder.get()));
      return out;
    }
    case DecoderKind::kDream: {
      if (o.max_tokens < 1) return InvalidArgumentError("max_tokens must be at least 1");
      DreamParams p = o.dream;
      p.gen_length = o.max_tokens;
      p.steps = o.diffusion.steps > 0 ? o.diffusion.steps
                                      : DefaultDiffusionSteps(p.gen_length, p.gen_length);
      p.temperature = o.diffusion.temperature;
      p.seed = o.diffusion.seed;
      // The AR defaults (top-k 40, top-p 0.95) are not Dream's: off unless given.
      p.top_k = Given(o, "top_k") ? o.ar.sampling.top_k : 0;
      p.top_p = Given(o, "top_p") ? o.ar.sampling.top_p : 1.0;
      out.dream = p;
      UNMASK_ASSIGN_OR_RETURN(DreamDecoder d,
                              DreamDecoder::Create(p, model.ids.mask, c.shift_logits, prompt,
                                                   c.context_length, c.vocab_size, o.suffix));
      if (p.steps > c.context_length) {
        return InvalidArgumentError(
            "steps (" + std::to_string(p.steps) + ") exceeds the model's context length (" +
            std::to_string(c.context_length) + "), the most forwards a request may take");
      }
      out.decoder = std::make_unique<DreamDecoder>(std::move(d));
      UNMASK_RETURN_IF_ERROR(EnableCommitLogprobs(o, out.decoder.get()));
      return out;
    }
  }
  return InternalError("MakeDecoder: unknown decoder kind");
}

StatusOr<BlockParams> SettleBlockParams(const DecoderModel& model, const DecodeOptions& o) {
  if (o.max_tokens < 1) return InvalidArgumentError("max_tokens must be at least 1");
  const ModelConfig& c = *model.config;
  BlockParams p = o.block;
  if (!o.remasking.empty()) {
    const auto r = BlockRemaskingFromName(o.remasking);
    if (!r) {
      return InvalidArgumentError(LabelOf(o, "remasking") + " '" + o.remasking + "' is not a " +
                                  "strategy of block-diffusion models (" +
                                  std::string(BlockRemaskingNames()) + ")");
    }
    p.remasking = *r;
  }
  p.gen_length = o.max_tokens;
  p.block_length = Given(o, "block_length") ? o.diffusion.block_length : c.block_length;
  if (Given(o, "steps")) {
    if (Given(o, "denoising_steps") && o.diffusion.steps != o.block.denoising_steps) {
      return InvalidArgumentError(LabelOf(o, "steps") + " and " + LabelOf(o, "denoising_steps") +
                                  " both give the denoising steps per block, with different "
                                  "values: give one");
    }
    p.denoising_steps = o.diffusion.steps;
  } else if (!Given(o, "denoising_steps")) {
    p.denoising_steps = p.block_length;  // SDAR's default: one token per step (4 for block 4)
  }
  if (c.architecture == "llada2-moe") {
    // LLaDA 2.x's generate (MODELS.md §3.4): threshold 0.95 with the top-quota fallback, the
    // quota capped at the masks left.
    p.overcommit = false;
    p.confidence_threshold = 0.95;
  }
  if (p.remasking == BlockRemasking::kJointThreshold) {
    p.confidence_threshold = 0.5;  // SGLang JointThreshold's default (LLaDA 2.1)
  }
  if (Given(o, "threshold")) p.confidence_threshold = o.diffusion.threshold;
  p.temperature = o.diffusion.temperature;
  p.seed = o.diffusion.seed;
  p.top_k = Given(o, "top_k") ? o.ar.sampling.top_k : 0;
  p.top_p = Given(o, "top_p") ? o.ar.sampling.top_p : 1.0;
  p.stop_ids.clear();
  for (int32_t id : {model.ids.eos, model.ids.eot}) {
    if (id >= 0 && std::find(p.stop_ids.begin(), p.stop_ids.end(), id) == p.stop_ids.end()) {
      p.stop_ids.push_back(id);
    }
  }
  if (p.remasking != BlockRemasking::kLowConfidenceDynamic &&
      p.remasking != BlockRemasking::kJointThreshold && Given(o, "threshold")) {
    return InvalidArgumentError(LabelOf(o, "threshold") + " applies to " + LabelOf(o, "remasking") +
                                " low_confidence_dynamic or joint_threshold, not " +
                                std::string(BlockRemaskingName(p.remasking)));
  }
  for (const char* key : {"edit_threshold", "max_post_edit_steps"}) {
    if (p.remasking != BlockRemasking::kJointThreshold && Given(o, key)) {
      return InvalidArgumentError(LabelOf(o, key) + " applies to " + LabelOf(o, "remasking") +
                                  " joint_threshold (LLaDA 2.1 token editing), not " +
                                  std::string(BlockRemaskingName(p.remasking)));
    }
  }
  if (p.remasking != BlockRemasking::kEntropyBounded && Given(o, "eb_threshold")) {
    return InvalidArgumentError(LabelOf(o, "eb_threshold") + " applies to " +
                                LabelOf(o, "remasking") + " entropy_bounded, not " +
                                std::string(BlockRemaskingName(p.remasking)));
  }
  return p;
}

}  // namespace unmask
