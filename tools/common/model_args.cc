#include "common/model_args.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>

#include "common/cli_util.h"
#include "common/terminal.h"
#include "grammar/matcher.h"
#include "tokenizer/chat_template.h"

namespace unmask::tools {

std::string ModelsDir() {
  // An installed binary (<prefix>/bin/unmask) finds <prefix>/share/unmask/models; a binary in its
  // build tree, the models/ of the source tree it was built from.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = exe.parent_path().parent_path() / "share/unmask/models";
    if (std::filesystem::is_directory(installed, ec)) return installed.string();
  }
  return std::string(UNMASK_SOURCE_DIR) + "/models";
}

std::string DefaultModelPath() {
  if (const char* env = std::getenv("UNMASK_DEFAULT_MODEL"); env && *env) return env;
  return ModelsDir() + "/unmask-tinystories-llada.gguf";
}

void ModelArgs::AddTo(CLI::App& app) {
  model_option = app.add_option("-m,--model", model,
                                "GGUF file, Hugging Face checkpoint folder, or a model 'unmask "
                                "pull' fetched (a catalogue name such as llada:8b-instruct, or "
                                "org/name); default: the repository's default model")
                     ->type_name("PATH");
  AddBackendFlags(app, this);
}

CLI::Option* AddThreadsFlag(CLI::App& app, int* threads) {
  return app.add_option("-t,--threads", *threads, "CPU threads (0 = all hardware threads)")
      ->check(IntegerIn(0, kMaxThreads))
      ->capture_default_str();
}

void AddBackendFlags(CLI::App& app, ModelArgs* args) {
  AddThreadsFlag(app, &args->threads);
  app.add_option("--blas", args->blas,
                 "GEMM library: onednn (prepacked weights, fastest; the only one with bf16 and "
                 "int8 compute) or openblas (core type fixed automatically when Debian's build "
                 "misdetects the CPU)")
      ->check(CLI::IsMember({"onednn", "openblas"}))
      ->capture_default_str();
  app.add_option("--weights", args->weights,
                 "weight storage: packed (dequantize once and prepack in the --compute type: "
                 "fastest for many positions per forward; f32 4 bytes/param, bf16 2, int8 1), "
                 "native (keep the file's dtype: fastest for one position per forward; f32 "
                 "compute only), auto (AR models: native, or packed with bf16/int8 compute; "
                 "diffusion models: packed when it fits in half of RAM). f32 = packed (old name)")
      ->check(CLI::IsMember({"auto", "packed", "f32", "native"}))
      ->capture_default_str();
  AddComputeFlag(app, &args->compute);
}

CLI::Option* AddComputeFlag(CLI::App& app, std::string* compute) {
  return app
      .add_option("--compute", *compute,
                  "number type of the weight products: f32 (exact: what every golden test "
                  "pins), bf16 (bf16 x bf16, f32 accumulation: the models' published numerics; "
                  "AMX or AVX512-BF16), int8 (s8 x s8 -> s32, per-channel weight and per-row "
                  "activation scales; AMX or VNNI), auto (= f32). Attention, norms and the KV "
                  "cache stay f32. Without the CPU instructions bf16/int8 fall back to f32 with "
                  "a message. Measured agreement with f32: docs/decoding.md")
      ->check(CLI::IsMember({"auto", "f32", "bf16", "int8"}))
      ->capture_default_str();
}

CLI::Option* AddGenLengthFlag(CLI::App& app, int64_t* gen_length, bool until_done) {
  if (!until_done) {
    return app
        .add_option("-n,--gen-length", *gen_length,
                    "tokens to generate after the prompt (a request's max_tokens)")
        ->check(IntegerIn(1, kMaxLength))
        ->capture_default_str();
  }
  return app
      .add_option("-n,--gen-length", *gen_length,
                  "tokens to generate after the prompt (a request's max_tokens; -1: until EOS or "
                  "the context, for AR and block-diffusion models). Full-canvas diffusion "
                  "(LLaDA, Dream) rounds the canvas up to whole blocks and cuts the text to -n "
                  "tokens, as the server does")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            const std::string e = IntegerIn(1, kMaxLength)(v);
            return v == "-1" || e.empty() ? std::string()
                                          : e + " (or -1: until EOS or the context)";
          },
          "INT", "-1 or a length"))
      ->capture_default_str();
}

CLI::Option* AddBlockLengthFlag(CLI::App& app, int64_t* block_length) {
  return app
      .add_option("--block-length", *block_length,
                  "diffusion: semi-autoregressive block size (== gen_length: one block, "
                  "pure diffusion). bench: must divide gen_length, as in LLaDA's generate; "
                  "generate, serve and the arena round the canvas up to whole blocks and cut "
                  "the text back (a shorter -n / max_tokens shrinks the default block)")
      ->check(IntegerIn(1, kMaxLength))
      ->capture_default_str();
}

CLI::Option* AddChatTemplateFileFlag(CLI::App& app, std::string* path) {
  return app
      .add_option("--chat-template-file", *path,
                  "a Jinja chat template replacing the model's (tokenizer.chat_template), e.g. "
                  "one that renders tools")
      ->type_name("FILE")
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("empty path") : std::string(); }, "",
          "non-empty"));
}

namespace {

// Whole UTF-8 text without NUL bytes.
bool IsUtf8Text(std::string_view s) {
  grammar::Utf8Partial u;
  for (char c : s) {
    uint32_t cp = 0;
    bool complete = false;
    if (c == '\0' || !grammar::Utf8Step(&u, static_cast<uint8_t>(c), &cp, &complete)) return false;
  }
  return u.need == 0;
}

}  // namespace

StatusOr<std::string> LoadChatTemplateFile(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(std::string source,
                          ReadRegularFile(path, size_t{1} << 20, "--chat-template-file"));
  if (source.rfind("\xEF\xBB\xBF", 0) == 0) source.erase(0, 3);  // a UTF-8 byte order mark
  if (source.empty()) return InvalidArgumentError("--chat-template-file " + path + ": empty");
  if (!IsUtf8Text(source)) {
    return InvalidArgumentError("--chat-template-file " + path +
                                ": not UTF-8 text (a chat template is a Jinja text file)");
  }
  auto parsed = ChatTemplate::Parse(source);
  if (!parsed.ok()) {
    return InvalidArgumentError("--chat-template-file " + path + ": " + parsed.status().message());
  }
  return source;
}

Status ApplyChatTemplateFile(const std::string& path, Tokenizer* tokenizer) {
  if (path.empty()) return Status::Ok();
  UNMASK_ASSIGN_OR_RETURN(std::string source, LoadChatTemplateFile(path));
  auto parsed = ChatTemplate::Parse(source);
  if (!parsed.ok()) return parsed.status();
  // A trial render of one user message: an unsupported filter or a type error shows here, at
  // start-up, not as a failure of every request.
  const ChatMessage trial{"user", "Hello"};
  ChatTemplateInputs inputs;
  inputs.messages = std::span<const ChatMessage>(&trial, 1);
  inputs.add_generation_prompt = true;
  if (tokenizer->special().bos >= 0) {
    inputs.bos_token = std::string(tokenizer->TokenText(tokenizer->special().bos));
  }
  if (tokenizer->special().eos >= 0) {
    inputs.eos_token = std::string(tokenizer->TokenText(tokenizer->special().eos));
  }
  auto rendered = parsed->Render(inputs);
  if (!rendered.ok()) {
    return InvalidArgumentError(
        "--chat-template-file " + path +
        ": rendering one user message fails: " + rendered.status().message());
  }
  tokenizer->set_chat_template(std::move(source));
  return Status::Ok();
}

StatusOr<std::string> ModelArgs::Path() const {
  if (model_option != nullptr && model_option->count() > 0 && model.empty()) {
    return InvalidArgumentError("-m/--model: empty path");
  }
  return model.empty() ? DefaultModelPath() : model;
}

BackendOptions ModelArgs::backend_options() const {
  BackendOptions o;
  o.num_threads = threads;
  o.gemm = blas;
  o.compute = compute;
  return o;
}

Status ModelArgs::CheckBackendFlags() const {
  if (blas != "onednn" && blas != "openblas") {
    return InvalidArgumentError("--blas must be onednn or openblas, got '" + blas + "'");
  }
  if (compute != "auto" && compute != "f32" && blas != "onednn") {
    return InvalidArgumentError("--compute " + compute + " needs --blas onednn (" + blas +
                                " multiplies in f32 only)");
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<Backend>> ModelArgs::MakeBackend() const {
  UNMASK_RETURN_IF_ERROR(CheckBackendFlags());
  UNMASK_ASSIGN_OR_RETURN(std::shared_ptr<Backend> backend, CreateBackend(backend_options()));
  PrintComputeNote(*backend);
  return backend;
}

StatusOr<std::unique_ptr<Engine>> ModelArgs::MakeEngine(EngineOptions options) const {
  UNMASK_RETURN_IF_ERROR(CheckBackendFlags());
  options.backend = backend_options();
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(std::move(options)));
  PrintComputeNote(*engine->backend());
  return engine;
}

void PrintComputeNote(const Backend& backend) {
  static std::mutex mu;
  static std::set<std::string> printed;
  const std::string note = backend.compute_note();
  if (note.empty()) return;
  std::lock_guard<std::mutex> lock(mu);
  if (printed.insert(note).second) PrintWarning(note);
}

StatusOr<WeightMode> ModelArgs::weight_mode() const {
  if (weights == "auto") return WeightMode::kAuto;
  if (weights == "packed" || weights == "f32") return WeightMode::kPacked;
  if (weights == "native") {
    if (compute != "auto" && compute != "f32") {
      return InvalidArgumentError(
          "--weights native keeps the file's types and multiplies in f32 "
          "(or with int8 activations on 4-bit weights); --compute " +
          compute + " needs packed weights: drop one of the two flags");
    }
    return WeightMode::kOnTheFly;
  }
  return InvalidArgumentError("--weights must be auto, packed or native, got '" + weights + "'");
}

void DiffusionArgs::AddTo(CLI::App& app, bool request_flags) {
  if (request_flags) {
    AddGenLengthFlag(app, &params.gen_length, allow_until_done);
    steps_option =
        app.add_option("--steps", params.steps,
                       "denoising steps (forward passes) in total (default: gen_length up to 128, "
                       "else 128 rounded down to a multiple of the block count); must be "
                       "divisible by gen_length / block_length. steps == gen_length commits one "
                       "token per step; more steps than masked tokens run forwards that commit "
                       "nothing (as the LLaDA reference does)")
            ->check(IntegerIn(1, kMaxLength))
            ->capture_default_str();
  }
  AddBlockLengthFlag(app, &params.block_length);
  app.add_option("--remasking", remasking,
                 "which masked positions are committed each step. LLaDA/Dream block decoder: "
                 "low_confidence (highest probability first; default) or random. Block-diffusion "
                 "models (SDAR), by SDAR's names: sequential, low_confidence_static, "
                 "low_confidence_dynamic (default; all above --threshold, at least the step's "
                 "quota), entropy_bounded (lowest-entropy positions while their sum stays below "
                 "--eb-threshold), joint_threshold (LLaDA 2.1: masks above --threshold, default "
                 "0.5, plus token editing, see --edit-threshold and --max-post-edit-steps; "
                 "temperature 0 only). LLaDA 2.x models default to low_confidence_dynamic with "
                 "threshold 0.95 and the quota capped at the masks left (LLaDA 2.0's generate)")
      ->check(CLI::IsMember({"low_confidence", "random", "sequential", "low_confidence_static",
                             "low_confidence_dynamic", "entropy_bounded", "joint_threshold"}));
  if (request_flags) {
    app.add_option("--denoising-steps", block.denoising_steps,
                   "block-diffusion models (SDAR): denoising steps per block, each committing "
                   "block_length / steps tokens (the remainder to the first steps) "
                   "[default: block_length, one token per step; --steps means the same here]")
        ->check(IntegerIn(1, kMaxLength));
  }
  app.add_option("--small-block-size", fast_dllm_v2.small_block_size,
                 "Fast-dLLM v2 models: sub-block length; each block is decoded sub-block by "
                 "sub-block, every step committing the sub-block's masked tokens above "
                 "--threshold (at least one). Must divide --block-length")
      ->check(IntegerIn(1, kMaxLength))
      ->capture_default_str();
  if (request_flags) {
    app.add_flag("--separate-store", block.separate_store,
                 "block-diffusion models (SDAR): SDAR's own schedule, one prefill forward and one "
                 "clean store forward per finished block (the reference's NFE). Default: the "
                 "fused schedule, where a block's first denoising forward also writes the K/V of "
                 "the prompt or the block before it: the same tokens, fewer forwards");
  }
  app.add_option("--edit-threshold", block.edit_threshold,
                 "block-diffusion models, --remasking joint_threshold (LLaDA 2.1 token editing): "
                 "a decoded token of the block is rewritten when the model's argmax differs from "
                 "it with probability above this (0: every disagreement)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--max-post-edit-steps", block.max_post_edit_steps,
                 "block-diffusion models, --remasking joint_threshold: editing steps a block may "
                 "take after its last mask is filled (it ends earlier at a step that changes "
                 "nothing)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--eb-threshold", block.eb_threshold,
                 "block-diffusion models, --remasking entropy_bounded: commit the lowest-entropy "
                 "masked positions while their summed entropy (nats) stays below this")
      ->check(FiniteAtLeast(1e-9))
      ->capture_default_str();
  if (request_flags) {
    app.add_option("--temperature,--temp", params.temperature,
                   "0 = greedy (argmax, deterministic); > 0 samples (diffusion: Gumbel-max in "
                   "float64; AR: the sampling chain); without --seed a seed is drawn and printed")
        ->check(FiniteAtLeast(0))
        ->capture_default_str();
  }
  app.add_option("--cfg-scale", params.cfg_scale,
                 "classifier-free guidance scale (0 = off; > 0 doubles the work per step)")
      ->check(FiniteAtLeast(0))
      ->capture_default_str();
  app.add_flag("--logits-eos-inf", params.logits_eos_inf,
               "never produce EOS (its logit is set to -inf)");
  app.add_flag("--confidence-eos-eot-inf", params.confidence_eos_eot_inf,
               "commit EOS/EOT predictions last (their confidence is 0; LLaDA reference quirk "
               "reproduced: at temperature > 0 only EOT is affected)");
  if (request_flags) {
    app.add_option("-s,--seed", params.seed, "random seed (temperature > 0, random remasking)")
        ->check(Unsigned64())
        ->capture_default_str();
  }

  const char* group = "Fast diffusion decoding (defaults: the exact reference)";
  app.add_option("--cache", cache,
                 "K/V cache across steps: none (every step a full forward; exact), prefix "
                 "(Fast-dLLM: steps feed the block and all after it), dual (Fast-dLLM: steps feed "
                 "only the block), vicinity (dInfer: the block plus --prefix-look/--after-look "
                 "positions around it). Cached modes refresh every K/V once per block")
      ->check(CLI::IsMember({"none", "prefix", "dual", "vicinity"}))
      ->capture_default_str()
      ->group(group);

  app.add_option("--prefix-look", params.prefix_look,
                 "vicinity cache: positions before the block recomputed each step")
      ->check(IntegerIn(0, kMaxLength))
      ->capture_default_str()
      ->group(group);

  app.add_option("--after-look", params.after_look,
                 "vicinity cache: positions after the block recomputed each step")
      ->check(IntegerIn(0, kMaxLength))
      ->capture_default_str()
      ->group(group);
  app.add_option("--commit", commit,
                 "which masked tokens a step commits: fixed (LLaDA schedule, --steps), threshold "
                 "(top-1 + all with confidence >= --threshold; Fast-dLLM), factor (Fast-dLLM "
                 "factor rule, --factor), hierarchy (dInfer: best of each masked run above "
                 "--low-threshold + all above --threshold), credit (dInfer credit decoding: "
                 "threshold on credit-fused logits). Rules other than fixed run each block until "
                 "it is full and ignore --steps [default: fixed, or implied by --threshold, "
                 "--factor, --low-threshold]")
      ->check(CLI::IsMember({"fixed", "threshold", "factor", "hierarchy", "credit"}))
      ->group(group);
  app.add_option("--threshold", params.threshold,
                 "confidence threshold tau in (0, 1] (threshold, hierarchy, "
                 "credit); Fast-dLLM's default 0.9. Block-diffusion models: "
                 "low_confidence_dynamic's confidence_threshold (SDAR's default 0.85)")
      ->check(CLI::Range(1e-9, 1.0))
      ->capture_default_str()
      ->group(group);
  app.add_option("--factor", params.factor,
                 "factor rule: commit the largest n with (n + 1)(1 - c_n) <= "
                 "factor over the sorted confidences c")
      ->check(FiniteAtLeast(1e-9))
      ->capture_default_str()
      ->group(group);
  app.add_option("--low-threshold", params.low_threshold,
                 "hierarchy rule: a masked run's best token needs confidence above this")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str()
      ->group(group);

  app.add_option("--credit-alpha", params.credit_alpha,
                 "credit rule: fused logits = logits + alpha * log(1 + credit)")
      ->check(FiniteAtLeast(0))
      ->capture_default_str()
      ->group(group);

  app.add_option("--credit-beta", params.credit_beta, "credit rule: credit decay per step")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str()
      ->group(group);
  app.add_option("--credit-gamma", params.credit_gamma,
                 "credit rule: credit gained = p_top1 ^ gamma")
      ->check(FiniteAtLeast(0))
      ->capture_default_str()
      ->group(group);
  app.add_flag("--early-stop", params.early_stop,
               "stop after the first finished block that contains EOS; the rest of the canvas "
               "becomes EOS (dInfer)")
      ->group(group);
}

StatusOr<DiffusionParams> DiffusionArgs::Resolve() const {
  DiffusionParams p = params;
  if (!remasking.empty() && !RemaskingFromName(remasking) && !BlockRemaskingFromName(remasking)) {
    return InvalidArgumentError("unknown --remasking '" + remasking + "'");
  }
  if (const auto r = RemaskingFromName(remasking)) p.remasking = *r;
  const auto c = CacheModeFromName(cache);
  if (!c) return InvalidArgumentError("unknown --cache '" + cache + "'");
  p.cache = *c;
  if (steps_option == nullptr || steps_option->count() == 0) p.steps = 0;  // the default rule
  if (!commit.empty()) {
    const auto cr = CommitRuleFromName(commit);
    if (!cr) return InvalidArgumentError("unknown --commit '" + commit + "'");
    p.commit = *cr;
  }
  return p;
}

namespace {

// Runs `load(progress)` with a progress line named after the file; NotFound for a missing file.
template <typename Load>
auto WithLoadProgress(const std::string& path, Load load) -> decltype(load(nullptr)) {
  if (!std::filesystem::exists(path)) return NotFoundError("model file not found: " + path);
  ProgressLine progress("loading " + std::filesystem::path(path).filename().string());
  auto loaded = load([&](int done, int total) { progress.Update(done, total, "tensors"); });
  progress.Finish();
  return loaded;
}

}  // namespace

StatusOr<LoadedModel> LoadModelWithProgress(const std::string& path, WeightMode mode,
                                            std::shared_ptr<Backend> backend) {
  return WithLoadProgress(path, [&](std::function<void(int, int)> progress) {
    LoadOptions options;
    options.weight_mode = mode;
    options.backend = std::move(backend);
    options.progress = std::move(progress);
    if (options.backend) PrintComputeNote(*options.backend);
    return LoadModel(path, options);
  });
}

StatusOr<size_t> LoadModelWithProgress(Engine& engine, const std::string& path, WeightMode mode) {
  PrintComputeNote(*engine.backend());
  return WithLoadProgress(path, [&](std::function<void(int, int)> progress) {
    return engine.LoadModel(path, path, mode, std::move(progress));
  });
}

}  // namespace unmask::tools
