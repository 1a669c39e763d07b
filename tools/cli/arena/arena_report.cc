#include "cli/arena/arena_report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>

#include "plan/planner.h"

namespace unmask::tools {
namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}

const ArenaRow* FindRow(const ArenaReport& r, const std::string& mode, int64_t batch) {
  for (const ArenaRow& row : r.rows) {
    if (row.mode == mode && row.batch == batch) return &row;
  }
  return nullptr;
}

std::vector<std::string> ModeNames(const ArenaReport& r) {
  std::vector<std::string> names;
  for (const ArenaRow& row : r.rows) {
    if (std::find(names.begin(), names.end(), row.mode) == names.end()) names.push_back(row.mode);
  }
  return names;
}

// One plot series per mode through its batch sizes (diffusion and block modes dashed); `point` maps
// a row to its (x, y); with `label_batches` every point is labelled with its batch size.
std::vector<PlotSeries> ModeSeries(
    const ArenaReport& r, bool label_batches,
    const std::function<std::pair<double, double>(const ArenaRow&)>& point) {
  std::vector<PlotSeries> series;
  for (const std::string& mode : ModeNames(r)) {
    PlotSeries s;
    s.name = mode;
    for (int64_t b : r.batches) {
      const ArenaRow* row = FindRow(r, mode, b);
      if (row == nullptr) continue;
      s.dashed = row->diffusion || row->block;
      s.points.push_back(point(*row));
      if (label_batches) s.point_labels.push_back(std::to_string(b));
    }
    series.push_back(s);
  }
  return series;
}

// The routing section of arena.md: positions fed, experts read and expert bytes per forward of
// each MoE mode and batch; "" when no row ran an MoE model.
std::string RoutingTable(const ArenaReport& r) {
  bool any = false;
  for (const ArenaRow& w : r.rows) any = any || w.experts_per_layer_forward > 0;
  if (!any) return "";
  std::string o = "\n## Routing (mixture-of-experts models)\n\n";
  for (const std::string& line : r.routing) o += "- " + line + "\n";
  o += "\n| mode | batch | positions/forward | experts hit per layer forward | uniform routing "
       "would hit | expert MB per forward | FLOP/byte | % roofline | tokens/s |\n"
       "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ArenaRow& w : r.rows) {
    if (w.experts_per_layer_forward <= 0) continue;
    o += Printf("| %s | %lld | %.1f | %.2f | %s | %.3f | %.1f | %.0f%% | %.1f |\n", w.mode.c_str(),
                static_cast<long long>(w.batch), w.positions_per_forward,
                w.experts_per_layer_forward,
                w.experts_uniform > 0 ? Printf("%.2f", w.experts_uniform).c_str() : "-",
                w.expert_bytes_per_forward / 1e6, w.arithmetic_intensity, 100 * w.roofline_fraction,
                w.tokens_per_second);
  }
  o += "\nA forward reads only the experts some fed position was routed to; its FLOP/byte and "
       "roofline count those bytes (the other weights once per forward). Uniform routing: "
       "E (1 - (1 - k/E)^N) for the N positions of each forward, averaged over the row's forwards: "
       "what the planner assumes, the most a router choosing independently per position reads "
       "on average; a trained router that sends related positions to the same experts reads "
       "fewer.\n";
  return o;
}

}  // namespace

ArenaRow SummarizePoint(const ArenaPoint& p, bool diffusion, const ArenaMachine& machine) {
  ArenaRow row;
  row.mode = p.mode;
  row.diffusion = diffusion;
  row.batch = p.batch;
  row.requests = static_cast<int64_t>(p.requests.size());
  row.tokens = p.completion_tokens();
  row.wall_ms = p.wall_ms;
  row.tokens_per_second =
      p.wall_ms > 0 ? 1000.0 * static_cast<double>(row.tokens) / p.wall_ms : 0.0;
  std::vector<double> ttft, tpot, e2e;
  double nfe = 0, tpf = 0;
  for (const ArenaRequest& q : p.requests) {
    const RequestStats& s = q.stats;
    if (s.ttft_ms >= 0) ttft.push_back(s.ttft_ms);
    e2e.push_back(s.total_ms);
    if (s.completion_tokens > 1 && s.ttft_ms >= 0) {
      tpot.push_back((s.total_ms - s.ttft_ms) / static_cast<double>(s.completion_tokens - 1));
    }
    nfe += static_cast<double>(s.nfe);
    tpf += s.tokens_per_forward();
  }
  const double n = std::max<double>(1, static_cast<double>(p.requests.size()));
  row.ttft_p50_ms = Percentile(ttft, 0.5);
  row.tpot_p50_ms = Percentile(tpot, 0.5);
  row.e2e_p50_ms = Percentile(e2e, 0.5);
  row.e2e_p90_ms = Percentile(e2e, 0.9);
  row.nfe_per_request = nfe / n;
  row.tokens_per_forward = tpf / n;
  if (p.drafted > 0) {
    row.acceptance = static_cast<double>(p.accepted) / static_cast<double>(p.drafted);
  }
  row.arithmetic_intensity = p.totals.bytes > 0 ? p.totals.flops / p.totals.bytes : 0;
  row.achieved_gflops = p.wall_ms > 0 ? p.totals.flops / (p.wall_ms * 1e6) : 0;
  const double attainable =
      std::min(machine.gemm_gflops, row.arithmetic_intensity * machine.bandwidth_gbs);
  row.roofline_fraction = attainable > 0 ? row.achieved_gflops / attainable : 0;
  row.usd_per_million_tokens =
      plan::UsdPerMillionTokens(machine.price_per_hour, row.tokens_per_second);
  row.forward_share = p.wall_ms > 0 ? p.totals.forward_ms / p.wall_ms : 0;
  row.ms_per_forward =
      p.totals.forwards > 0 ? p.totals.forward_ms / static_cast<double>(p.totals.forwards) : 0;
  row.tokens_per_dollar =
      machine.price_per_hour > 0 ? row.tokens_per_second * 3600.0 / machine.price_per_hour : 0.0;
  if (p.totals.forwards > 0) {
    const double f = static_cast<double>(p.totals.forwards);
    row.positions_per_forward = static_cast<double>(p.totals.positions) / f;
    row.expert_bytes_per_forward = p.totals.expert_bytes / f;
  }
  if (p.totals.moe_layer_forwards > 0) {
    const double layer_forwards = static_cast<double>(p.totals.moe_layer_forwards);
    row.experts_per_layer_forward = static_cast<double>(p.totals.experts_hit) / layer_forwards;
    row.experts_uniform = p.totals.experts_uniform / layer_forwards;
  }
  return row;
}

int64_t ArenaReport::Crossover(bool block) const {
  for (int64_t b : batches) {
    double best_ar = -1, best_diffusion = -1;
    for (const ArenaRow& row : rows) {
      if (row.batch != b) continue;
      const bool ar = !row.diffusion && !row.block;
      if (!ar && row.block != block) continue;  // the other diffusion family
      double& best = ar ? best_ar : best_diffusion;
      best = std::max(best, row.tokens_per_second);
    }
    if (best_ar < 0 || best_diffusion < 0) continue;
    if (best_ar >= best_diffusion) return b;
  }
  return -1;
}

std::string ArenaMarkdown(const ArenaReport& r) {
  const ArenaMachine& m = r.machine;
  std::string o = "# unmask bench arena\n\n";
  o += Printf(
      "Machine (measured in this run): GEMM peaks %s; the engines compute in %s (peak %.1f, "
      "ridge %.1f FLOP/byte at memory read %.1f GB/s); %s.\n",
      m.gemm_peaks.c_str(), m.compute.c_str(), m.gemm_gflops,
      m.gemm_gflops / std::max(m.bandwidth_gbs, 1e-9), m.bandwidth_gbs, m.backend.c_str());
  o += Printf("Price: $%.4g per hour (%s).\n\n", m.price_per_hour, m.price_source.c_str());
  std::string models;
  for (const auto& [role, name] :
       {std::pair{"diffusion ", r.diffusion_model}, std::pair{"AR ", r.ar_model},
        std::pair{"draft ", r.draft_model}, std::pair{"block diffusion ", r.block_model}}) {
    if (!name.empty()) models += (models.empty() ? "" : ", ") + std::string(role) + name;
  }
  o += "Models: " + models + ".\n";
  if (!r.block_model.empty()) {
    o += Printf("Block modes decode with %s's trained block of %lld positions.\n",
                r.block_model.c_str(), static_cast<long long>(r.block_model_block_length));
  }
  o += Printf(
      "Workload: %lld prompts (%s), %lld prompt tokens, %lld output tokens (max_tokens; block "
      "%lld), temperature 0; each point runs max(batch, %lld) requests with `batch` closed-loop "
      "clients. Wall time %.0f s.\n\n",
      static_cast<long long>(r.num_prompts), r.prompts_source.c_str(),
      static_cast<long long>(r.prompt_length), static_cast<long long>(r.gen_length),
      static_cast<long long>(r.block_length), static_cast<long long>(r.min_requests), r.elapsed_s);
  o += "## Throughput, latency and cost\n\n";
  o += "| mode | batch | tokens/s | TTFT p50 ms | TPOT p50 ms | E2E p50 / p90 ms | NFE/request | "
       "tokens/forward | accept | FLOP/byte | GFLOP/s | % roofline | $/M tokens | tokens/$ |\n";
  o += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ArenaRow& w : r.rows) {
    o += Printf(
        "| %s | %lld | %.1f | %.1f | %.2f | %.0f / %.0f | %.1f | %.2f | %s | %.1f | %.1f | %.0f%% "
        "| %.3g | %.3g |\n",
        w.mode.c_str(), static_cast<long long>(w.batch), w.tokens_per_second, w.ttft_p50_ms,
        w.tpot_p50_ms, w.e2e_p50_ms, w.e2e_p90_ms, w.nfe_per_request, w.tokens_per_forward,
        w.acceptance >= 0 ? Printf("%.0f%%", 100 * w.acceptance).c_str() : "-",
        w.arithmetic_intensity, w.achieved_gflops, 100 * w.roofline_fraction,
        w.usd_per_million_tokens, w.tokens_per_dollar);
  }
  o += "\n% roofline = achieved FLOP/s / min(GEMM peak, intensity x bandwidth); tokens count what "
       "the requests returned (through the first end-of-text token).\n";
  o += RoutingTable(r);
  if (!r.quality.empty()) {
    const bool second = !r.judge2_model.empty();
    o += "\n## Quality (judge perplexity)\n\n| mode | judge ppl (" + r.judge_model +
         ") | scored tokens | outputs |" +
         (second ? " judge 2 ppl (" + r.judge2_model + ") | its scored tokens |" : "") + "\n" +
         "|---|---:|---:|---:|" + (second ? "---:|---:|" : "") + "\n";
    for (const ArenaQuality& q : r.quality) {
      o += Printf("| %s | %s | %lld | %lld |", q.mode.c_str(),
                  q.judge_ppl >= 0 ? Printf("%.2f", q.judge_ppl).c_str() : "-",
                  static_cast<long long>(q.scored_tokens), static_cast<long long>(q.outputs));
      if (second) {
        o += Printf(" %s | %lld |", q.judge2_ppl >= 0 ? Printf("%.2f", q.judge2_ppl).c_str() : "-",
                    static_cast<long long>(q.judge2_tokens));
      }
      o += "\n";
    }
    o += "\nJudge: the AR model's perplexity of each output given its prompt, in the engines' own "
         "token ids, through the first end-of-text token, over the outputs of the mode's largest "
         "batch (outputs at temperature 0 do not depend on the batch)";
    o += second ? ". Judge 2: an independent model's perplexity of the same outputs as text: "
                  "prompt and output decoded, retokenized with its own tokenizer (BOS as it "
                  "wants), NLL over the output's tokens only (those after the longest common "
                  "prefix with the prompt's tokens), up to the first end-of-text token, which "
                  "is not scored.\n"
                : ".\n";
  }
  o += "\n## Crossover\n\n";
  auto any = [&](auto pred) { return std::any_of(r.rows.begin(), r.rows.end(), pred); };
  const bool any_ar = any([](const ArenaRow& w) { return !w.diffusion && !w.block; });
  const bool any_diffusion = any([](const ArenaRow& w) { return w.diffusion; });
  const bool any_block = any([](const ArenaRow& w) { return w.block; });
  if (!any_ar || (!any_diffusion && !any_block)) {
    o += "Needs both an AR and a diffusion or block-diffusion mode.\n";
  }
  // One line per diffusion family run beside AR.
  for (const bool block : {false, true}) {
    if (!any_ar || !(block ? any_block : any_diffusion)) continue;
    const char* family = block ? "block diffusion" : "diffusion";
    const int64_t x = r.Crossover(block);
    if (x < 0) {
      o += Printf("%s keeps the higher throughput at every batch size measured.\n",
                  block ? "Block diffusion" : "Diffusion");
    } else if (!r.batches.empty() && x == r.batches.front()) {
      o += Printf("AR has the higher throughput than %s already at batch %lld.\n", family,
                  static_cast<long long>(x));
    } else {
      o += Printf("AR catches up with %s at batch %lld.\n", family, static_cast<long long>(x));
    }
  }
  if (!r.validation.empty()) {
    o += "\n## Planner against measurement (this machine)\n\n"
         "| mode | batch | measured tokens/s | roofline (peak rates) | error | roofline (measured "
         "rates) | error | time in forwards | ms per forward: measured / roofline |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const ArenaValidation& v : r.validation) {
      o += Printf("| %s | %lld | %.1f | %.1f | %+.0f%% | %.1f | %+.0f%%%s | %.0f%% | %s |\n",
                  v.mode.c_str(), static_cast<long long>(v.batch), v.measured_tps, v.roofline_tps,
                  100 * v.roofline_error(), v.predicted_tps, 100 * v.error(),
                  std::fabs(v.error()) <= 0.3 ? "" : " (over 30%)", 100 * v.forward_share,
                  v.predicted_ms_per_forward > 0
                      ? Printf("%.3f / %.3f", v.ms_per_forward, v.predicted_ms_per_forward).c_str()
                      : "-");
    }
    // Where the model misses, what the measurement says about why.
    double over = 0, fwd_ratio = 0, outside = 0;
    for (const ArenaValidation& v : r.validation) {
      if (std::fabs(v.error()) <= 0.3 || v.predicted_ms_per_forward <= 0) continue;
      over += 1;
      fwd_ratio += v.ms_per_forward / v.predicted_ms_per_forward;
      outside += 1 - v.forward_share;
    }
    if (over > 0) {
      o += Printf(
          "\nWhere the error exceeds 30%% (rows with comparable forwards: %.0f): a forward took "
          "%.2fx its roofline time on average (the roofline counts matrix products only: "
          "attention softmax, norms, RoPE, activations and the many small ops of a small model "
          "are not in it), and %.0f%% of the wall time was spent outside the forwards (commit "
          "rules and argmax over the vocabulary for every logit row, the engine loop, text "
          "assembly).\n",
          over, fwd_ratio / over, 100 * outside / over);
    }
    o += "\nBoth predictions are `unmask plan`'s roofline model with the measured tokens per "
         "forward (diffusion) or per verify forward (speculation) of each mode, the models' "
         "resident weight bytes and f32 KV cache and activations. \"Peak rates\" is the model "
         "as used for the GPUs: the large-GEMM peak and the main-memory bandwidth measured above, "
         "no overhead. \"Measured rates\" uses what this machine does for each model (below): "
         "the GEMM rate at the forward's number of rows on the model's own weight matrix, the "
         "read bandwidth at the size of its weights, and its per-forward overhead. \"Time in "
         "forwards\": the share of the wall time inside the target model's forwards; the rest "
         "(decoders, sampling, the engine loop, a model drafter) is outside any roofline.\n\n"
         "| model | weights MB | bandwidth at that size GB/s | GEMM GFLOP/s at 1 / 16 / 128 / "
         "1024 rows | one-position forward ms | its roofline ms | overhead ms |\n"
         "|---|---:|---:|---:|---:|---:|---:|\n";
    for (const ArenaModelRates& h : r.model_rates) {
      auto at = [&](double n) {
        plan::MachineRates curve;
        curve.flops_curve = h.gemm_curve;
        return curve.FlopsAt(n) / 1e9;
      };
      o += Printf("| %s | %.1f | %.1f | %.1f / %.1f / %.1f / %.1f | %.3f | %.3f | %.3f |\n",
                  h.model.c_str(), h.weight_bytes / 1e6, h.bandwidth_gbs, at(1), at(16), at(128),
                  at(1024), h.forward_ms, h.roofline_ms, h.overhead_ms());
    }
  }
  if (!r.notes.empty()) {
    o += "\n## Notes\n\n";
    for (const std::string& n : r.notes) o += "- " + n + "\n";
  }
  return o;
}

nlohmann::json ArenaJson(const ArenaReport& r) {
  nlohmann::json rows = nlohmann::json::array(), quality = nlohmann::json::array(),
                 validation = nlohmann::json::array();
  for (const ArenaRow& w : r.rows) {
    rows.push_back(
        {{"mode", w.mode},
         {"engine", w.block       ? "block"
                    : w.diffusion ? "diffusion"
                                  : "ar"},
         {"batch", w.batch},
         {"requests", w.requests},
         {"output_tokens", w.tokens},
         {"wall_ms", w.wall_ms},
         {"tokens_per_second", w.tokens_per_second},
         {"ttft_p50_ms", w.ttft_p50_ms},
         {"tpot_p50_ms", w.tpot_p50_ms},
         {"e2e_p50_ms", w.e2e_p50_ms},
         {"e2e_p90_ms", w.e2e_p90_ms},
         {"nfe_per_request", w.nfe_per_request},
         {"tokens_per_forward", w.tokens_per_forward},
         {"acceptance", w.acceptance >= 0 ? nlohmann::json(w.acceptance) : nlohmann::json(nullptr)},
         {"arithmetic_intensity", w.arithmetic_intensity},
         {"achieved_gflops", w.achieved_gflops},
         {"roofline_fraction", w.roofline_fraction},
         {"usd_per_million_tokens", w.usd_per_million_tokens},
         {"tokens_per_dollar", w.tokens_per_dollar},
         {"forward_share", w.forward_share},
         {"ms_per_forward", w.ms_per_forward},
         {"positions_per_forward", w.positions_per_forward},
         {"experts_per_layer_forward", w.experts_per_layer_forward},
         {"expert_bytes_per_forward", w.expert_bytes_per_forward},
         {"experts_uniform", w.experts_uniform}});
  }
  for (const ArenaQuality& q : r.quality) {
    auto ppl = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
    quality.push_back({{"mode", q.mode},
                       {"judge_ppl", ppl(q.judge_ppl)},
                       {"scored_tokens", q.scored_tokens},
                       {"outputs", q.outputs},
                       {"judge2_ppl", ppl(q.judge2_ppl)},
                       {"judge2_scored_tokens", q.judge2_tokens},
                       {"judge2_outputs", q.judge2_outputs}});
  }
  for (const ArenaValidation& v : r.validation) {
    validation.push_back({{"mode", v.mode},
                          {"batch", v.batch},
                          {"measured_tokens_per_second", v.measured_tps},
                          {"roofline_tokens_per_second", v.roofline_tps},
                          {"roofline_relative_error", v.roofline_error()},
                          {"predicted_tokens_per_second", v.predicted_tps},
                          {"relative_error", v.error()},
                          {"forward_share", v.forward_share},
                          {"ms_per_forward", v.ms_per_forward},
                          {"predicted_ms_per_forward", v.predicted_ms_per_forward}});
  }
  nlohmann::json model_rates = nlohmann::json::array();
  for (const ArenaModelRates& h : r.model_rates) {
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& [n, flops] : h.gemm_curve) curve.push_back({n, flops / 1e9});
    model_rates.push_back({{"model", h.model},
                           {"weight_bytes", h.weight_bytes},
                           {"bandwidth_gbs", h.bandwidth_gbs},
                           {"gemm_gflops_by_rows", curve},
                           {"one_position_forward_ms", h.forward_ms},
                           {"one_position_roofline_ms", h.roofline_ms},
                           {"overhead_ms", h.overhead_ms()}});
  }
  const int64_t x = r.Crossover();
  const int64_t xb = r.Crossover(true);
  return {{"machine",
           {{"gemm_peak_gflops", r.machine.gemm_gflops},
            {"compute", r.machine.compute},
            {"gemm_peaks", r.machine.gemm_peaks},
            {"bandwidth_gbs", r.machine.bandwidth_gbs},
            {"threads", r.machine.threads},
            {"backend", r.machine.backend},
            {"price_per_hour", r.machine.price_per_hour},
            {"price_source", r.machine.price_source}}},
          {"models",
           {{"diffusion", r.diffusion_model},
            {"ar", r.ar_model},
            {"draft", r.draft_model},
            {"block", r.block_model},
            {"block_length_of_block_model", r.block_model_block_length},
            {"judge", r.judge_model},
            {"judge2", r.judge2_model}}},
          {"workload",
           {{"prompts", r.num_prompts},
            {"prompts_source", r.prompts_source},
            {"prompt_length", r.prompt_length},
            {"gen_length", r.gen_length},
            {"block_length", r.block_length},
            {"min_requests", r.min_requests},
            {"batches", r.batches}}},
          {"rows", rows},
          {"quality", quality},
          {"validation", validation},
          {"model_rates", model_rates},
          {"crossover_batch", x < 0 ? nlohmann::json(nullptr) : nlohmann::json(x)},
          {"block_crossover_batch", xb < 0 ? nlohmann::json(nullptr) : nlohmann::json(xb)},
          {"notes", r.notes},
          {"elapsed_s", r.elapsed_s}};
}

LinePlot ArenaThroughputPlot(const ArenaReport& r) {
  LinePlot plot;
  plot.title = "arena: output tokens/s against batch size (this machine, " +
               std::to_string(r.machine.threads) +
               (r.machine.threads == 1 ? " thread)" : " threads)");
  plot.x_label = "batch size (concurrent requests)";
  plot.y_label = "output tokens/s";
  plot.log_x = plot.log_y = true;
  plot.series = ModeSeries(r, false, [](const ArenaRow& row) {
    return std::pair{static_cast<double>(row.batch), row.tokens_per_second};
  });
  const int64_t x = r.Crossover();
  if (x >= 0) {
    plot.markers.push_back(
        {static_cast<double>(x), !r.batches.empty() && x == r.batches.front()
                                     ? "AR ahead from batch " + std::to_string(x)
                                     : "crossover: AR catches up at batch " + std::to_string(x)});
  }
  plot.notes.push_back("diffusion and block modes dashed; prompt " +
                       std::to_string(r.prompt_length) + ", output " +
                       std::to_string(r.gen_length) + " tokens, temperature 0; unmask bench arena");
  return plot;
}

LinePlot ArenaLatencyPlot(const ArenaReport& r) {
  LinePlot plot;
  plot.title = "arena: throughput against latency (points: batch sizes)";
  plot.x_label = "end-to-end latency per request, p50 (ms)";
  plot.y_label = "output tokens/s (all requests)";
  plot.log_x = plot.log_y = true;
  plot.series = ModeSeries(r, true, [](const ArenaRow& row) {
    return std::pair{row.e2e_p50_ms, row.tokens_per_second};
  });
  plot.notes.push_back(
      "up and left is better; diffusion and block modes dashed; labels are batch sizes");
  return plot;
}

}  // namespace unmask::tools
