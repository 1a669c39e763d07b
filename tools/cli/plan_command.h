// `unmask plan`: roofline projections of diffusion and AR decoding on a GPU or CPU from the
// hardware table (data/hardware.json) — tokens/s, latency, arithmetic intensity, the winning engine
// per batch size, the batch where AR catches up, and $ per million tokens — with every assumption
// printed (src/plan/planner.h has the cost model).
#ifndef UNMASK_TOOLS_CLI_PLAN_COMMAND_H_
#define UNMASK_TOOLS_CLI_PLAN_COMMAND_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace unmask::tools {

struct PlanCommand {
  std::vector<std::string> hardware = {"h100-sxm", "h200"};
  std::vector<std::string> models = {"llada-8b", "llama-3-8b"};
  std::string dtype = "bf16";
  int64_t prompt_length = 128;
  int64_t gen_length = 256;
  std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  double latency_target_ms = 0;  // 0: none
  double price_per_hour = 0;     // 0: the table's typical price
  int64_t block_length = 32;
  double fast_tokens_per_forward = 3;  // diffusion-fast k
  int64_t draft_max = 3;
  double tokens_per_verify = 2.5;  // AR+spec tau
  // ar+eagle: an EAGLE-2 tree of eagle_nodes drafts over eagle_depth levels, eagle_tau tokens
  // committed per verify forward, a draft head of eagle_draft_vocab rows (EAGLE-3's 32k for
  // Llama 3); 0 nodes leaves the engine out.
  int64_t eagle_nodes = 6;
  int64_t eagle_depth = 4;
  double eagle_tau = 3.0;
  int64_t eagle_draft_vocab = 32768;
  double overhead_ms = 0;  // per forward
  std::string hardware_file;
  std::string output = "md";
  std::string svg_dir;

  void AddTo(CLI::App& app);
  int Run() const;
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_PLAN_COMMAND_H_
