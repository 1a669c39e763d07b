// Flags of Dream's reference sampler (names of the reference `diffusion_generate`: alg, eps,
// alg_temp). --steps, --gen-length, --temperature and --seed are shared with the LLaDA flags
// (DiffusionArgs); --top-p and --top-k with the AR flags (ArArgs), off unless given.
#ifndef UNMASK_TOOLS_COMMON_DREAM_ARGS_H_
#define UNMASK_TOOLS_COMMON_DREAM_ARGS_H_

#include <CLI/CLI.hpp>
#include <string>

#include "decode/dream_params.h"

namespace unmask::tools {

struct DreamArgs {
  // The CLI default is entropy, not the reference's `origin`: Dream's README example and its
  // evaluation scripts use entropy; origin commits random positions.
  std::string alg = "entropy";
  double eps = 1e-3;
  double alg_temp = 0.0;

  void AddTo(CLI::App& app);
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_DREAM_ARGS_H_
