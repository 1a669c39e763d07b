#include "cli/arena/arena_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/arena/arena_data.h"
#include "cli/arena/arena_modes.h"
#include "cli/arena/arena_report.h"
#include "cli/arena/arena_run.h"
#include "common/cli_util.h"
#include "common/draft_heads.h"
#include "common/hardware_table.h"
#include "common/model_args.h"
#include "common/roofline.h"
#include "common/terminal.h"
#include "core/parallel.h"
#include "decode/decoder_factory.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask bench arena";

std::string Twin(const std::string& name) { return ModelsDir() + "/" + name; }

std::string Base(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return InternalError(path + ": cannot write");
  return Status::Ok();
}

// The planner's view of this machine running `lm`: with `measured` null, the peak rates (the
// large-GEMM peak and main-memory bandwidth of this run, no overhead: the model as used for the
// GPUs); else the model's measured rates. Weights in their resident bytes (f32 prepacked or the
// file's dtype); f32 KV cache and activations.
plan::MachineRates RatesOf(const LoadedModel& lm, const ArenaMachine& m,
                           const ArenaModelRates* measured) {
  plan::MachineRates rates;
  rates.flops_per_second = m.gemm_gflops * 1e9;
  rates.bytes_per_second = m.bandwidth_gbs * 1e9;
  if (measured != nullptr) {
    rates.flops_curve = measured->gemm_curve;
    rates.bytes_per_second = measured->bandwidth_gbs * 1e9;
    rates.overhead_ms = measured->overhead_ms();
  }
  rates.weight_bytes_per_parameter =
      static_cast<double>(lm.model->weight_bytes()) /
      static_cast<double>(std::max<int64_t>(lm.model->config().NumParameters(), 1));
  rates.kv_bytes_per_element = rates.activation_bytes_per_element = 4;
  return rates;
}

// This machine's rates for `lm` (see ArenaModelRates).
StatusOr<ArenaModelRates> MeasureModelRates(const LoadedModel& lm, const std::string& name,
                                            const ArenaMachine& m) {
  ArenaModelRates h;
  h.model = name;
  h.weight_bytes = static_cast<double>(lm.model->weight_bytes());
  h.bandwidth_gbs = MeasureMemoryBandwidthGBs(5, static_cast<int64_t>(h.weight_bytes));
  std::vector<int64_t> rows;
  for (int64_t r = 1; r <= 8192; r *= 2) rows.push_back(r);
  UNMASK_ASSIGN_OR_RETURN(h.gemm_curve,
                          MeasureGemmCurve(*lm.file, lm.weight_mode, rows, 5, lm.model->compute()));
  // A one-position forward: measured, and its roofline time with the rates above.
  const ModelConfig& c = lm.model->config();
  // One position and one logit row: the last layer's pruning changes nothing, for any kind.
  const std::vector<int32_t> token = {0};
  const std::vector<int32_t> logit_rows = {0};
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{token, 0, logit_rows});
  Workspace ws;
  Tensor logits(DType::kF32, {1, c.vocab_size});
  std::vector<double> ms;
  for (int i = 0; i < 23; ++i) {  // 3 warm-up runs
    ForwardStats fs;
    UNMASK_RETURN_IF_ERROR(lm.model->Forward(plan, ws, logits.view(), &fs));
    if (i >= 3) ms.push_back(fs.ms);
  }
  std::sort(ms.begin(), ms.end());
  h.forward_ms = ms[ms.size() / 2];
  const plan::MachineRates rates = RatesOf(lm, m, &h);
  const double flops = c.ForwardFlops(1, 1, true);
  const double bytes =
      h.weight_bytes + c.ForwardKvBytes(1, 0, false) + c.ForwardActivationBytes(1, 1);
  h.roofline_ms = 1000.0 * std::max(flops / rates.FlopsAt(1), bytes / rates.bytes_per_second);
  return h;
}

struct Prediction {
  double tokens_per_second = 0;
  double ms_per_forward = 0;  // 0 when a model drafter's forwards are mixed in
};

// The planner's projection for this machine of one measured point (see ArenaMarkdown's note).
// head_bytes: the bytes of the draft heads read per drafter pass (Medusa heads, an EAGLE layer),
// 0 for other modes.
StatusOr<Prediction> PredictTps(const ArenaMode& mode, const ArenaRow& measured,
                                const LoadedModel& target, const LoadedModel* drafter,
                                double head_bytes, const ArenaReport& r,
                                const ArenaModelRates* target_rates) {
  const ModelConfig& c = target.model->config();
  const plan::MachineRates rates = RatesOf(target, r.machine, target_rates);
  const double mean_tokens = static_cast<double>(measured.tokens) /
                             static_cast<double>(std::max<int64_t>(measured.requests, 1));
  if (mode.block) {
    // The tokens returned over all forwards of a request (the fused schedule's: every forward),
    // at the model's trained block; the projection's output is the tokens returned.
    const double k = mean_tokens / std::max(measured.nfe_per_request, 1.0);
    const plan::Workload w{r.prompt_length, std::max<int64_t>(1, std::llround(mean_tokens))};
    const plan::EngineSpec spec = ArenaPlannerSpec(mode, c.block_length, k, 0);
    UNMASK_ASSIGN_OR_RETURN(plan::Projection p, plan::Project(c, spec, w, rates, measured.batch));
    Prediction out{p.tokens_per_second, p.forwards > 0 ? p.e2e_ms / p.forwards : 0};
    return out;
  }
  const int64_t canvas = DiffusionCanvasLength(r.gen_length, r.block_length);
  plan::Workload w{r.prompt_length,
                   mode.diffusion ? canvas : std::max<int64_t>(1, std::llround(mean_tokens))};
  double k = 1, draft_cost = 0;
  if (mode.diffusion) {
    k = static_cast<double>(canvas) / std::max(measured.nfe_per_request, 1.0);
  } else if (mode.drafter != ArenaDrafter::kNone) {
    // Tokens per verify forward after the prefill's first token.
    k = (mean_tokens - 1) / std::max(measured.nfe_per_request - 1, 1.0);
    if (drafter != nullptr) {
      draft_cost = static_cast<double>(drafter->model->weight_bytes()) /
                   static_cast<double>(target.model->weight_bytes());
    }
    if (head_bytes > 0) draft_cost = head_bytes / static_cast<double>(target.model->weight_bytes());
  }
  const plan::EngineSpec spec = ArenaPlannerSpec(mode, r.block_length, k, draft_cost);
  UNMASK_ASSIGN_OR_RETURN(plan::Projection p, plan::Project(c, spec, w, rates, measured.batch));
  // Diffusion computes the whole canvas; the measurement counts the tokens returned.
  Prediction out;
  out.tokens_per_second = mode.diffusion
                              ? p.tokens_per_second * mean_tokens / static_cast<double>(canvas)
                              : p.tokens_per_second;
  if (draft_cost == 0 && p.forwards > 0) out.ms_per_forward = p.e2e_ms / p.forwards;
  return out;
}

}  // namespace

void ArenaCommand::AddTo(CLI::App& app) {
  app.add_option("--diffusion-model", diffusion_model,
                 "diffusion GGUF (default: models/unmask-tinystories-llada.gguf)");
  app.add_option("--ar-model", ar_model,
                 "autoregressive GGUF (default: models/unmask-tinystories-ar.gguf)");
  app.add_option("--draft-model", draft_model,
                 "AR drafter for ar+draft (default: models/unmask-tinystories-ar-draft.gguf; "
                 "'none' skips ar+draft)");
  app.add_option("--judge", judge_model,
                 "AR model scoring every mode's outputs (judge perplexity; default: the AR model)");
  app.add_option("--block-model", block_model,
                 "block-diffusion GGUF (SDAR); its modes (block-*) join the default set "
                 "(default: models/unmask-tinystories-block.gguf when present; 'none': no "
                 "block modes)");
  app.add_option("--judge2", judge2_model,
                 "independent AR judge scoring every mode's output texts retokenized with its own "
                 "tokenizer (default: SmolLM2-135M-Instruct of scripts/fetch-smollm2.sh when "
                 "fetched, else skipped with a note; 'none': off)");
  std::string known;
  for (const ArenaMode& m : ArenaModes()) known += (known.empty() ? "" : ", ") + m.name;
  app.add_option("--modes", modes,
                 "modes to run (default: all but the prefix-cache and "
                 "early-stop variants, block-* only with a block model); known: " +
                     known)
      ->delimiter(',');
  app.add_option("--batch", batches,
                 "batch sizes: concurrent closed-loop clients (AR+draft and AR+diffusion run at "
                 "batch 1 only)")
      ->delimiter(',')
      ->check(IntegerIn(1, 1024))
      ->capture_default_str();
  validate_option =
      app.add_option(
             "--validate-batch", validate_batches,
             "batch sizes at which the planner's prediction is compared with the measurement")
          ->delimiter(',')
          ->check(IntegerIn(1, 1024))
          ->capture_default_str();
  app.add_option("--prompt-length", prompt_length, "prompt tokens (texts cut to this length)")
      ->check(IntegerIn(1, 1 << 16))
      ->capture_default_str();
  AddGenLengthFlag(app, &gen_length);
  AddBlockLengthFlag(app, &block_length);
  app.add_option("--min-requests", min_requests,
                 "requests per point at small batch sizes (a point runs max(batch, this))")
      ->check(IntegerIn(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--prompts", prompts_file,
                 "prompt file: .jsonl (prompt / turns / question / instruction / text field) or "
                 "one prompt per line (default: the twins' held-out TinyStories, never trained on, "
                 "from the shared test data beside the repository; without it, give --prompts)");
  app.add_option("--price-per-hour", price_per_hour,
                 "USD per hour of this machine for tokens per dollar (0: the cpu entry of the "
                 "hardware table)")
      ->check(FiniteIn(0, 1e6))
      ->capture_default_str();
  app.add_option("--hardware-file", hardware_file, "hardware table instead of the built-in one");
  app.add_option("--out", out_dir, "folder for arena.json, arena.md and the SVG plots")
      ->capture_default_str();
  AddThreadsFlag(app, &threads);
  AddComputeFlag(app, &compute);
  app.add_flag("--no-quality", no_quality, "skip both judges' perplexity");
}

std::string DefaultJudge2Path() {
  std::string cache;
  if (const char* env = std::getenv("UNMASK_CACHE"); env && *env) {
    cache = env;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    cache = std::string(home) + "/.cache/unmask";
  } else {
    return "";
  }
  return cache + "/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
}

int ArenaCommand::Run() const {
  const auto t_start = std::chrono::steady_clock::now();
  // The block model: given, or the block twin when it is there.
  std::string block_path = block_model == "none" ? "" : block_model;
  if (block_model.empty() && std::filesystem::exists(Twin("unmask-tinystories-block.gguf"))) {
    block_path = Twin("unmask-tinystories-block.gguf");
  }
  // Modes and settings first: a typo fails before minutes of work.
  std::vector<ArenaMode> run_modes;
  for (const std::string& name :
       modes.empty() ? DefaultArenaModeNames(!block_path.empty()) : modes) {
    auto m = FindArenaMode(name);
    if (!m.ok()) return FailWith(kWho, m.status());
    if (std::count(modes.begin(), modes.end(), name) > 1) {
      return FailWith(kWho, InvalidArgumentError("--modes: '" + name + "' is listed twice"));
    }
    if (m->block && block_path.empty()) {
      return FailWith(kWho, InvalidArgumentError("--modes " + name +
                                                 " needs a block-diffusion model: give "
                                                 "--block-model PATH (an sdar GGUF)"));
    }
    run_modes.push_back(*m);
  }
  for (int64_t b : validate_batches) {
    const bool explicit_flag = validate_option != nullptr && validate_option->count() > 0;
    if (explicit_flag && std::find(batches.begin(), batches.end(), b) == batches.end()) {
      return FailWith(kWho, InvalidArgumentError("--validate-batch " + std::to_string(b) +
                                                 " is not one of the --batch sizes"));
    }
  }
  // --block-length is the full-canvas diffusion modes' (block modes use their model's block).
  const bool any_diffusion = std::any_of(run_modes.begin(), run_modes.end(),
                                         [](const ArenaMode& m) { return m.diffusion; });
  if (any_diffusion && block_length > gen_length) {
    return FailWith(kWho, InvalidArgumentError("--block-length " + std::to_string(block_length) +
                                               " is longer than the output (-n " +
                                               std::to_string(gen_length) + ")"));
  }
  // The output folder is made and tried now: a typo should not cost the whole run.
  {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    const std::string probe = out_dir + "/.arena-write-test";
    if (ec || !WriteText(probe, "").ok()) {
      return FailWith(kWho, InvalidArgumentError("--out " + out_dir + ": cannot write there" +
                                                 (ec ? " (" + ec.message() + ")" : std::string())));
    }
    std::filesystem::remove(probe, ec);
  }
  for (size_t i = 1; i < batches.size(); ++i) {
    if (batches[i] <= batches[i - 1]) {
      return FailWith(kWho, InvalidArgumentError("--batch: sizes must be ascending"));
    }
  }
  if (batches.empty()) return FailWith(kWho, InvalidArgumentError("--batch: no batch size"));
  auto table = LoadHardwareTable(hardware_file);
  if (!table.ok()) return FailWith(kWho, table.status());
  ArenaReport r;
  if (price_per_hour > 0) {
    r.machine.price_per_hour = price_per_hour;
    r.machine.price_source = "--price-per-hour";
  } else {
    auto cpu = plan::FindHardware(*table, "cpu");
    if (!cpu.ok()) return FailWith(kWho, cpu.status());
    r.machine.price_per_hour = cpu->price.typical;
    r.machine.price_source = "typical price of the hardware table's cpu entry: " + cpu->name;
  }

  BackendOptions bo;
  bo.num_threads = threads;
  bo.compute = compute;
  auto backend = CreateBackend(bo);
  if (!backend.ok()) return FailWith(kWho, backend.status());
  PrintComputeNote(**backend);
  // The judge scores in f32 whatever the compared engines compute in.
  BackendOptions judge_bo = bo;
  judge_bo.compute = "f32";
  auto judge_backend = CreateBackend(judge_bo);
  if (!judge_backend.ok()) return FailWith(kWho, judge_backend.status());
  const std::string diffusion_path =
      diffusion_model.empty() ? Twin("unmask-tinystories-llada.gguf") : diffusion_model;
  const std::string ar_path = ar_model.empty() ? Twin("unmask-tinystories-ar.gguf") : ar_model;
  const std::string draft_path =
      draft_model.empty() ? Twin("unmask-tinystories-ar-draft.gguf") : draft_model;
  bool need_diffusion = false, need_ar = false, need_draft = false, need_block = false;
  for (const ArenaMode& m : run_modes) {
    need_diffusion |= m.diffusion || m.drafter == ArenaDrafter::kDiffusion;
    need_ar |= !m.diffusion && !m.block;
    need_draft |= m.drafter == ArenaDrafter::kModel;
    need_block |= m.block;
  }
  need_ar |= !no_quality;
  if (draft_model == "none" && need_draft) {
    std::erase_if(run_modes, [](const ArenaMode& m) { return m.drafter == ArenaDrafter::kModel; });
    r.notes.push_back("ar+draft skipped (--draft-model none)");
    need_draft = false;
    if (run_modes.empty()) return FailWith(kWho, InvalidArgumentError("no mode left to run"));
  }
  LoadedModel diffusion_lm, ar_lm, draft_lm, judge_lm, block_lm, judge2_lm;
  if (need_diffusion) {
    auto lm = OnTemporaryThread(
        [&] { return LoadModelWithProgress(diffusion_path, WeightMode::kAuto, *backend); });
    if (!lm.ok()) return FailWith(kWho, lm.status());
    if (!lm->model->config().is_diffusion()) {
      return FailWith(
          kWho, InvalidArgumentError(diffusion_path + " is not a diffusion model" +
                                     (lm->model->config().is_block_diffusion()
                                          ? " (a block-diffusion model: give it as --block-model)"
                                          : "")));
    }
    diffusion_lm = std::move(*lm);
  }
  if (need_block) {
    auto lm = OnTemporaryThread(
        [&] { return LoadModelWithProgress(block_path, WeightMode::kAuto, *backend); });
    if (!lm.ok()) return FailWith(kWho, lm.status());
    const ModelConfig& c = lm->model->config();
    if (!c.is_block_diffusion()) {
      return FailWith(kWho, InvalidArgumentError(block_path + " is not a block-diffusion model (" +
                                                 c.architecture + ")"));
    }
    // The block modes are SDAR's strategies; Fast-dLLM v2 decodes by other rules.
    if (SelectDecoder(c, DecodeOptions{}) != DecoderKind::kBlockDiffusion) {
      return FailWith(kWho, InvalidArgumentError(
                                "--block-model: " + Base(block_path) + " is a " + c.architecture +
                                " model; the arena's block modes are SDAR's (architecture sdar)"));
    }
    if (block_model.empty()) {
      std::fprintf(stderr, "arena: block modes run %s (the block twin; --block-model none skips)\n",
                   Base(block_path).c_str());
    }
    block_lm = std::move(*lm);
  }
  if (need_ar) {
    auto lm = OnTemporaryThread(
        [&] { return LoadModelWithProgress(ar_path, WeightMode::kAuto, *backend); });
    if (!lm.ok()) return FailWith(kWho, lm.status());
    // needs_mask_token: neither a full-canvas nor a block-diffusion model may run the AR modes.
    if (lm->model->config().needs_mask_token()) {
      return FailWith(kWho, InvalidArgumentError(ar_path + " is not an autoregressive model"));
    }
    ar_lm = std::move(*lm);
  }
  // The draft heads beside the AR model (MODEL.medusa.gguf, MODEL.eagle.gguf) for ar+medusa and
  // ar+eagle: a mode whose file is not there is skipped with a note, a file that does not load is
  // an error.
  DraftHeads medusa_heads, eagle_heads;
  for (auto [drafter, kind] :
       {std::pair{ArenaDrafter::kMedusa, "medusa"}, std::pair{ArenaDrafter::kEagle, "eagle"}}) {
    const auto uses = [d = drafter](const ArenaMode& m) { return m.drafter == d; };
    if (!need_ar || std::none_of(run_modes.begin(), run_modes.end(), uses)) continue;
    auto h = LoadDraftHeads(kind, "", ar_path, ar_lm.model->config());
    if (!h.ok() && h.status().code() == StatusCode::kNotFound) {
      std::erase_if(run_modes, uses);
      r.notes.push_back("ar+" + std::string(kind) + " skipped: " + h.status().message());
      if (run_modes.empty()) return FailWith(kWho, InvalidArgumentError("no mode left to run"));
      continue;
    }
    if (!h.ok()) return FailWith(kWho, h.status());
    (drafter == ArenaDrafter::kMedusa ? medusa_heads : eagle_heads) = std::move(h).value();
  }
  if (need_draft) {
    auto lm = OnTemporaryThread(
        [&] { return LoadModelWithProgress(draft_path, WeightMode::kAuto, *backend); });
    if (!lm.ok()) return FailWith(kWho, lm.status());
    if (lm->model->config().needs_mask_token()) {
      return FailWith(kWho,
                      InvalidArgumentError(draft_path + " is not an autoregressive draft model"));
    }
    draft_lm = std::move(*lm);
  }
  const LoadedModel* judge = need_ar ? &ar_lm : nullptr;
  if (!judge_model.empty() && !no_quality) {
    auto lm = OnTemporaryThread(
        [&] { return LoadModelWithProgress(judge_model, WeightMode::kAuto, *judge_backend); });
    if (!lm.ok()) return FailWith(kWho, lm.status());
    judge_lm = std::move(*lm);
    judge = &judge_lm;
  }
  // The second judge: given, or SmolLM2 when fetched; scores texts, so any tokenizer will do.
  std::string judge2_path = judge2_model == "none" ? "" : judge2_model;
  if (judge2_model.empty() && !no_quality) {
    const std::string smol = DefaultJudge2Path();
    if (!smol.empty() && std::filesystem::exists(smol)) {
      judge2_path = smol;
    } else {
      r.notes.push_back("second judge skipped: " +
                        (smol.empty() ? std::string("no HOME or UNMASK_CACHE") : smol) +
                        " not found (scripts/fetch-smollm2.sh fetches it; --judge2 PATH picks "
                        "another)");
      std::fprintf(stderr, "arena: %s\n", r.notes.back().c_str());
    }
  }
  const LoadedModel* judge2 = nullptr;
  if (!judge2_path.empty() && !no_quality) {
    auto lm = OnTemporaryThread(
        [&] { return LoadModelWithProgress(judge2_path, WeightMode::kAuto, *judge_backend); });
    if (!lm.ok()) return FailWith(kWho, lm.status().WithContext("--judge2"));
    if (lm->model->config().needs_mask_token()) {
      return FailWith(kWho, InvalidArgumentError("--judge2 must be an autoregressive model"));
    }
    judge2_lm = std::move(*lm);
    judge2 = &judge2_lm;
  }
  const ArenaModels models{need_diffusion ? &diffusion_lm : nullptr,
                           need_ar ? &ar_lm : nullptr,
                           need_draft ? &draft_lm : nullptr,
                           need_block ? &block_lm : nullptr,
                           medusa_heads.medusa.get(),
                           eagle_heads.eagle.get()};
  // Drafters and the judge read the targets' token ids: the vocabularies must match (checked
  // before minutes of runs, not after). The block model's ids are read by the AR judge only: with
  // another vocabulary its rows are left to the second judge (a note says so).
  const LoadedModel* reference = models.ar ? models.ar : models.diffusion;
  if (reference == nullptr) reference = models.block;
  const int64_t vocab = reference->model->config().vocab_size;
  for (const auto& [lm, role] :
       {std::pair{models.diffusion, "the diffusion model"},
        std::pair{models.draft, "--draft-model"}, std::pair{judge, "the judge"}}) {
    if (lm != nullptr && lm->model->config().vocab_size != vocab) {
      return FailWith(
          kWho,
          InvalidArgumentError(
              std::string(role) + "'s vocabulary (" +
              std::to_string(lm->model->config().vocab_size) +
              " tokens) differs from the AR model's (" + std::to_string(vocab) +
              "); the arena compares models of one tokenizer (--no-quality skips the judge)"));
    }
  }
  if (judge != nullptr && !no_quality && judge->model->config().needs_mask_token()) {
    return FailWith(kWho, InvalidArgumentError("--judge must be an autoregressive model"));
  }
  // Whether the AR judge can read the block model's ids.
  const bool judge_reads_block =
      models.block != nullptr && judge != nullptr &&
      models.block->model->config().vocab_size == judge->model->config().vocab_size;
  if (models.block != nullptr && judge != nullptr && !no_quality && !judge_reads_block) {
    r.notes.push_back("the AR judge does not score the block modes: " + Base(block_path) +
                      "'s vocabulary (" + std::to_string(models.block->model->config().vocab_size) +
                      " tokens) differs from the judge's (" +
                      std::to_string(judge->model->config().vocab_size) +
                      "); the second judge scores their texts");
  }

  // Prompts, tokenized by each model's tokenizer.
  auto texts =
      prompts_file.empty() ? HeldOutStories(DefaultArenaCorpus()) : ReadPromptFile(prompts_file);
  if (!texts.ok()) {
    return FailWith(kWho, texts.status().WithContext(
                              prompts_file.empty() ? "the default prompts (give --prompts FILE)"
                                                   : "--prompts"));
  }
  std::map<const LoadedModel*, std::vector<std::vector<int32_t>>> prompts;
  for (const LoadedModel* lm : {models.diffusion, models.ar, models.block}) {
    if (lm == nullptr) continue;
    auto ids = TokenizePrompts(*lm->tokenizer, *texts, prompt_length);
    if (!ids.ok()) return FailWith(kWho, ids.status());
    const ModelConfig& c = lm->model->config();
    // Positions a request occupies: the diffusion canvas (output rounded up to whole blocks), the
    // block model's canvas (prompt + output rounded up to whole blocks from position 0), or
    // prompt + output for AR.
    const int64_t canvas = DiffusionCanvasLength(gen_length, block_length);
    const int64_t b = std::max<int64_t>(c.block_length, 1);
    const int64_t need = c.is_diffusion()         ? prompt_length + canvas
                         : c.is_block_diffusion() ? (prompt_length + gen_length + b - 1) / b * b
                                                  : prompt_length + gen_length;
    if (need > lm->model->config().context_length) {
      return FailWith(kWho,
                      OutOfRangeError("prompt " + std::to_string(prompt_length) + " + output " +
                                      std::to_string(need - prompt_length) + " tokens exceed " +
                                      Base(lm->file->path()) + "'s context of " +
                                      std::to_string(lm->model->config().context_length)));
    }
    prompts[lm] = std::move(*ids);
  }
  r.diffusion_model = models.diffusion ? Base(diffusion_path) : "";
  r.ar_model = models.ar ? Base(ar_path) : "";
  r.draft_model = models.draft ? Base(draft_path) : "";
  r.block_model = models.block ? Base(block_path) : "";
  r.block_model_block_length = models.block ? models.block->model->config().block_length : 0;
  for (const auto& [lm, path] :
       {std::pair{models.diffusion, diffusion_path}, std::pair{models.ar, ar_path},
        std::pair{models.block, block_path}}) {
    if (lm == nullptr || !lm->model->config().is_moe()) continue;
    const ModelConfig& c = lm->model->config();
    char line[160];
    std::snprintf(line, sizeof(line),
                  ": %lld experts per layer, top-%lld, %lld MoE layers; %.2fM of %.2fM parameters "
                  "active per position",
                  static_cast<long long>(c.num_experts), static_cast<long long>(c.routing.top_k),
                  static_cast<long long>(c.num_layers - c.leading_dense_layers),
                  static_cast<double>(c.ActiveParameters()) / 1e6,
                  static_cast<double>(c.NumParameters()) / 1e6);
    r.routing.push_back(Base(path) + line);
  }
  if (!no_quality && judge != nullptr) {
    r.judge_model = judge_model.empty() ? r.ar_model + ", the AR model" : Base(judge_model);
  }
  r.judge2_model = judge2 != nullptr ? Base(judge2_path) : "";
  r.prompts_source = prompts_file.empty() ? "held-out TinyStories" : Base(prompts_file);
  r.num_prompts = static_cast<int64_t>(prompts.begin()->second.size());
  r.prompt_length = prompt_length;
  r.gen_length = gen_length;
  r.block_length = block_length;
  r.min_requests = min_requests;
  r.batches = batches;

  // The machine's roofline, measured now.
  std::fprintf(stderr, "arena: measuring the GEMM peaks and the memory bandwidth...\n");
  auto peaks = OnTemporaryThread([&] { return MeasureGemmPeaks(**backend); });
  if (!peaks.ok()) return FailWith(kWho, peaks.status());
  const ComputeType compute_type = (*backend)->compute();
  for (const TypedPeak& p : *peaks) {
    if (p.type == compute_type) r.machine.gemm_gflops = p.gflops;
  }
  r.machine.compute = ComputeTypeName(compute_type);
  r.machine.gemm_peaks = FormatPeaks(*peaks);
  r.machine.bandwidth_gbs = OnTemporaryThread([] { return MeasureMemoryBandwidthGBs(); });
  r.machine.threads = GetNumThreads();
  r.machine.backend = (*backend)->Describe();
  std::fprintf(stderr,
               "arena: GEMM peaks %s (the engines compute in %s), memory read %.1f GB/s, "
               "%d threads\n",
               r.machine.gemm_peaks.c_str(), r.machine.compute.c_str(), r.machine.bandwidth_gbs,
               r.machine.threads);

  // This machine's rates for each model (for the planner's second prediction).
  std::map<const LoadedModel*, ArenaModelRates> measured_rates;
  for (const auto& [lm, name] :
       {std::pair{models.diffusion, r.diffusion_model}, std::pair{models.ar, r.ar_model},
        std::pair{models.block, r.block_model}}) {
    if (lm == nullptr) continue;
    auto h = OnTemporaryThread([&] { return MeasureModelRates(*lm, name, r.machine); });
    if (!h.ok()) return FailWith(kWho, h.status().WithContext("measuring the rates of " + name));
    measured_rates[lm] = *h;
    r.model_rates.push_back(*h);
  }

  // The points.
  struct Planned {
    const ArenaMode* mode;
    int64_t batch, requests;
  };
  std::vector<Planned> points;
  int64_t total_requests = 0;
  for (const ArenaMode& m : run_modes) {
    for (int64_t b : batches) {
      if (!m.batched && b > 1) continue;
      points.push_back({&m, b, std::max(b, min_requests)});
      total_requests += points.back().requests;
    }
  }
  ArenaSettings settings{gen_length, block_length};
  std::map<std::string, ArenaPoint> largest;  // per mode: its largest-batch run (for quality)
  ProgressLine progress("arena");
  int64_t requests_done = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const Planned& pt = points[i];
    const LoadedModel* lm = ArenaModelOf(*pt.mode, models);
    const std::string label = pt.mode->name + " batch " + std::to_string(pt.batch);
    auto point = RunArenaPoint(*pt.mode, models, settings, prompts[lm], pt.batch, pt.requests,
                               [&](int64_t done, int64_t) {
                                 progress.Update(requests_done + done, total_requests,
                                                 "point " + std::to_string(i + 1) + "/" +
                                                     std::to_string(points.size()) + ": " + label);
                               });
    if (!point.ok()) return FailWith(kWho, point.status().WithContext(label));
    requests_done += pt.requests;
    ArenaRow row = SummarizePoint(*point, pt.mode->diffusion, r.machine);
    row.block = pt.mode->block;
    progress.Finish();
    std::fprintf(stderr, "arena: %-36s %9.1f tokens/s  E2E p50 %8.1f ms  (%.1f s)\n", label.c_str(),
                 row.tokens_per_second, row.e2e_p50_ms, point->wall_ms / 1000);
    r.rows.push_back(row);
    largest[pt.mode->name] = std::move(*point);
  }

  // Quality: each judge's perplexity of each mode's outputs.
  if (!no_quality && (judge != nullptr || judge2 != nullptr)) {
    for (const ArenaMode& m : run_modes) {
      const ArenaPoint& p = largest[m.name];
      const LoadedModel* lm = ArenaModelOf(m, models);
      std::vector<std::vector<int32_t>> ps, outs;
      for (const ArenaRequest& q : p.requests) {
        ps.push_back(prompts[lm][q.prompt_index]);
        outs.push_back(q.output);
      }
      ArenaQuality quality{m.name, -1, 0, 0};
      if (judge != nullptr && (!m.block || judge_reads_block)) {
        JudgeResult jr;
        const Status s = OnTemporaryThread(
            [&] { return JudgeOutputs(*judge->model, *judge->tokenizer, ps, outs, &jr); });
        if (!s.ok()) return FailWith(kWho, s.WithContext("judging " + m.name));
        quality.judge_ppl = jr.perplexity();
        quality.scored_tokens = jr.tokens;
        quality.outputs = jr.outputs;
      }
      if (judge2 != nullptr) {
        std::vector<JudgeText> pairs;
        for (size_t i = 0; i < ps.size(); ++i) {
          pairs.push_back(DecodeForJudge(*lm->tokenizer, ps[i], outs[i]));
        }
        JudgeResult jr;
        const Status s = OnTemporaryThread(
            [&] { return JudgeTexts(*judge2->model, *judge2->tokenizer, pairs, &jr); });
        if (!s.ok()) return FailWith(kWho, s.WithContext("second judge on " + m.name));
        quality.judge2_ppl = jr.perplexity();
        quality.judge2_tokens = jr.tokens;
        quality.judge2_outputs = jr.outputs;
        if (quality.outputs == 0) quality.outputs = jr.outputs;
      }
      r.quality.push_back(quality);
    }
  }

  // The planner's prediction for this machine against the measurements.
  for (const ArenaRow& row : r.rows) {
    if (std::find(validate_batches.begin(), validate_batches.end(), row.batch) ==
        validate_batches.end()) {
      continue;
    }
    const auto mode = std::find_if(run_modes.begin(), run_modes.end(),
                                   [&](const ArenaMode& m) { return m.name == row.mode; });
    if (mode == run_modes.end()) continue;
    const LoadedModel& target = *ArenaModelOf(*mode, models);
    const LoadedModel* drafter = mode->drafter == ArenaDrafter::kModel       ? models.draft
                                 : mode->drafter == ArenaDrafter::kDiffusion ? models.diffusion
                                                                             : nullptr;
    const double head_bytes = mode->drafter == ArenaDrafter::kMedusa && models.medusa != nullptr
                                  ? static_cast<double>(models.medusa->weight_bytes())
                              : mode->drafter == ArenaDrafter::kEagle && models.eagle != nullptr
                                  ? static_cast<double>(models.eagle->weight_bytes())
                                  : 0.0;
    auto roofline = PredictTps(*mode, row, target, drafter, head_bytes, r, nullptr);
    auto tps = PredictTps(*mode, row, target, drafter, head_bytes, r, &measured_rates[&target]);
    if (!roofline.ok() || !tps.ok()) {
      return FailWith(kWho, (roofline.ok() ? tps.status() : roofline.status())
                                .WithContext("planner for " + row.mode));
    }
    r.validation.push_back({row.mode, row.batch, row.tokens_per_second, roofline->tokens_per_second,
                            tps->tokens_per_second, row.forward_share, row.ms_per_forward,
                            tps->ms_per_forward});
  }
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();

  const std::string md = ArenaMarkdown(r);
  if (Status s = WriteText(out_dir + "/arena.md", md); !s.ok()) return FailWith(kWho, s);
  if (Status s = WriteText(out_dir + "/arena.json", ArenaJson(r).dump(2) + "\n"); !s.ok()) {
    return FailWith(kWho, s);
  }
  if (Status s = WriteSvg(ArenaThroughputPlot(r), out_dir + "/arena-throughput.svg"); !s.ok()) {
    return FailWith(kWho, s);
  }
  if (Status s = WriteSvg(ArenaLatencyPlot(r), out_dir + "/arena-latency.svg"); !s.ok()) {
    return FailWith(kWho, s);
  }
  std::printf("%s", md.c_str());
  std::fprintf(stderr,
               "arena: wrote %s/arena.md, arena.json, arena-throughput.svg, arena-latency.svg "
               "(%.0f s)\n",
               out_dir.c_str(), r.elapsed_s);
  return 0;
}

}  // namespace unmask::tools
