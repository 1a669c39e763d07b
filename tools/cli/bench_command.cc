#include "cli/bench_command.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "common/cli_util.h"
#include "common/decode_args.h"
#include "common/roofline.h"
#include "common/summary.h"
#include "common/terminal.h"
#include "core/parallel.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask bench";

struct Row {
  std::string blas;
  std::string backend;
  MeanSd tps, gflops, forward_ms_per_nfe;
  double gemm_peak = 0;
  int64_t nfe = 0;
  double intensity = 0;  // FLOPs per byte moved (weights, KV cache, activations)
};

}  // namespace

void BenchCommand::AddTo(CLI::App& app) {
  cli = &app;
  model.AddTo(app);
  app.remove_option(app.get_option("--blas"));  // bench compares the libraries of --blas-list
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
  app.add_option("-o,--output", output, "md (table) or json (one object per line)")
      ->check(CLI::IsMember({"md", "json"}))
      ->capture_default_str();
  app.add_option("--reference-tps", reference_tps,
                 "tokens/s of an outside reference measured for the SAME model and setting, to "
                 "print a 'vs reference' column (0: none). scripts/bench-llada.sh passes 3.75, "
                 "llama.cpp's llama-diffusion-cli on its setting (../shared/docs/LLAMACPP.md)")
      ->check(FiniteAtLeast(0))
      ->capture_default_str();
}

int BenchCommand::Run() const {
  auto options_or = DecodeOptionsFromFlags(*cli, diffusion, ArArgs{}, DreamArgs{});
  if (!options_or.ok()) return FailWith(kWho, options_or.status());
  const DecodeOptions options = *std::move(options_or);
  auto mode = model.weight_mode();
  if (!mode.ok()) return FailWith(kWho, mode.status());
  EngineOptions engine_options;
  engine_options.backend = model.backend_options();
  auto engine_or = Engine::Create(engine_options);
  if (!engine_or.ok()) return FailWith(kWho, engine_or.status());
  Engine& engine = **engine_or;
  auto path_or = model.Path();
  if (!path_or.ok()) return FailWith(kWho, path_or.status());
  const std::string path = *path_or;
  auto index_or = LoadModelWithProgress(engine, path, *mode);
  if (!index_or.ok()) return FailWith(kWho, index_or.status());
  const size_t index = *index_or;
  const LoadedModel& lm = engine.model(index);
  const Model& m = *lm.model;
  const SpecialTokens& sp = lm.tokenizer->special();
  // A fixed random prompt of ordinary tokens (no control or mask ids; any non-mask id when the
  // vocabulary has (almost) no ordinary tokens).
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(m.config().vocab_size - 1));
  std::vector<int32_t> prompt;
  const int64_t max_draws = 64 * prompt_length + 4096;
  for (int64_t draw = 0; static_cast<int64_t>(prompt.size()) < prompt_length; ++draw) {
    const int32_t id = pick(rng);
    const bool ordinary = !lm.tokenizer->IsControl(id) || draw >= max_draws;
    if (ordinary && id != sp.mask) prompt.push_back(id);
    if (draw >= 2 * max_draws && prompt.empty()) {
      return FailWith(
          kWho, InvalidArgumentError("the vocabulary has no token usable in a random prompt"));
    }
  }

  if (!m.config().is_diffusion()) return RunArBench(*this, engine, index, path, prompt, options);
  // The decoder `serve` would run for these flags (the factory settles them), checked once.
  auto first = engine.MakeDecoder(index, prompt, options);
  if (!first.ok()) return FailWith(kWho, first.status());
  const int64_t gen_length = static_cast<int64_t>(first->decoder->generated().size());
  DiffusionParams params = first->diffusion;
  if (first->kind == DecoderKind::kDream) {  // one block, Dream's steps
    params.gen_length = params.block_length = gen_length;
    params.steps = first->dream.steps;
  }
  const std::string decoder_name(DecoderKindName(first->kind));
  // The machine's memory roofline, measured now (the GEMM peak is measured per row below, with
  // that row's library).
  const double bandwidth = MeasureMemoryBandwidthGBs();

  std::vector<Row> rows;
  for (const std::string& blas : blas_list) {
    ModelArgs args = model;
    args.blas = blas;
    auto row_backend = args.MakeBackend();
    if (!row_backend.ok()) return FailWith(kWho, row_backend.status());
    Row row;
    row.blas = blas;
    row.backend = (*row_backend)->Describe();
    auto peak = MeasureGemmPeakGflops(**row_backend);
    if (!peak.ok()) return FailWith(kWho, peak.status());
    row.gemm_peak = *peak;
    std::vector<double> tps, gflops, per_nfe;
    StepBuffers buffers;
    ProgressLine progress("bench " + blas);
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
    }
    progress.Finish();
    row.tps = Summarize(tps);
    row.gflops = Summarize(gflops);
    row.forward_ms_per_nfe = Summarize(per_nfe);
    rows.push_back(row);
  }

  const double nominal = NominalPeakGflops();
  const ModelConfig& c = m.config();
  char model_desc[200];
  std::snprintf(model_desc, sizeof(model_desc), "%s %.1fM (%lldx%lld, vocab %lld)",
                c.architecture.c_str(), static_cast<double>(c.NumParameters()) / 1e6,
                static_cast<long long>(c.num_layers), static_cast<long long>(c.hidden_size),
                static_cast<long long>(c.vocab_size));
  if (output == "json") {
    for (const Row& r : rows) {
      nlohmann::json j = {
          {"model", model_desc},
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
          {"fraction_of_fma_peak", r.gflops.mean / nominal},
          {"measured_bandwidth_gb_per_second", bandwidth},
          {"arithmetic_intensity", r.intensity},
          {"vs_baseline", r.tps.mean / rows[0].tps.mean},
          {"vs_reference", reference_tps > 0 ? nlohmann::json(r.tps.mean / reference_tps)
                                             : nlohmann::json(nullptr)},
          {"reps", reps}};
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    }
    return 0;
  }
  std::printf(
      "model: %s | decoder %s | prompt %lld, gen %lld, block %lld, steps %lld, cache %s, commit "
      "%s%s, threads %d, %d reps\n",
      model_desc, decoder_name.c_str(), static_cast<long long>(prompt_length),
      static_cast<long long>(gen_length), static_cast<long long>(params.block_length),
      static_cast<long long>(params.steps), std::string(CacheModeName(params.cache)).c_str(),
      std::string(CommitRuleName(params.commit)).c_str(), params.early_stop ? ", early stop" : "",
      GetNumThreads(), reps);
  const bool with_ref = reference_tps > 0;
  std::printf(
      "\n| blas | NFE | tokens/s | ms/forward | forward GFLOP/s | GEMM peak (same run) | "
      "%% of GEMM peak | %% of %.0f FMA peak | vs %s |",
      nominal, rows[0].blas.c_str());
  if (with_ref) std::printf(" vs reference %.2f tok/s |", reference_tps);
  std::printf("\n|---|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", with_ref ? "---:|" : "");
  for (const Row& r : rows) {
    std::printf("| %s | %lld | %.2f ± %.2f | %.1f | %.1f | %.1f | %.0f%% | %.0f%% | %.2fx |",
                r.blas.c_str(), static_cast<long long>(r.nfe), r.tps.mean, r.tps.sd,
                r.forward_ms_per_nfe.mean, r.gflops.mean, r.gemm_peak,
                100.0 * r.gflops.mean / r.gemm_peak, 100.0 * r.gflops.mean / nominal,
                r.tps.mean / rows[0].tps.mean);
    if (with_ref) std::printf(" %.2fx |", r.tps.mean / reference_tps);
    std::printf("\n");
  }
  std::printf(
      "\narithmetic intensity: %.1f FLOP/byte (FLOPs / bytes of weights, KV cache and "
      "activations moved per forward)\n",
      rows.empty() ? 0.0 : rows[0].intensity);
  std::printf(
      "machine (this run): GEMM peak %.1f GFLOP/s (f32, prepacked, %s), memory read %.1f GB/s "
      "-> ridge %.1f FLOP/byte\n",
      rows[0].gemm_peak, rows[0].blas.c_str(), bandwidth, rows[0].gemm_peak / bandwidth);
  std::printf("\nbackends: ");
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf("%s%s", i ? "; " : "", rows[i].backend.c_str());
  }
  std::printf("\n");
  return 0;
}

}  // namespace unmask::tools
