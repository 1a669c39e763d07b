// The arena's results: one summary row per (mode, batch size), the quality per mode, the planner's
// prediction for this machine against each measurement, and their markdown / JSON / SVG forms.
#ifndef UNMASK_TOOLS_CLI_ARENA_ARENA_REPORT_H_
#define UNMASK_TOOLS_CLI_ARENA_ARENA_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/arena/arena_modes.h"
#include "cli/arena/arena_run.h"
#include "common/svg_plot.h"

namespace unmask::tools {

struct ArenaMachine {
  double gemm_gflops = 0;       // measured GEMM peak of `compute` (prepacked, this run)
  std::string compute = "f32";  // the compute type of the compared engines
  std::string gemm_peaks;       // every type's peak, FormatPeaks (roofline.h)
  double bandwidth_gbs = 0;     // measured memory read bandwidth (this run)
  int threads = 0;
  double price_per_hour = 0;  // USD
  std::string price_source;
  std::string backend;
};

// What the planner needs to know about this machine running one model, measured in the run:
// the GEMM rate against rows on the model's own weight matrix (roofline.h MeasureGemmCurve), the
// read bandwidth at the size of its resident weights (a small model's weights stay in cache), and
// the per-forward overhead: the median one-position forward minus its roofline time (thread
// synchronisation per op, small kernels).
struct ArenaModelRates {
  std::string model;
  double weight_bytes = 0;
  double bandwidth_gbs = 0;                           // reading a buffer of weight_bytes
  std::vector<std::pair<double, double>> gemm_curve;  // (rows, FLOP/s)
  double forward_ms = 0;                              // measured one-position forward, median
  double roofline_ms = 0;  // its roofline time with the curve and bandwidth above
  double overhead_ms() const { return forward_ms > roofline_ms ? forward_ms - roofline_ms : 0; }
};

struct ArenaRow {
  std::string mode;
  bool diffusion = false;  // a full-canvas diffusion mode
  bool block = false;      // a block-diffusion mode (neither: AR)
  int64_t batch = 0;
  int64_t requests = 0;
  int64_t tokens = 0;  // output tokens returned (useful: through the first EOS)
  double wall_ms = 0;
  double tokens_per_second = 0;
  double ttft_p50_ms = 0, tpot_p50_ms = 0, e2e_p50_ms = 0, e2e_p90_ms = 0;
  double nfe_per_request = 0;     // target forwards a request took part in, mean
  double tokens_per_forward = 0;  // output tokens per target forward, mean over requests
  double acceptance = -1;         // speculative: accepted / drafted (-1: none)
  double arithmetic_intensity = 0;
  double achieved_gflops = 0;
  double roofline_fraction = 0;  // achieved FLOP/s over min(GEMM peak, intensity x bandwidth)
  double usd_per_million_tokens = 0;
  double tokens_per_dollar = 0;
  double forward_share = 0;          // of the wall time spent inside Model::Forward (target model)
  double ms_per_forward = 0;         // mean wall time of one target forward
  double positions_per_forward = 0;  // positions fed per target forward (all sequences), mean
  // Mixture-of-experts target models (zeros for dense ones): the mean distinct experts one MoE
  // layer's forward read, and the bytes of expert weights one forward read.
  double experts_per_layer_forward = 0;
  double expert_bytes_per_forward = 0;
  // What uniform independent routing would hit per layer forward, averaged over the same forwards
  // (ForwardTotals::experts_uniform; 0 for dense models and for model-drafter runs).
  double experts_uniform = 0;
};

// Summarizes a run (latencies from RequestStats; FLOPs and bytes from the forwards). The row's
// `block` is the caller's to set.
ArenaRow SummarizePoint(const ArenaPoint& p, bool diffusion, const ArenaMachine& machine);

struct ArenaQuality {
  std::string mode;
  double judge_ppl = 0;  // the AR judge (same tokenizer); < 0: not scored (another tokenizer)
  int64_t scored_tokens = 0;
  int64_t outputs = 0;
  // The second judge (its own tokenizer, the texts retokenized); < 0: no second judge.
  double judge2_ppl = -1;
  int64_t judge2_tokens = 0;
  int64_t judge2_outputs = 0;
};

struct ArenaValidation {
  std::string mode;
  int64_t batch = 0;
  double measured_tps = 0;
  double roofline_tps = 0;    // the planner as for the GPUs: large-GEMM peak, DRAM bandwidth
  double predicted_tps = 0;   // with this machine's measured rates for the model (ArenaModelRates)
  double forward_share = 0;   // of the run's wall time spent inside Model::Forward
  double ms_per_forward = 0;  // measured, target model
  double predicted_ms_per_forward = 0;  // with measured rates (0: not comparable, a model drafter)
  double error() const { return measured_tps > 0 ? predicted_tps / measured_tps - 1 : 0; }
  double roofline_error() const { return measured_tps > 0 ? roofline_tps / measured_tps - 1 : 0; }
};

struct ArenaReport {
  ArenaMachine machine;
  std::string diffusion_model, ar_model, draft_model, block_model, prompts_source;
  std::string judge_model, judge2_model;  // file names; "" = that judge did not run
  int64_t num_prompts = 0, prompt_length = 0, gen_length = 0, block_length = 0;
  int64_t block_model_block_length = 0;  // the block model's trained block (its modes use it)
  int64_t min_requests = 0;
  std::vector<int64_t> batches;
  std::vector<ArenaRow> rows;
  std::vector<ArenaQuality> quality;
  std::vector<ArenaValidation> validation;
  std::vector<ArenaModelRates> model_rates;
  std::vector<std::string> notes;
  // One line per mixture-of-experts model ("<file>: 16 experts per layer, top-2, ..."); empty
  // when every model is dense (the routing table is then left out).
  std::vector<std::string> routing;
  double elapsed_s = 0;
  // The first batch at which the best AR mode's tokens/s reaches the best full-canvas diffusion
  // mode's (`block`: the best block-diffusion mode's) — the first batch when AR leads throughout
  // —, -1 when it never does.
  int64_t Crossover(bool block = false) const;
};

std::string ArenaMarkdown(const ArenaReport& r);
nlohmann::json ArenaJson(const ArenaReport& r);
// Output tokens/s against batch size per mode (log-log), the crossover marked.
LinePlot ArenaThroughputPlot(const ArenaReport& r);
// Output tokens/s against end-to-end latency (p50), one line per mode through its batch sizes.
LinePlot ArenaLatencyPlot(const ArenaReport& r);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_ARENA_ARENA_REPORT_H_
