// Autoregressive generation flags (llama.cpp's names: --n-predict, --top-k, --top-p, --min-p,
// --repeat-penalty, --draft-model, --draft-max, ...). --temperature and --seed are shared with the
// diffusion flags (DiffusionArgs). --top-k and --top-p also apply to Dream models (off there
// unless given; tools/cli/generate_dream.cc).
#ifndef UNMASK_TOOLS_COMMON_AR_ARGS_H_
#define UNMASK_TOOLS_COMMON_AR_ARGS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/decoder_ar.h"

namespace unmask::tools {

struct ArArgs {
  int64_t n_predict = -2;  // -2: not given (use --gen-length)
  SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<std::string> stop;
  std::string spec;         // "", "lookup", "draft", "diffusion", "medusa", "eagle"
  std::string draft_model;  // --draft-model
  std::string
      draft_heads;  // --draft-heads (Medusa heads or EAGLE layer; default: beside the model)
  // 3: a verification then feeds 4 tokens, one group of the fused batch-1 kernels, which read the
  // weights once (docs/benchmarks.md: 1.36x on SmolLM2 with lookup, where 8 drafts gave 0.99x).
  int32_t draft_max = 3;
  CLI::Option* draft_max_option = nullptr;  // set by AddTo: whether --draft-max was given
  double draft_p_min = 0.0;
  int32_t draft_steps = 1;
  int32_t lookup_ngram_max = 4;
  int32_t draft_depth = EagleDrafterParams{}.depth;  // --spec eagle
  int32_t draft_topk = EagleDrafterParams{}.top_k;
  // Set by AddTo: the flags of one speculative mode or a few (CheckModeFlags).
  CLI::Option* draft_p_min_option = nullptr;
  CLI::Option* draft_steps_option = nullptr;
  CLI::Option* draft_depth_option = nullptr;
  CLI::Option* draft_topk_option = nullptr;
  CLI::Option* lookup_ngram_max_option = nullptr;

  void AddTo(CLI::App& app);
  // ArParams from the flags plus the shared temperature/seed and the --gen-length fallback.
  ArParams Resolve(double temperature, uint64_t seed, int64_t gen_length) const;
  // The speculative mode: --spec, or for --draft-heads the file's kind (`heads_kind`: "medusa"
  // or "eagle"), or inferred from --draft-model's architecture ("draft" for a causal model,
  // "diffusion" for a bidirectional one). "" = none.
  std::string SpecMode(bool draft_is_diffusion, const std::string& heads_kind = "medusa") const;
  // InvalidArgument naming the flag and the modes it is for when a flag of other speculative
  // modes was given for `mode` (SpecMode's value; "" = none): --draft-depth and --draft-topk are
  // for eagle, --draft-steps for diffusion, --lookup-ngram-max for lookup, --draft-p-min for the
  // modes with a drafter's probability (draft, diffusion, medusa, eagle). --draft-max is every
  // mode's and ignored without one (llama.cpp's habit; scripts pass it to every run).
  Status CheckModeFlags(const std::string& mode) const;
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_AR_ARGS_H_
