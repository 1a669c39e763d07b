// The planner's report, shared by `unmask plan` and the arena's validation: which model each
// engine runs, the default engine set, the projections over batch sizes, the winner per batch, the
// crossover, and their markdown / JSON / SVG forms.
#ifndef UNMASK_TOOLS_COMMON_PLAN_REPORT_H_
#define UNMASK_TOOLS_COMMON_PLAN_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/svg_plot.h"
#include "core/status.h"
#include "model/config.h"
#include "plan/hardware.h"
#include "plan/planner.h"

namespace unmask::tools {

struct PlanModel {
  std::string name;  // "" = none
  ModelConfig config;
  std::string source;  // preset source or file path
};

struct PlanInputs {
  PlanModel diffusion;  // runs the diffusion engines
  PlanModel ar;         // runs the AR engines
  std::vector<plan::EngineSpec> engines;
  plan::Workload workload;
  std::vector<int64_t> batches;  // ascending
  double latency_target_ms = 0;  // 0: none
  std::vector<std::string> notes;
};

// With only one kind of model given, the other engines run the same architecture (attention
// switched between causal and bidirectional); a note says so.
void CompleteModelPair(PlanInputs& in);

// ar, ar+spec (prompt-lookup drafts: free), diffusion-exact (1 token per forward, no cache),
// diffusion-fast (dual cache, k tokens per forward).
// With a block-diffusion model: ar, ar+spec, block-exact (one token per forward) and
// block-threshold (`block_k` tokens per forward, the threshold decoders' measured rate).
std::vector<plan::EngineSpec> BlockPlanEngines(int64_t block_length, double block_k,
                                               int64_t draft_max, double tokens_per_verify);
std::vector<plan::EngineSpec> DefaultPlanEngines(int64_t block_length, double fast_k,
                                                 int64_t draft_max, double tokens_per_verify);

std::vector<std::string> PlanAssumptions(const PlanInputs& in, const std::string& dtype,
                                         double overhead_ms);

struct PlanReport {
  std::vector<plan::Projection> rows;  // engine-major, then batch
  std::vector<std::string> winners;    // per batch: fastest engine meeting the target ("" none)
  int64_t crossover = -1;              // plan::CrossoverBatch
};

// Errors: those of plan::Project.
StatusOr<PlanReport> ProjectPlan(const PlanInputs& in, const plan::MachineRates& rates);

void PrintPlanMarkdown(const plan::Hardware& hw, const plan::MachineRates& rates,
                       const std::string& dtype, double price, bool price_overridden,
                       const PlanInputs& in, const PlanReport& report);
nlohmann::json PlanJson(const plan::Hardware& hw, const plan::MachineRates& rates,
                        const std::string& dtype, double price, const PlanInputs& in,
                        const PlanReport& report);
// tokens/s against batch size per engine (log-log), the crossover marked.
LinePlot PlanPlot(const plan::Hardware& hw, const std::string& dtype, const PlanInputs& in,
                  const PlanReport& report);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_PLAN_REPORT_H_
