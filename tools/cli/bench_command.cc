#include "cli/bench_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "common/cli_util.h"
#include "common/decode_args.h"
#include "common/moe_report.h"
#include "common/roofline.h"
#include "common/summary.h"
#include "common/terminal.h"
#include "core/parallel.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask bench";

struct Row {
  std::string blas;
  std::string requested;  // the compute type asked for
  std::string compute;    // the compute type the model ran in (f32 after a fallback)
  std::string backend;
  MeanSd tps, gflops, forward_ms_per_nfe;
  double gemm_peak = 0;
  int64_t nfe = 0;
  double intensity = 0;  // FLOPs per byte moved (weights, KV cache, activations)
  nlohmann::json moe;    // the last run's routing (MoE models; common/moe_report.h)
  std::string moe_line;
};

// A fixed random prompt of ordinary tokens (no control or mask ids; any non-mask id when the
// vocabulary has (almost) no ordinary tokens); empty when no token qualifies.
std::vector<int32_t> RandomPrompt(const LoadedModel& lm, int64_t length) {
  const SpecialTokens& sp = lm.tokenizer->special();
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(
      0, static_cast<int32_t>(lm.model->config().vocab_size - 1));
  std::vector<int32_t> prompt;
  const int64_t max_draws = 64 * length + 4096;
  for (int64_t draw = 0; static_cast<int64_t>(prompt.size()) < length; ++draw) {
    const int32_t id = pick(rng);
    const bool ordinary = !lm.tokenizer->IsControl(id) || draw >= max_draws;
    if (ordinary && id != sp.mask) prompt.push_back(id);
    if (draw >= 2 * max_draws && prompt.empty()) break;
  }
  return prompt;
}

std::string DescribeModel(const ModelConfig& c) {
  char desc[200];
  std::snprintf(desc, sizeof(desc), "%s %.1fM (%lldx%lld, vocab %lld)", c.architecture.c_str(),
                static_cast<double>(c.NumParameters()) / 1e6, static_cast<long long>(c.num_layers),
                static_cast<long long>(c.hidden_size), static_cast<long long>(c.vocab_size));
  return desc;
}

// The row's compute type as asked, with the type that ran when they differ ("bf16->f32").
std::string Label(const Row& r) {
  return r.requested == r.compute ? r.compute : r.requested + "->" + r.compute;
}

nlohmann::json PeaksJson(const std::vector<TypedPeak>& peaks) {
  nlohmann::json j = nlohmann::json::object();
  for (const TypedPeak& p : peaks) j[std::string(ComputeTypeName(p.type))] = p.gflops;
  return j;
}

}  // namespace

void BenchCommand::AddTo(CLI::App& app) {
  cli = &app;
  model.AddTo(app);
  app.remove_option(app.get_option("--blas"));  // bench compares the libraries of --blas-list
  // --compute (one type) and --compute-list (several rows) exclude each other.
  diffusion.AddTo(app);
  app.add_option("--prompt-length", prompt_length,
                 "prompt tokens (random ids from the vocabulary, fixed seed)")
      ->check(IntegerIn(1, kMaxLength))
      ->capture_default_str();
  app.add_option("-r,--reps", reps, "timed repetitions per row (after one warm-up run)")
      ->check(IntegerIn(1, 1000))
      ->capture_default_str();
  app.add_option("--blas-list", blas_list,
                 "GEMM libraries to compare; the first row is the baseline of the 'vs base' "
                 "column")
      ->delimiter(',')
      ->check(CLI::IsMember({"onednn", "openblas"}))
      ->capture_default_str();
  app.add_option(
         "--compute-list", compute_list,
         "compute types to compare, e.g. f32,bf16,int8 (each loads the model again, "
         "packed in that type; bf16/int8 run with onednn only); each row is judged against "
         "the GEMM peak of its own type measured in the same run. Default: --compute's type")
      ->delimiter(',')
      ->check(CLI::IsMember({"auto", "f32", "bf16", "int8"}))
      ->excludes(app.get_option("--compute"));
  app.add_option("-o,--output", output, "md (table) or json (one object per line)")
      ->check(CLI::IsMember({"md", "json"}))
      ->capture_default_str();
  app.add_option("--reference-tps", reference_tps,
                 "tokens/s of an outside reference measured for the SAME model and setting, to "
                 "print a 'vs reference' column (0: none). scripts/bench-llada.sh passes 3.75, "
                 "llama.cpp's llama-diffusion-cli on its setting (docs/benchmarks.md)")
      ->check(FiniteAtLeast(0))
      ->capture_default_str();
}

int BenchCommand::Run() const {
  auto options_or = DecodeOptionsFromFlags(*cli, diffusion, ArArgs{}, DreamArgs{});
  if (!options_or.ok()) return FailWith(kWho, options_or.status());
  const DecodeOptions options = *std::move(options_or);
  auto path_or = model.Path();
  if (!path_or.ok()) return FailWith(kWho, path_or.status());
  const std::string path = *path_or;

  // The types to run: --compute-list, or --compute alone; "auto" is f32; each type once.
  std::vector<std::string> types;
  for (std::string t :
       compute_list.empty() ? std::vector<std::string>{model.compute} : compute_list) {
    if (t == "auto") t = "f32";
    if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  }
  // Every type's flag combination is checked before anything runs.
  const bool have_onednn =
      std::find(blas_list.begin(), blas_list.end(), "onednn") != blas_list.end();
  if (!have_onednn &&
      std::none_of(types.begin(), types.end(), [](const std::string& t) { return t == "f32"; })) {
    return FailWith(kWho, InvalidArgumentError("no row to run: bf16 and int8 compute run on "
                                               "onednn only (add it to --blas-list)"));
  }
  for (const std::string& t : types) {
    ModelArgs typed = model;
    typed.compute = t;
    if (Status s = typed.CheckBackendFlags(); !s.ok()) return FailWith(kWho, s);
    if (auto mode = typed.weight_mode(); !mode.ok()) return FailWith(kWho, mode.status());
  }

  std::vector<Row> rows;
  std::vector<TypedPeak> peaks;  // of the machine (onednn), measured once
  double bandwidth = 0;
  std::string model_desc, decoder_name;
  DiffusionParams params;
  int64_t gen_length = 0;
  for (size_t ci = 0; ci < types.size(); ++ci) {
    // Each compute type packs the weights at load: one engine and model per type.
    ModelArgs typed = model;
    typed.compute = types[ci];
    auto mode = typed.weight_mode();
    if (!mode.ok()) return FailWith(kWho, mode.status());
    auto engine_or = typed.MakeEngine();
    if (!engine_or.ok()) return FailWith(kWho, engine_or.status());
    Engine& engine = **engine_or;
    auto index_or = LoadModelWithProgress(engine, path, *mode);
    if (!index_or.ok()) return FailWith(kWho, index_or.status());
    const size_t index = *index_or;
    const LoadedModel& lm = engine.model(index);
    const Model& m = *lm.model;
    const std::vector<int32_t> prompt = RandomPrompt(lm, prompt_length);
    if (prompt.empty()) {
      return FailWith(
          kWho, InvalidArgumentError("the vocabulary has no token usable in a random prompt"));
    }
    if (m.config().is_block_diffusion()) {
      return FailWith(kWho, UnimplementedError(
                                path + " (" + m.config().architecture +
                                ") is a block-diffusion model: unmask bench measures AR and "
                                "full-canvas diffusion models; measure it with unmask bench arena "
                                "--block-model " +
                                path));
    }
    if (!m.config().is_diffusion()) {
      const int rc = RunArBench(*this, engine, index, path, prompt, options);
      if (rc != 0 || ci + 1 == types.size()) return rc;
      continue;
    }
    // The decoder `serve` would run for these flags (the factory settles them), checked once.
    auto first = engine.MakeDecoder(index, prompt, options);
    if (!first.ok()) return FailWith(kWho, first.status());
    gen_length = static_cast<int64_t>(first->decoder->generated().size());
    params = first->diffusion;
    if (first->kind == DecoderKind::kDream) {  // one block, Dream's steps
      params.gen_length = params.block_length = gen_length;
      params.steps = first->dream.steps;
    }
    decoder_name = DecoderKindName(first->kind);
    model_desc = DescribeModel(m.config());
    if (ci == 0) {
      // The machine's rooflines, measured now: memory, and the GEMM peak of each type the CPU
      // runs natively (each row is judged against the peak of its own type and library).
      bandwidth = MeasureMemoryBandwidthGBs();
      auto measured = MeasureGemmPeaks(m.backend());
      if (!measured.ok()) return FailWith(kWho, measured.status());
      peaks = *measured;
    }

    for (const std::string& blas : blas_list) {
      if (m.compute() != ComputeType::kF32 && blas != "onednn") {
        std::fprintf(stderr, "unmask bench: %s compute runs on onednn only: no %s row for it\n",
                     typed.compute.c_str(), blas.c_str());
        continue;
      }
      ModelArgs args = typed;
      args.blas = blas;
      auto row_backend = args.MakeBackend();
      if (!row_backend.ok()) return FailWith(kWho, row_backend.status());
      Row row;
      row.blas = blas;
      row.requested = typed.compute;
      row.compute = ComputeTypeName(m.compute());
      row.backend = (*row_backend)->Describe();
      // The peak of the row's type: the machine line's for onednn (one measurement per type and
      // run), measured with the row's library otherwise.
      row.gemm_peak = 0;
      for (const TypedPeak& p : peaks) {
        if (blas == "onednn" && p.type == m.compute()) row.gemm_peak = p.gflops;
      }
      if (row.gemm_peak == 0) {
        auto peak = MeasureGemmPeakGflops(**row_backend, m.compute());
        if (!peak.ok()) return FailWith(kWho, peak.status());
        row.gemm_peak = *peak;
      }
      std::vector<double> tps, gflops, per_nfe;
      StepBuffers buffers;
      ProgressLine progress("bench " + row.compute + " " + blas);
      for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up
        auto dec = engine.MakeDecoder(index, prompt, options);
        if (!dec.ok()) return FailWith(kWho, dec.status());
        auto on_step = [&](const Decoder& d, const DecodeStep&) {
          int64_t masked = 0;
          for (int32_t t : d.generated()) masked += t == d.mask_id();
          const int64_t committed = d.Done() ? gen_length : gen_length - masked;
          progress.Update(r * gen_length + committed, (reps + 1) * gen_length,
                          r == 0 ? "warm-up" : "run " + std::to_string(r));
          return true;
        };
        Decoder* const one[1] = {dec->decoder.get()};
        auto stats = engine.Run(index, one, on_step, &buffers);
        if (!stats.ok()) return FailWith(kWho, stats.status());
        if (r == 0) continue;
        tps.push_back(stats->tokens_per_second());
        gflops.push_back(stats->gflops_per_second());
        per_nfe.push_back(stats->forward_ms / static_cast<double>(stats->nfe));
        row.nfe = stats->nfe;
        row.intensity = stats->arithmetic_intensity();
        row.moe = MoeJson(m.config(), *stats);
        row.moe_line = MoeSummary(m.config(), *stats);
      }
      progress.Finish();
      row.tps = Summarize(tps);
      row.gflops = Summarize(gflops);
      row.forward_ms_per_nfe = Summarize(per_nfe);
      rows.push_back(row);
    }
  }

  if (rows.empty()) {
    return FailWith(kWho, InvalidArgumentError("no row to run: bf16 and int8 compute run on "
                                               "onednn only (add it to --blas-list)"));
  }
  const double nominal = NominalPeakGflops();
  if (output == "json") {
    for (const Row& r : rows) {
      nlohmann::json j = {
          {"model", model_desc},
          {"compute", r.compute},
          {"requested_compute", r.requested},
          {"path", path},
          {"blas", r.blas},
          {"backend", r.backend},
          {"threads", GetNumThreads()},
          {"prompt_length", prompt_length},
          {"decoder", decoder_name},
          {"gen_length", gen_length},
          {"block_length", params.block_length},
          {"steps", params.steps},
          {"cache", std::string(CacheModeName(params.cache))},
          {"commit", std::string(CommitRuleName(params.commit))},
          {"threshold", params.threshold},
          {"early_stop", params.early_stop},
          {"nfe", r.nfe},
          {"tokens_per_second", r.tps.mean},
          {"tokens_per_second_sd", r.tps.sd},
          {"forward_ms", r.forward_ms_per_nfe.mean},
          {"forward_gflops", r.gflops.mean},
          {"gemm_peak_gflops", r.gemm_peak},
          {"fraction_of_gemm_peak", r.gflops.mean / r.gemm_peak},
          {"gemm_peaks", PeaksJson(peaks)},
          {"fraction_of_fma_peak", r.gflops.mean / nominal},
          {"measured_bandwidth_gb_per_second", bandwidth},
          {"arithmetic_intensity", r.intensity},
          {"vs_baseline", r.tps.mean / rows[0].tps.mean},
          {"vs_reference", reference_tps > 0 ? nlohmann::json(r.tps.mean / reference_tps)
                                             : nlohmann::json(nullptr)},
          {"reps", reps}};
      if (!r.moe.is_null()) j["moe"] = r.moe;
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    return 0;
  }
  std::printf(
      "model: %s | decoder %s | prompt %lld, gen %lld, block %lld, steps %lld, cache %s, commit "
      "%s%s, threads %d, %d reps\n",
      model_desc.c_str(), decoder_name.c_str(), static_cast<long long>(prompt_length),
      static_cast<long long>(gen_length), static_cast<long long>(params.block_length),
      static_cast<long long>(params.steps), std::string(CacheModeName(params.cache)).c_str(),
      std::string(CommitRuleName(params.commit)).c_str(), params.early_stop ? ", early stop" : "",
      GetNumThreads(), reps);
  const bool with_ref = reference_tps > 0;
  std::printf(
      "\n| compute | blas | NFE | tokens/s | ms/forward | forward GFLOP/s | GEMM peak of its "
      "type (same run) | %% of GEMM peak | %% of %.0f f32 FMA peak | vs %s %s |",
      nominal, Label(rows[0]).c_str(), rows[0].blas.c_str());
  if (with_ref) std::printf(" vs reference %.2f tok/s |", reference_tps);
  std::printf("\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", with_ref ? "---:|" : "");
  for (const Row& r : rows) {
    std::printf("| %s | %s | %lld | %.2f ± %.2f | %.1f | %.1f | %.1f | %.0f%% | %.0f%% | %.2fx |",
                Label(r).c_str(), r.blas.c_str(), static_cast<long long>(r.nfe), r.tps.mean,
                r.tps.sd, r.forward_ms_per_nfe.mean, r.gflops.mean, r.gemm_peak,
                100.0 * r.gflops.mean / r.gemm_peak, 100.0 * r.gflops.mean / nominal,
                r.tps.mean / rows[0].tps.mean);
    if (with_ref) std::printf(" %.2fx |", r.tps.mean / reference_tps);
    std::printf("\n");
  }
  std::string intensities;
  for (const Row& r : rows) {
    if (r.blas != rows[0].blas) continue;  // the library does not change the bytes moved
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s%s %.1f", intensities.empty() ? "" : ", ", Label(r).c_str(),
                  r.intensity);
    intensities += buf;
  }
  std::printf(
      "\narithmetic intensity: %s FLOP/byte (FLOPs / bytes of weights in their packed type, KV "
      "cache and activations moved per forward)\n",
      intensities.c_str());
  std::printf(
      "machine (this run): GEMM peaks (prepacked, onednn) %s, memory read %.1f GB/s -> ridge "
      "%s FLOP/byte\n",
      FormatPeaks(peaks).c_str(), bandwidth, FormatRidges(peaks, bandwidth).c_str());
  for (const Row& r : rows) {
    if (!r.moe_line.empty()) std::printf("%s: %s\n", Label(r).c_str(), r.moe_line.c_str());
  }
  std::printf("\nbackends: ");
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf("%s%s", i ? "; " : "", rows[i].backend.c_str());
  }
  std::printf("\n");
  return 0;
}

}  // namespace unmask::tools
