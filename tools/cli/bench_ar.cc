// `unmask bench` with an autoregressive model: batch-1 decoding speed, llama-bench style
// (`-p 0 -n N`: tokens/s of the generation phase, mean ± sd over repetitions), with the bytes of
// weights read per token against the memory bandwidth measured in the same run.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/bench_command.h"
#include "common/cli_util.h"
#include "common/moe_report.h"
#include "common/roofline.h"
#include "common/summary.h"
#include "common/terminal.h"
#include "core/parallel.h"
#include "decode/decoder_ar.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask bench";

// Bytes of matrix weights one batch-1 forward reads: every 2-D weight once (the token embedding
// only when it doubles as the output projection), in the stored dtype when weights are kept
// native, in the compute type when packed (f32 4 bytes, bf16 2, int8 1). Norm vectors and the
// one embedding row are negligible.
double WeightBytesPerToken(const gguf::GgufFile& f, const ModelConfig& c, WeightMode mode,
                           ComputeType compute) {
  double bytes = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    int64_t rank = 0;
    for (int64_t d : t.dims) rank += d > 1 ? 1 : 0;
    if (rank < 2) continue;
    if (t.name == "token_embd.weight" && !c.tied_output) continue;
    double tensor = mode == WeightMode::kPacked
                        ? ComputeTypeBytes(compute) * static_cast<double>(t.num_elements())
                        : static_cast<double>(t.num_bytes);
    // A decoded token reads top_k of a layer's routed experts (stacked *_exps tensors).
    if (c.is_moe() && t.name.find("_exps.weight") != std::string::npos) {
      tensor *= static_cast<double>(c.routing.top_k) / static_cast<double>(c.num_experts);
    }
    bytes += tensor;
  }
  return bytes;
}

}  // namespace

int RunArBench(const BenchCommand& cmd, const Engine& engine, size_t index, const std::string& path,
               const std::vector<int32_t>& prompt, const DecodeOptions& options) {
  const LoadedModel& lm = engine.model(index);
  const Model& m = *lm.model;
  const ModelConfig& c = m.config();
  const int64_t n = cmd.diffusion.params.gen_length;
  if (static_cast<int64_t>(prompt.size()) + n > c.context_length) {
    return FailWith(
        kWho, InvalidArgumentError("prompt " + std::to_string(prompt.size()) + " + " +
                                   std::to_string(n) + " generated tokens exceed the context (" +
                                   std::to_string(c.context_length) + ")"));
  }
  const Backend* backend = &m.backend();
  const double bandwidth = MeasureMemoryBandwidthGBs();
  auto gemm_peak = MeasureGemmPeakGflops(*backend, m.compute());
  if (!gemm_peak.ok()) return FailWith(kWho, gemm_peak.status());
  StepBuffers buffers;
  std::vector<double> decode_tps, prefill_tps, intensity;
  nlohmann::json moe;  // the last run's routing (MoE models)
  std::string moe_line;
  ProgressLine progress("bench");
  for (int r = 0; r <= cmd.reps; ++r) {  // r == 0: warm-up
    DecodeOptions o = options;           // the flags given: a diffusion flag is refused
    o.ar.sampling.temperature = 0;
    o.max_tokens = n;
    o.ar.ignore_eos = true;
    auto dec = engine.MakeDecoder(index, prompt, o);
    if (!dec.ok()) return FailWith(kWho, dec.status());
    auto on_step = [&](const Decoder& d, const DecodeStep&) {
      progress.Update(r * n + static_cast<int64_t>(d.generated().size()), (cmd.reps + 1) * n,
                      r == 0 ? "warm-up" : "run " + std::to_string(r));
      return true;
    };
    Decoder* const one[1] = {dec->decoder.get()};
    auto st = engine.Run(index, one, on_step, &buffers);
    if (!st.ok()) return FailWith(kWho, st.status());
    if (r == 0) continue;
    decode_tps.push_back(st->decode_tokens_per_second());
    prefill_tps.push_back(1000.0 * static_cast<double>(prompt.size()) / st->ttft_ms);
    intensity.push_back(st->arithmetic_intensity());
    moe = MoeJson(c, *st);
    moe_line = MoeSummary(c, *st);
  }
  progress.Finish();
  const MeanSd dec = Summarize(decode_tps), pre = Summarize(prefill_tps);
  const double bytes = WeightBytesPerToken(*lm.file, c, lm.weight_mode, m.compute());
  const double achieved = bytes * dec.mean / 1e9;  // GB/s of weights
  const std::string weights = lm.weight_mode == WeightMode::kPacked
                                  ? std::string(ComputeTypeName(m.compute())) + " packed"
                                  : "native";
  char model_desc[200];
  std::snprintf(model_desc, sizeof(model_desc), "%s %.2fM (%lldx%lld, vocab %lld)",
                c.architecture.c_str(), static_cast<double>(c.NumParameters()) / 1e6,
                static_cast<long long>(c.num_layers), static_cast<long long>(c.hidden_size),
                static_cast<long long>(c.vocab_size));
  if (cmd.output == "json") {
    nlohmann::json j = {
        {"model", model_desc},
        {"path", path},
        {"engine", "ar"},
        {"weights", weights},
        {"backend", backend->Describe()},
        {"threads", GetNumThreads()},
        {"prompt_length", prompt.size()},
        {"n_predict", n},
        {"decode_tokens_per_second", dec.mean},
        {"decode_tokens_per_second_sd", dec.sd},
        {"prefill_tokens_per_second", pre.mean},
        {"ms_per_token", 1000.0 / dec.mean},
        {"weight_bytes_per_token", bytes},
        {"weight_gb_per_second", achieved},
        {"measured_bandwidth_gb_per_second", bandwidth},
        {"fraction_of_bandwidth", achieved / bandwidth},
        {"gemm_peak_gflops", *gemm_peak},
        {"arithmetic_intensity", Summarize(intensity).mean},
        {"vs_reference", cmd.reference_tps > 0 ? nlohmann::json(dec.mean / cmd.reference_tps)
                                               : nlohmann::json(nullptr)},
        {"reps", cmd.reps}};
    if (c.is_moe()) j["moe"] = moe;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf(
      "model: %s | weights %s | prompt %zu, generate %lld (greedy, EOS ignored), "
      "threads %d, %d reps\n",
      model_desc, weights.c_str(), prompt.size(), static_cast<long long>(n), GetNumThreads(),
      cmd.reps);
  const bool with_ref = cmd.reference_tps > 0;
  std::printf(
      "\n| prefill tokens/s | decode tokens/s | ms/token | weight MB/token | weight GB/s | "
      "bandwidth (same run) | %% of bandwidth |%s\n",
      with_ref ? " vs reference |" : "");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|%s\n", with_ref ? "---:|" : "");
  std::printf("| %.1f ± %.1f | %.1f ± %.1f | %.3f | %.2f | %.1f | %.1f GB/s | %.0f%% |", pre.mean,
              pre.sd, dec.mean, dec.sd, 1000.0 / dec.mean, bytes / 1e6, achieved, bandwidth,
              100.0 * achieved / bandwidth);
  if (with_ref)
    std::printf(" %.2fx (%.1f tok/s) |", dec.mean / cmd.reference_tps, cmd.reference_tps);
  std::printf(
      "\n\narithmetic intensity: %.2f FLOP/byte over the run (prefill included; FLOPs / bytes "
      "of weights, KV cache and activations)\nmachine (this run): GEMM peak %.1f GFLOP/s (%s, "
      "prepacked), memory read %.1f GB/s -> ridge %.1f FLOP/byte\nbackend: %s\n",
      Summarize(intensity).mean, *gemm_peak, std::string(ComputeTypeName(m.compute())).c_str(),
      bandwidth, *gemm_peak / bandwidth, backend->Describe().c_str());
  if (!moe_line.empty()) std::printf("%s\n", moe_line.c_str());
  return 0;
}

}  // namespace unmask::tools
