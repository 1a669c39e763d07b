// `unmask bench arena`: the diffusion-versus-AR economics measured on this machine. Every mode
// (AR, AR + each speculative drafter, the exact LLaDA reference, the accelerated diffusion modes,
// and with a block-diffusion model its SDAR strategies) at batch sizes 1, 2, 4, ..., 64 through
// the server's engine loop: throughput, TTFT / TPOT / E2E, NFE, tokens per forward, arithmetic
// intensity, the achieved fraction of the roofline measured in the same run, the perplexity under
// two judges (the AR twin, and an independent model scoring the texts with its own tokenizer),
// tokens per dollar; the planner's prediction for this machine against each measurement. Writes
// arena.json, arena.md and two SVG plots.
#ifndef UNMASK_TOOLS_CLI_ARENA_ARENA_COMMAND_H_
#define UNMASK_TOOLS_CLI_ARENA_ARENA_COMMAND_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace unmask::tools {

struct ArenaCommand {
  std::string diffusion_model;  // default: the diffusion twin
  std::string ar_model;         // default: the AR twin
  std::string draft_model;      // default: the AR draft twin; "none": no ar+draft
  std::string judge_model;      // default: the AR model
  // Default: models/unmask-tinystories-block.gguf when that file exists, else none; "none": no
  // block modes.
  std::string block_model;
  // Default: DefaultJudge2Path() when that file exists (else skipped, with a note); "none": off.
  std::string judge2_model;
  std::vector<std::string> modes;
  std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32, 64};
  std::vector<int64_t> validate_batches = {1, 16};
  CLI::Option* validate_option = nullptr;  // given explicitly: every size must be run
  int64_t prompt_length = 32;
  int64_t gen_length = 64;
  int64_t block_length = 32;
  int64_t min_requests = 8;
  std::string prompts_file;
  double price_per_hour = 0;  // 0: the hardware table's cpu entry
  std::string hardware_file;
  std::string out_dir = "build/arena";
  int threads = 0;
  std::string compute = "auto";  // --compute: the compared engines' BackendOptions::compute
  bool no_quality = false;

  void AddTo(CLI::App& app);
  int Run() const;
};

// The second judge's default file: $UNMASK_CACHE (default ~/.cache/unmask)/smollm2/
// SmolLM2-135M-Instruct.Q4_1.gguf, where scripts/fetch-smollm2.sh puts it ("" without HOME).
std::string DefaultJudge2Path();

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_ARENA_ARENA_COMMAND_H_
