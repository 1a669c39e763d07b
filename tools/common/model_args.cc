#include "common/model_args.h"

#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "common/cli_util.h"
#include "common/terminal.h"

namespace unmask::tools {

std::string DefaultModelPath() {
  // Next to the source tree the binary was built from; $UNMASK_DEFAULT_MODEL overrides.
  if (const char* env = std::getenv("UNMASK_DEFAULT_MODEL"); env && *env) return env;
  return std::string(UNMASK_SOURCE_DIR) + "/models/unmask-tinystories-llada.gguf";
}

void ModelArgs::AddTo(CLI::App& app) {
  model_option = app.add_option("-m,--model", model,
                                "GGUF model file (default: the repository's default model)")
                     ->type_name("PATH");
  app.add_option("-t,--threads", threads, "CPU threads (0 = all hardware threads)")
      ->check(IntegerIn(0, kMaxThreads))
      ->capture_default_str();
  app.add_option("--blas", blas,
                 "GEMM library: onednn (prepacked weights, fastest) or openblas (core type "
                 "fixed automatically when Debian's build misdetects the CPU)")
      ->check(CLI::IsMember({"onednn", "openblas"}))
      ->capture_default_str();
  app.add_option("--weights", weights,
                 "weight storage: f32 (dequantize and prepack once: fastest for many positions "
                 "per forward, 4 bytes/param), native (keep the file's dtype, dequantize on the "
                 "fly: fastest for one position per forward), auto (AR models: native; "
                 "diffusion models: f32 when it fits in half of RAM)")
      ->check(CLI::IsMember({"auto", "f32", "native"}))
      ->capture_default_str();
}

StatusOr<std::string> ModelArgs::Path() const {
  if (model_option != nullptr && model_option->count() > 0 && model.empty()) {
    return InvalidArgumentError("-m/--model: empty path");
  }
  return model.empty() ? DefaultModelPath() : model;
}

Status ModelArgs::InitBackend() const {
  cpu::CpuBackendOptions o;
  o.num_threads = threads;
  if (blas == "onednn") {
    o.gemm = cpu::GemmProvider::kOneDnn;
  } else if (blas == "openblas") {
    o.gemm = cpu::GemmProvider::kOpenBlas;
  } else {
    return InvalidArgumentError("--blas must be onednn or openblas, got '" + blas + "'");
  }
  return cpu::InitCpuBackend(o);
}

StatusOr<WeightMode> ModelArgs::weight_mode() const {
  if (weights == "auto") return WeightMode::kAuto;
  if (weights == "f32") return WeightMode::kPackedF32;
  if (weights == "native") return WeightMode::kOnTheFly;
  return InvalidArgumentError("--weights must be auto, f32 or native, got '" + weights + "'");
}

void DiffusionArgs::AddTo(CLI::App& app) {
  app.add_option("-n,--gen-length", params.gen_length, "tokens to generate after the prompt")
      ->check(IntegerIn(1, kMaxLength))
      ->capture_default_str();
  app.add_option("--steps", params.steps,
                 "denoising steps (forward passes) in total; must be divisible by "
                 "gen_length / block_length, at most gen_length. steps == gen_length commits one "
                 "token per step")
      ->check(IntegerIn(1, kMaxLength))
      ->capture_default_str();
  app.add_option("--block-length", params.block_length,
                 "semi-autoregressive block size; must divide gen_length (== gen_length: one "
                 "block, pure diffusion)")
      ->check(IntegerIn(1, kMaxLength))
      ->capture_default_str();
  app.add_option("--remasking", remasking,
                 "which masked positions are committed each step: low_confidence (highest "
                 "probability first) or random")
      ->check(CLI::IsMember({"low_confidence", "random"}))
      ->capture_default_str();
  app.add_option("--temperature", params.temperature,
                 "0 = argmax (deterministic); > 0 = Gumbel-max sampling in float64")
      ->check(FiniteAtLeast(0))
      ->capture_default_str();
  app.add_option("--cfg-scale", params.cfg_scale,
                 "classifier-free guidance scale (0 = off; > 0 doubles the work per step)")
      ->check(FiniteAtLeast(0))
      ->capture_default_str();
  app.add_flag("--logits-eos-inf", params.logits_eos_inf,
               "never produce EOS (its logit is set to -inf)");
  app.add_flag("--confidence-eos-eot-inf", params.confidence_eos_eot_inf,
               "commit EOS/EOT predictions last (their confidence is 0; LLaDA reference quirk "
               "reproduced: at temperature > 0 only EOT is affected)");
  app.add_option("-s,--seed", params.seed, "random seed (temperature > 0, random remasking)")
      ->check(Unsigned64())
      ->capture_default_str();
}

StatusOr<DiffusionParams> DiffusionArgs::Resolve() const {
  DiffusionParams p = params;
  const auto r = RemaskingFromName(remasking);
  if (!r) return InvalidArgumentError("unknown --remasking '" + remasking + "'");
  p.remasking = *r;
  return p;
}

StatusOr<LoadedModel> LoadModelWithProgress(const std::string& path, WeightMode mode) {
  if (!std::filesystem::exists(path)) return NotFoundError("model file not found: " + path);
  ProgressLine progress("loading " + std::filesystem::path(path).filename().string());
  LoadOptions options;
  options.weight_mode = mode;
  options.progress = [&](int done, int total) { progress.Update(done, total, "tensors"); };
  auto loaded = LoadModel(path, options);
  progress.Finish();
  return loaded;
}

}  // namespace unmask::tools
