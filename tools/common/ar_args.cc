#include "common/ar_args.h"

#include <algorithm>

#include "common/cli_util.h"
#include "common/model_args.h"

namespace unmask::tools {

void ArArgs::AddTo(CLI::App& app) {
  auto* g = "Autoregressive models (llama)";
  app.add_option("--n-predict", n_predict,
                 "AR: most tokens to generate (-1: until EOS or a full context; default: "
                 "--gen-length)")
      ->check(IntegerIn(-1, kMaxLength))
      ->group(g);
  app.add_option("--top-k", sampling.top_k,
                 "AR and Dream sampling: keep the k most likely tokens (0: off; Dream: off "
                 "unless given)")
      ->check(IntegerIn(0, kMaxLength))
      ->capture_default_str()
      ->group(g);
  app.add_option("--top-p", sampling.top_p,
                 "AR and Dream sampling: nucleus, smallest set with this much probability (1: "
                 "off; Dream: off unless given)")
      ->check(CLI::Range(1e-9, 1.0))
      ->capture_default_str()
      ->group(g);
  app.add_option("--min-p", sampling.min_p,
                 "AR sampling: drop tokens below min_p * p(most likely) (0: off)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str()
      ->group(g);
  app.add_option("--repeat-penalty", sampling.repeat_penalty,
                 "AR: divide positive logits (multiply negative ones) of recent tokens (1: off)")
      ->check(CLI::Range(1e-6, 100.0))
      ->capture_default_str()
      ->group(g);
  app.add_option("--repeat-last-n", sampling.repeat_last_n,
                 "AR: tokens the penalties look back over (-1: all, 0: off)")
      ->check(IntegerIn(-1, kMaxLength))
      ->capture_default_str()
      ->group(g);
  app.add_option("--frequency-penalty", sampling.frequency_penalty,
                 "AR: subtract count * value from repeated tokens' logits (0: off)")
      ->check(CLI::Range(-100.0, 100.0))
      ->capture_default_str()
      ->group(g);
  app.add_option("--presence-penalty", sampling.presence_penalty,
                 "AR: subtract value from the logits of tokens already present (0: off)")
      ->check(CLI::Range(-100.0, 100.0))
      ->capture_default_str()
      ->group(g);
  app.add_flag("--ignore-eos", ignore_eos,
               "keep generating past end-of-generation tokens (every model: the text does not "
               "end at EOS)")
      ->group(g);
  app.add_option("--stop", stop,
                 "end the text where it contains this string (repeatable; not printed; every "
                 "model)")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v.empty() ? std::string("an empty stop string would match everywhere")
                             : std::string();
          },
          "", "non-empty"))
      ->group(g);
  app.add_option("--spec", spec,
                 "AR speculative decoding: lookup (n-gram prompt lookup, no model), draft (a "
                 "smaller AR --draft-model), diffusion (a diffusion --draft-model sharing the "
                 "tokenizer proposes a block per forward), medusa (draft heads on the model's own "
                 "last hidden state: --draft-heads, default MODEL.medusa.gguf beside the model), "
                 "eagle (an EAGLE draft layer over the model's features, drafting a tree verified "
                 "in one forward: --draft-heads, default MODEL.eagle.gguf). Greedy output is "
                 "identical to plain decoding; with sampling the output distribution is the same")
      ->check(CLI::IsMember({"lookup", "draft", "diffusion", "medusa", "eagle"}))
      ->group(g);
  app.add_option("--draft-model,--md", draft_model,
                 "GGUF of the drafter for --spec draft|diffusion (implies it when --spec is not "
                 "given); must share the target's vocabulary")
      ->group(g);
  app.add_option("--draft-heads", draft_heads,
                 "GGUF of Medusa heads or of an EAGLE draft layer trained for this model "
                 "(scripts/train/train_medusa.py, train_eagle.py; implies --spec medusa or eagle, "
                 "by the file's architecture); default: MODEL.medusa.gguf / MODEL.eagle.gguf "
                 "beside MODEL.gguf")
      ->check(CLI::ExistingFile)
      ->group(g);
  draft_max_option =
      app.add_option(
             "--draft-max", draft_max,
             "most tokens drafted per step, chain or tree (at most 15: a verification of up "
             "to 16 tokens is computed exactly like one-token forwards); --spec eagle: the "
             "tree's nodes (default there: 6)")
          ->check(IntegerIn(1, kMaxDraft))
          ->capture_default_str()
          ->group(g);
  draft_p_min_option =
      app.add_option("--draft-p-min", draft_p_min,
                     "cut a draft at the first token the drafter gives less than this probability; "
                     "--spec eagle: drop the tree's nodes below it with their subtrees (0: off; "
                     "not for --spec lookup)")
          ->check(CLI::Range(0.0, 1.0))
          ->check(CLI::Validator(  // CLI::Range lets NaN through (every comparison is false)
              [](std::string& v) {
                return v.find_first_of("nN") != std::string::npos &&
                               v.find_first_of("aA") != std::string::npos
                           ? std::string("not a number in [0, 1]")
                           : std::string();
              },
              "", "not NaN"))
          ->capture_default_str()
          ->group(g);
  draft_steps_option =
      app.add_option("--draft-steps", draft_steps,
                     "--spec diffusion: denoising forwards per draft (1: the whole block at once)")
          ->check(IntegerIn(1, 256))
          ->capture_default_str()
          ->group(g);
  draft_depth_option = app.add_option("--draft-depth", draft_depth,
                                      "--spec eagle: levels of the draft tree (EAGLE-2's depth)")
                           ->check(IntegerIn(1, 16))
                           ->capture_default_str()
                           ->group(g);
  draft_topk_option =
      app.add_option("--draft-topk", draft_topk,
                     "--spec eagle: children per expanded node and nodes expanded per level "
                     "(EAGLE-2's top-k; 1 drafts a chain)")
          ->check(IntegerIn(1, 16))
          ->capture_default_str()
          ->group(g);
  lookup_ngram_max_option = app.add_option("--lookup-ngram-max", lookup_ngram_max,
                                           "--spec lookup: longest n-gram matched (down to 1)")
                                ->check(IntegerIn(1, 64))
                                ->capture_default_str()
                                ->group(g);
}

ArParams ArArgs::Resolve(double temperature, uint64_t seed, int64_t gen_length) const {
  ArParams p;
  p.sampling = sampling;
  p.sampling.temperature = temperature;
  p.sampling.seed = seed;
  p.n_predict = n_predict == -2 ? gen_length : n_predict;
  p.ignore_eos = ignore_eos;
  p.draft_max = draft_max;
  return p;
}

std::string ArArgs::SpecMode(bool draft_is_diffusion, const std::string& heads_kind) const {
  if (!spec.empty()) return spec;
  if (!draft_heads.empty()) return heads_kind;
  if (draft_model.empty()) return "";
  return draft_is_diffusion ? "diffusion" : "draft";
}

Status ArArgs::CheckModeFlags(const std::string& mode) const {
  struct Rule {
    const CLI::Option* option;
    const char* flag;
    std::vector<std::string> modes;
    const char* modes_text;
  };
  const Rule rules[] = {
      {draft_depth_option, "--draft-depth", {"eagle"}, "--spec eagle"},
      {draft_topk_option, "--draft-topk", {"eagle"}, "--spec eagle"},
      {draft_steps_option, "--draft-steps", {"diffusion"}, "--spec diffusion"},
      {lookup_ngram_max_option, "--lookup-ngram-max", {"lookup"}, "--spec lookup"},
      {draft_p_min_option,
       "--draft-p-min",
       {"draft", "diffusion", "medusa", "eagle"},
       "--spec draft, diffusion, medusa or eagle (a drafter with probabilities)"},
  };
  for (const Rule& r : rules) {
    if (r.option == nullptr || r.option->count() == 0) continue;
    if (std::find(r.modes.begin(), r.modes.end(), mode) != r.modes.end()) continue;
    // The mode as the user gave it: named, implied by a draft file, or none.
    const std::string run =
        !spec.empty()  ? "is --spec " + spec
        : mode.empty() ? std::string("has no --spec")
                       : "is --spec " + mode + " (implied by " +
                             (draft_heads.empty() ? "--draft-model" : "--draft-heads") + ")";
    return InvalidArgumentError(std::string(r.flag) + " is for " + r.modes_text + "; this run " +
                                run);
  }
  return Status::Ok();
}

}  // namespace unmask::tools
