#include "common/dream_args.h"

#include "common/cli_util.h"

namespace unmask::tools {

void DreamArgs::AddTo(CLI::App& app) {
  auto* g = "Dream models (dream)";
  app.add_option("--alg", alg,
                 "Dream: which masked positions a step commits: origin (each with probability "
                 "1 - s/t), maskgit_plus (highest probability), topk_margin (largest top-1 minus "
                 "top-2 gap), entropy (lowest entropy). Default entropy, what Dream's README and "
                 "evaluations use; the reference library's default is origin")
      ->check(CLI::IsMember({"origin", "maskgit_plus", "topk_margin", "entropy"}))
      ->capture_default_str()
      ->group(g);
  app.add_option("--eps", eps,
                 "Dream: last timestep of linspace(1, eps, steps + 1), in (0, 1); sets how many "
                 "tokens each step commits")
      ->capture_default_str()
      ->group(g);
  app.add_option("--alg-temp", alg_temp,
                 "Dream: > 0 draws the committed positions from softmax(confidence / alg-temp) "
                 "instead of taking the most confident (0: off)")
      ->check(FiniteAtLeast(0))
      ->capture_default_str()
      ->group(g);
}

}  // namespace unmask::tools
