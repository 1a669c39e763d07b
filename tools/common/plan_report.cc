#include "common/plan_report.h"

#include <cmath>
#include <cstdio>
#include "decode/decoder_factory.h"

namespace unmask::tools {
namespace {

// `v` with `digits` decimals.
std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// `v` with `digits` significant digits.
std::string Sig(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
  return buf;
}

// tokens/s with a sensible number of digits.
std::string Rate(double v) { return Fixed(v, v >= 100 ? 0 : v >= 10 ? 1 : 2); }

// `unmask plan`'s engine sets hold AR-family and full-canvas diffusion engines only (plan_command
// refuses block-diffusion models; the arena projects its block rows itself, without this report).
const PlanModel& ModelOf(const PlanInputs& in, const plan::EngineSpec& e) {
  return e.diffusion() || e.block_diffusion() ? in.diffusion : in.ar;
}

std::string Describe(const PlanModel& m) {
  const double n = static_cast<double>(m.config.NumParameters());
  // A block-causal model is neither kind: named as what it is, should one ever be passed.
  const char* kind = m.config.is_diffusion()         ? "diffusion"
                     : m.config.is_block_diffusion() ? "block diffusion"
                                                     : "AR";
  return m.name + " (" + kind + ", " +
         (n >= 1e9 ? Fixed(n / 1e9, 2) + "B" : Fixed(n / 1e6, 2) + "M") + " parameters, context " +
         std::to_string(m.config.context_length) + ")";
}

// Per AR-family engine, the first batch from which it alone reaches the best diffusion
// throughput (-1: never).
std::vector<std::pair<std::string, int64_t>> CrossoverByEngine(const PlanInputs& in,
                                                               const PlanReport& report) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const plan::EngineSpec& e : in.engines) {
    if (!e.ar_family()) continue;
    std::vector<plan::EngineSpec> pair = {e};
    for (const plan::EngineSpec& d : in.engines) {
      if (!d.ar_family()) pair.push_back(d);
    }
    std::vector<plan::Projection> rows;
    for (const plan::Projection& p : report.rows) {
      for (const plan::EngineSpec& x : pair) {
        if (x.name == p.engine) rows.push_back(p);
      }
    }
    out.emplace_back(e.name, plan::CrossoverBatch(pair, rows, in.batches));
  }
  return out;
}

// The projection of `engine` at `batch` (ProjectPlan makes one for every pair).
const plan::Projection& Find(const PlanReport& r, const std::string& engine, int64_t batch) {
  static const plan::Projection kNone;
  for (const plan::Projection& p : r.rows) {
    if (p.engine == engine && p.batch == batch) return p;
  }
  return kNone;
}

}  // namespace

void CompleteModelPair(PlanInputs& in) {
  if (in.ar.name.empty() && !in.diffusion.name.empty()) {
    in.ar = in.diffusion;
    in.ar.config.attention = AttentionKind::kCausal;
    in.ar.name = in.diffusion.name + "-as-ar";
    in.notes.push_back("no AR model given: the AR engines run " + in.diffusion.name +
                       "'s architecture with causal attention");
  } else if (in.diffusion.name.empty() && !in.ar.name.empty()) {
    in.diffusion = in.ar;
    in.diffusion.config.attention = AttentionKind::kBidirectional;
    in.diffusion.name = in.ar.name + "-as-diffusion";
    in.notes.push_back("no diffusion model given: the diffusion engines run " + in.ar.name +
                       "'s architecture with bidirectional attention");
  }
}

std::vector<plan::EngineSpec> DefaultPlanEngines(int64_t block_length, double fast_k,
                                                 int64_t draft_max, double tokens_per_verify) {
  plan::EngineSpec ar{.name = "ar", .kind = plan::EngineKind::kAr};
  plan::EngineSpec spec{.name = "ar+spec",
                        .kind = plan::EngineKind::kArSpeculative,
                        .draft_max = draft_max,
                        .tokens_per_verify = tokens_per_verify};
  plan::EngineSpec exact{.name = "diffusion-exact",
                         .kind = plan::EngineKind::kDiffusion,
                         .block_length = block_length,
                         .tokens_per_forward = 1};
  plan::EngineSpec fast{.name = "diffusion-fast",
                        .kind = plan::EngineKind::kDiffusion,
                        .block_length = block_length,
                        .tokens_per_forward = fast_k,
                        .cache = plan::DiffusionCache::kDual};
  return {ar, spec, exact, fast};
}

std::vector<plan::EngineSpec> BlockPlanEngines(int64_t block_length, double block_k,
                                               int64_t draft_max, double tokens_per_verify) {
  std::vector<plan::EngineSpec> engines =
      DefaultPlanEngines(block_length, block_k, draft_max, tokens_per_verify);
  engines.resize(2);  // ar, ar+spec
  engines.push_back({.name = "block-exact",
                     .kind = plan::EngineKind::kBlockDiffusion,
                     .block_length = block_length,
                     .tokens_per_forward = 1});
  engines.push_back({.name = "block-threshold",
                     .kind = plan::EngineKind::kBlockDiffusion,
                     .block_length = block_length,
                     .tokens_per_forward = block_k});
  return engines;
}

std::vector<std::string> PlanAssumptions(const PlanInputs& in, const std::string& dtype,
                                         double overhead_ms) {
  std::vector<std::string> a = {
      "models: diffusion engines run " + Describe(in.diffusion) + "; AR engines run " +
          Describe(in.ar),
      "workload: prompt " + std::to_string(in.workload.prompt_length) + " tokens, output " +
          std::to_string(in.workload.gen_length) +
          " tokens per request; a static batch (all requests start together and run to the end)",
      "roofline per forward: time = max(FLOPs / (peak x compute efficiency), bytes / (bandwidth "
      "x bandwidth efficiency)) + " +
          Sig(overhead_ms, 3) + " ms overhead",
      "FLOPs: 2 per multiply-accumulate of every matrix product and attention score "
      "(ModelConfig::ForwardFlops, the formula the engine reports for its own forwards); "
      "elementwise ops not counted",
      "bytes: the weights once per forward (" + dtype +
          ") + KV cache read and written + activations (" + (dtype == "f32" ? "f32" : "16-bit") +
          "); mixture-of-experts models read only the routed experts a forward is expected to "
          "touch: E (1 - (1 - k/E)^N) per MoE layer for N positions fed by the batch (uniform, "
          "independent routing: an upper bound; trained routers touch fewer)",
      "AR: the prompt in one forward (TTFT), then one token per forward per request",
      "tokens/s counts output tokens of the whole batch; TPOT = (E2E - TTFT) / (output - 1); "
      "$/M tokens = price per hour / (tokens/s x 3600) x 1e6; "
      "compute-bound = the share of the time in forwards whose FLOPs take longer than their bytes",
      "memory: the weights, plus per request the KV cache of the whole sequence and the "
      "activations of its largest forward; rows that do not fit are marked (over memory)",
  };
  for (const plan::EngineSpec& e : in.engines) {
    if (e.kind == plan::EngineKind::kArSpeculative) {
      a.push_back(e.name + ": " + std::to_string(e.draft_max) + " drafts verified per forward, " +
                  Fixed(e.tokens_per_verify, 2) + " tokens committed per verify forward" +
                  (e.draft_passes < 0
                       ? " (llama.cpp reports 72% acceptance for Llama-3.1-8B with a 1B "
                         "drafter)"
                       : " (an EAGLE-2 tree: the draft layer runs once per level)") +
                  "; drafting costs " +
                  (e.draft_cost > 0 ? std::to_string(e.passes()) + " pass(es) of " +
                                          Fixed(e.draft_cost, 3) + " of a target forward each"
                                    : std::string("nothing (prompt lookup)")));
    } else if (e.block_diffusion()) {
      a.push_back(e.name + ": block-causal attention over blocks of " +
                  std::to_string(e.block_length) + ", " + Fixed(e.tokens_per_forward, 2) +
                  " tokens committed per forward, a KV cache of the finished blocks, the fused "
                  "schedule (each block's first forward writes the K/V of the block before)");
    } else if (e.diffusion()) {
      if (in.workload.gen_length % e.block_length != 0) {
        a.push_back(e.name + ": the canvas is the output rounded up to a multiple of the block (" +
                    std::to_string(DiffusionCanvasLength(in.workload.gen_length, e.block_length)) +
                    " positions); only the requested tokens count");
      }
      a.push_back(
          e.name + ": block " + std::to_string(e.block_length) + ", " +
          Fixed(e.tokens_per_forward, 2) + " tokens committed per forward, " +
          (e.cache == plan::DiffusionCache::kNone
               ? std::string("no cache: the whole canvas every forward (LLaDA reference)")
               : std::string(e.cache == plan::DiffusionCache::kDual ? "dual" : "prefix") +
                     " cache: one full forward per block, then " +
                     (e.cache == plan::DiffusionCache::kDual ? "the block only"
                                                             : "the block and what follows") +
                     " (Fast-dLLM)"));
    }
  }
  if (in.latency_target_ms > 0) {
    a.push_back("winner: the fastest engine whose end-to-end latency is within " +
                Sig(in.latency_target_ms, 4) + " ms and that fits in memory");
  } else {
    a.push_back("winner: the fastest engine that fits in memory");
  }
  for (const std::string& n : in.notes) a.push_back(n);
  return a;
}

StatusOr<PlanReport> ProjectPlan(const PlanInputs& in, const plan::MachineRates& rates) {
  PlanReport r;
  for (const plan::EngineSpec& e : in.engines) {
    for (int64_t b : in.batches) {
      UNMASK_ASSIGN_OR_RETURN(plan::Projection p,
                              plan::Project(ModelOf(in, e).config, e, in.workload, rates, b));
      r.rows.push_back(p);
    }
  }
  for (int64_t b : in.batches) {
    std::string best;
    double best_tps = -1;
    for (const plan::EngineSpec& e : in.engines) {
      const plan::Projection* p = &Find(r, e.name, b);
      if (!p->fits_memory) continue;
      if (in.latency_target_ms > 0 && p->e2e_ms > in.latency_target_ms) continue;
      if (p->tokens_per_second > best_tps) best_tps = p->tokens_per_second, best = e.name;
    }
    r.winners.push_back(best);
  }
  r.crossover = plan::CrossoverBatch(in.engines, r.rows, in.batches);
  return r;
}

void PrintPlanMarkdown(const plan::Hardware& hw, const plan::MachineRates& rates,
                       const std::string& dtype, double price, bool price_overridden,
                       const PlanInputs& in, const PlanReport& report) {
  std::printf("\n## %s: %s\n\n", hw.id.c_str(), hw.name.c_str());
  std::printf(
      "%s %.4g TFLOP/s x %.2f, %.0f GB/s x %.2f -> ridge %.0f FLOP/byte; %.0f GB; $%.4g/h%s\n\n",
      dtype.c_str(), hw.peak_tflops.at(dtype), hw.compute_efficiency, hw.memory_bandwidth_gbs,
      hw.bandwidth_efficiency, rates.ridge(), hw.memory_gb, price,
      price_overridden
          ? " (--price-per-hour)"
          : (" (table range $" + Sig(hw.price.low, 4) + "-" + Sig(hw.price.high, 4) + ")").c_str());
  std::printf("| batch |");
  for (const plan::EngineSpec& e : in.engines) std::printf(" %s tok/s |", e.name.c_str());
  std::printf(" winner | winner $/M tokens |\n|---:|");
  for (size_t i = 0; i < in.engines.size(); ++i) std::printf("---:|");
  std::printf("---|---:|\n");
  for (size_t i = 0; i < in.batches.size(); ++i) {
    std::printf("| %lld |", static_cast<long long>(in.batches[i]));
    for (const plan::EngineSpec& e : in.engines) {
      const plan::Projection* p = &Find(report, e.name, in.batches[i]);
      std::printf(" %s%s |", Rate(p->tokens_per_second).c_str(),
                  p->fits_memory ? "" : " (over memory)");
    }
    const std::string& w = report.winners[i];
    if (w.empty()) {
      std::printf(in.latency_target_ms > 0 ? " none fits and meets the target | - |\n"
                                           : " none fits in memory | - |\n");
    } else {
      const double tps = Find(report, w, in.batches[i]).tokens_per_second;
      std::printf(" %s | %.3g |\n", w.c_str(), plan::UsdPerMillionTokens(price, tps));
    }
  }
  std::string each;
  for (const auto& [name, x] : CrossoverByEngine(in, report)) {
    each += (each.empty() ? "" : "; ") + name + ": " +
            (x < 0 ? std::string("never") : "from batch " + std::to_string(x));
  }
  if (report.crossover < 0) {
    std::printf(
        "\nAt no batch size projected does AR reach diffusion's throughput among the engines "
        "that fit in memory (%s).\n",
        each.c_str());
  } else if (report.crossover == in.batches.front()) {
    std::printf("\nAR is ahead of diffusion already at batch %lld (%s).\n",
                static_cast<long long>(report.crossover), each.c_str());
  } else {
    std::printf("\nAR catches up with diffusion at batch %lld (%s).\n",
                static_cast<long long>(report.crossover), each.c_str());
  }
  // The crossover is the first batch where AR leads; the lead may change hands again later
  // (block diffusion's intensity pays off at larger batches): say who leads where.
  {
    auto family = [&](const std::string& engine) -> std::string {
      for (const plan::EngineSpec& e : in.engines) {
        if (e.name == engine) return e.ar_family() ? "AR" : "diffusion";
      }
      return "";
    };
    std::string runs;
    int count = 0;
    for (size_t i = 0; i < in.batches.size();) {
      const std::string f = report.winners[i].empty() ? "" : family(report.winners[i]);
      size_t j = i;
      while (j + 1 < in.batches.size() &&
             (report.winners[j + 1].empty() ? "" : family(report.winners[j + 1])) == f) {
        ++j;
      }
      if (!f.empty()) {
        runs += (runs.empty() ? "" : ", ") + f + " at batch " + std::to_string(in.batches[i]) +
                (j > i ? "-" + std::to_string(in.batches[j]) : std::string());
        ++count;
      }
      i = j + 1;
    }
    if (count > 1) std::printf("The lead changes hands: %s.\n", runs.c_str());
  }
  std::printf(
      "Projections that do not fit in memory are marked and take no part in the winner or the "
      "crossover.\n");
  std::printf(
      "\nBatch %lld per engine:\n\n| engine | TTFT ms | TPOT ms | E2E ms | NFE | tokens/forward | "
      "FLOP/byte | compute-bound | $/M tokens |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      static_cast<long long>(in.batches.front()));
  for (const plan::EngineSpec& e : in.engines) {
    const plan::Projection* p = &Find(report, e.name, in.batches.front());
    std::printf("| %s | %.3g | %.3g | %.4g | %.0f | %.2f | %.1f | %.0f%% | %.3g |\n",
                e.name.c_str(), p->ttft_ms, p->tpot_ms, p->e2e_ms, p->forwards,
                p->tokens_per_forward, p->arithmetic_intensity(), 100 * p->compute_bound_fraction,
                plan::UsdPerMillionTokens(price, p->tokens_per_second));
  }
}

nlohmann::json PlanJson(const plan::Hardware& hw, const plan::MachineRates& rates,
                        const std::string& dtype, double price, const PlanInputs& in,
                        const PlanReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const plan::Projection& p : report.rows) {
    rows.push_back({{"engine", p.engine},
                    {"batch", p.batch},
                    {"fits_memory", p.fits_memory},
                    {"tokens_per_second", p.tokens_per_second},
                    {"ttft_ms", p.ttft_ms},
                    {"tpot_ms", p.tpot_ms},
                    {"e2e_ms", p.e2e_ms},
                    {"nfe", p.forwards},
                    {"tokens_per_forward", p.tokens_per_forward},
                    {"flops", p.flops},
                    {"bytes", p.bytes},
                    {"arithmetic_intensity", p.arithmetic_intensity()},
                    {"expert_bytes", p.expert_bytes},
                    {"experts_hit_per_layer", p.experts_hit_per_layer},
                    {"compute_bound_fraction", p.compute_bound_fraction},
                    {"usd_per_million_tokens",
                     std::isfinite(plan::UsdPerMillionTokens(price, p.tokens_per_second))
                         ? nlohmann::json(plan::UsdPerMillionTokens(price, p.tokens_per_second))
                         : nlohmann::json(nullptr)}});
  }
  nlohmann::json by_engine = nlohmann::json::object();
  for (const auto& [name, x] : CrossoverByEngine(in, report)) {
    by_engine[name] = x < 0 ? nlohmann::json(nullptr) : nlohmann::json(x);
  }
  nlohmann::json winners = nlohmann::json::array();
  for (size_t i = 0; i < in.batches.size(); ++i) {
    winners.push_back({{"batch", in.batches[i]},
                       {"engine", report.winners[i].empty() ? nlohmann::json(nullptr)
                                                            : nlohmann::json(report.winners[i])}});
  }
  return {{"id", hw.id},
          {"name", hw.name},
          {"dtype", dtype},
          {"peak_tflops", hw.peak_tflops.at(dtype)},
          {"compute_efficiency", hw.compute_efficiency},
          {"memory_bandwidth_gbs", hw.memory_bandwidth_gbs},
          {"bandwidth_efficiency", hw.bandwidth_efficiency},
          {"ridge_flop_per_byte", rates.ridge()},
          {"price_per_hour", price},
          {"sources", hw.sources},
          {"diffusion_model", in.diffusion.name},
          {"ar_model", in.ar.name},
          {"prompt_length", in.workload.prompt_length},
          {"gen_length", in.workload.gen_length},
          {"crossover_batch",
           report.crossover < 0 ? nlohmann::json(nullptr) : nlohmann::json(report.crossover)},
          {"crossover_batch_by_engine", by_engine},
          {"winners", winners},
          {"rows", rows}};
}

LinePlot PlanPlot(const plan::Hardware& hw, const std::string& dtype, const PlanInputs& in,
                  const PlanReport& report) {
  LinePlot plot;
  plot.title = "projected throughput on " + hw.id + " (" + dtype + "): " + in.diffusion.name +
               " vs " + in.ar.name;
  plot.x_label = "batch size (concurrent requests)";
  plot.y_label = "output tokens/s (all requests)";
  plot.log_x = plot.log_y = true;
  for (const plan::EngineSpec& e : in.engines) {
    PlotSeries s{e.name, {}, !e.ar_family(), {}};
    for (int64_t b : in.batches) {
      const plan::Projection* p = &Find(report, e.name, b);
      s.points.emplace_back(static_cast<double>(b), p->tokens_per_second);
    }
    plot.series.push_back(s);
  }
  if (report.crossover > in.batches.front()) {
    plot.markers.push_back({static_cast<double>(report.crossover),
                            "AR catches up at batch " + std::to_string(report.crossover)});
  }
  plot.notes.push_back("roofline projection (unmask plan): prompt " +
                       std::to_string(in.workload.prompt_length) + ", output " +
                       std::to_string(in.workload.gen_length) +
                       " tokens; diffusion dashed; assumptions in the plan's output");
  return plot;
}

}  // namespace unmask::tools
