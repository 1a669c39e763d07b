#include "common/decode_args.h"

#include <algorithm>

namespace unmask::tools {

bool FlagGiven(const CLI::App* app, const char* name) {
  const CLI::Option* o = app != nullptr ? app->get_option_no_throw(name) : nullptr;
  return o != nullptr && o->count() > 0;
}

StatusOr<DecodeOptions> DecodeOptionsFromFlags(const CLI::App& app, const DiffusionArgs& diffusion,
                                               const ArArgs& ar, const DreamArgs& dream) {
  DecodeOptions o;
  UNMASK_ASSIGN_OR_RETURN(o.diffusion, diffusion.Resolve());
  const double temperature = diffusion.params.temperature;
  const uint64_t seed = diffusion.params.seed;
  o.ar = ar.Resolve(temperature, seed, diffusion.params.gen_length);
  o.max_tokens = o.ar.n_predict;  // --n-predict, or --gen-length
  const auto alg = DreamAlgFromName(dream.alg);
  if (!alg) return InvalidArgumentError("unknown --alg '" + dream.alg + "'");
  o.dream.alg = *alg;
  o.dream.eps = dream.eps;
  o.dream.alg_temp = dream.alg_temp;
  o.lookup_ngram_max = ar.lookup_ngram_max;
  o.block = diffusion.block;
  o.fast_dllm_v2 = diffusion.fast_dllm_v2;
  o.remasking = diffusion.remasking;
  o.refuse_unused = true;
  o.round_canvas = false;  // -n is gen_length: a multiple of --block-length (LLaDA's generate)
  o.given = GivenFlags(app);
  return o;
}

std::vector<GivenParam> GivenFlags(const CLI::App& app) {
  std::vector<GivenParam> given;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty()) continue;
    std::string name = opt->get_lnames().front();
    std::replace(name.begin(), name.end(), '-', '_');
    given.push_back({name, "--" + opt->get_lnames().front()});
  }
  return given;
}

}  // namespace unmask::tools
