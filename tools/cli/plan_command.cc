#include "cli/plan_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/cli_util.h"
#include "common/hardware_table.h"
#include "common/model_args.h"
#include "common/plan_report.h"
#include "decode/decoder_factory.h"
#include "format/gguf.h"
#include "model/hf_import.h"
#include "plan/model_presets.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask plan";

// A preset id or a GGUF file (its hyper-parameters only; no weights are read).
StatusOr<PlanModel> ResolveModel(const std::string& spec) {
  if (spec.size() > 5 && spec.substr(spec.size() - 5) == ".gguf") {
    UNMASK_ASSIGN_OR_RETURN(auto file, OpenModelFile(spec));
    UNMASK_ASSIGN_OR_RETURN(ModelConfig c, ReadModelConfig(*file));
    c.tied_output = file->FindTensor("output.weight") == nullptr;
    return PlanModel{std::filesystem::path(spec).stem().string(), c, spec};
  }
  UNMASK_ASSIGN_OR_RETURN(plan::ModelPreset p, plan::FindModelPreset(spec));
  return PlanModel{p.id, p.config, p.source};
}

}  // namespace

void PlanCommand::AddTo(CLI::App& app) {
  app.add_option("--hardware", hardware,
                 "hardware ids from the table (h100-sxm, h200, a100, l4, cpu; 'all' for every "
                 "entry)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--model", models,
                 "models: a preset (llada-8b, dream-7b, llama-3-8b, qwen2.5-7b, llama-3.2-1b) or "
                 "a .gguf file (its hyper-parameters only); at most one diffusion and one AR "
                 "model; with only one kind, the other engine runs the same architecture")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option(
         "--dtype", dtype,
         "weight and compute dtype: bf16, f16, fp8, int8, f32 (the hardware entry must "
         "give a peak for it; the cpu entry has f32, bf16 and int8, as --compute runs them)")
      ->check(CLI::IsMember({"bf16", "f16", "fp8", "int8", "f32"}))
      ->capture_default_str();
  app.add_option("--prompt-length", prompt_length, "prompt tokens per request")
      ->check(IntegerIn(1, 1 << 20))
      ->capture_default_str();
  AddGenLengthFlag(app, &gen_length);
  app.add_option("--batch", batches, "batch sizes (concurrent requests), ascending")
      ->delimiter(',')
      ->check(IntegerIn(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--latency-target-ms", latency_target_ms,
                 "end-to-end latency a request must meet to count for the winner (0: none)")
      ->check(FiniteIn(0, 1e9))
      ->capture_default_str();
  app.add_option("--price-per-hour", price_per_hour,
                 "USD per hour of the machine (0: the table's typical price)")
      ->check(FiniteIn(0, 1e6))
      ->capture_default_str();
  AddBlockLengthFlag(app, &block_length);
  app.add_option("--fast-tokens-per-forward", fast_tokens_per_forward,
                 "tokens committed per forward by diffusion-fast (Fast-dLLM parallel decoding; "
                 "measure yours with unmask bench arena; at most the block length)")
      ->check(FiniteIn(1, 65536))
      ->capture_default_str();
  app.add_option("--draft-max", draft_max, "AR+spec: drafts per verify forward")
      ->check(IntegerIn(1, 64))
      ->capture_default_str();
  app.add_option("--tokens-per-verify", tokens_per_verify,
                 "AR+spec: mean tokens committed per verify forward, bonus token included (at "
                 "most --draft-max + 1)")
      ->check(FiniteIn(1, 65))
      ->capture_default_str();
  app.add_option("--eagle-nodes", eagle_nodes,
                 "ar+eagle: draft-tree nodes verified per forward (0 leaves ar+eagle out)")
      ->check(IntegerIn(0, 64))
      ->capture_default_str();
  app.add_option("--eagle-depth", eagle_depth, "ar+eagle: tree levels, one draft-layer pass each")
      ->check(IntegerIn(1, 16))
      ->capture_default_str();
  app.add_option("--eagle-tokens-per-verify", eagle_tau,
                 "ar+eagle: mean tokens committed per verify forward, bonus included (SGLang's "
                 "EAGLE-3 on Llama-3.1-8B: about 3 to 4; measure yours with unmask bench arena)")
      ->check(FiniteIn(1, 65))
      ->capture_default_str();
  app.add_option("--eagle-draft-vocab", eagle_draft_vocab,
                 "ar+eagle: rows of the draft head (EAGLE-3: 32768 for a 128k vocabulary)")
      ->check(IntegerIn(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--overhead-ms", overhead_ms, "fixed cost per forward (launches, syncs), ms")
      ->check(FiniteIn(0, 60000))
      ->capture_default_str();
  app.add_option("--hardware-file", hardware_file,
                 "a hardware table of the same schema instead of the built-in data/hardware.json");
  app.add_option("-o,--output", output, "md (tables) or json")
      ->check(CLI::IsMember({"md", "json"}))
      ->capture_default_str();
  app.add_option("--svg", svg_dir,
                 "write plan-<hardware>.svg (tokens/s against batch) into this folder (created)");
}

int PlanCommand::Run() const {
  auto table = LoadHardwareTable(hardware_file);
  if (!table.ok()) return FailWith(kWho, table.status());
  std::vector<plan::Hardware> hws;
  const bool all = std::find(hardware.begin(), hardware.end(), "all") != hardware.end();
  for (const std::string& id : hardware) {
    if (all) {
      hws = *table;
      break;
    }
    auto hw = plan::FindHardware(*table, id);
    if (!hw.ok()) return FailWith(kWho, hw.status());
    if (std::count(hardware.begin(), hardware.end(), id) > 1) {
      return FailWith(kWho, InvalidArgumentError("--hardware: '" + id + "' is listed twice"));
    }
    hws.push_back(*hw);
  }
  if (hws.empty()) return FailWith(kWho, InvalidArgumentError("--hardware: no hardware given"));
  for (size_t i = 1; i < batches.size(); ++i) {
    if (batches[i] <= batches[i - 1]) {
      return FailWith(kWho, InvalidArgumentError("--batch: sizes must be ascending"));
    }
  }
  if (batches.empty()) return FailWith(kWho, InvalidArgumentError("--batch: no batch size given"));

  PlanInputs in;
  for (const std::string& spec : models) {
    if (std::count(models.begin(), models.end(), spec) > 1) {
      return FailWith(kWho, InvalidArgumentError("--model: '" + spec + "' is listed twice"));
    }
    auto m = ResolveModel(spec);
    if (!m.ok()) return FailWith(kWho, m.status());
    PlanModel& slot =
        m->config.is_diffusion() || m->config.is_block_diffusion() ? in.diffusion : in.ar;
    if (!slot.name.empty()) {
      return FailWith(
          kWho, InvalidArgumentError("--model: give at most one diffusion and one AR model (" +
                                     slot.name + " and " + m->name + ")"));
    }
    slot = *m;
  }
  if (in.diffusion.name.empty() && in.ar.name.empty()) {
    return FailWith(kWho, InvalidArgumentError("--model: no model given"));
  }
  CompleteModelPair(in);
  if (block_length > gen_length) {
    return FailWith(kWho, InvalidArgumentError("--block-length " + std::to_string(block_length) +
                                               " is longer than the output (-n " +
                                               std::to_string(gen_length) + ")"));
  }
  // The workload must fit each model's context (diffusion: the canvas, a block multiple).
  const int64_t canvas = DiffusionCanvasLength(gen_length, block_length);
  for (const PlanModel* m : {&in.diffusion, &in.ar}) {
    const int64_t need = prompt_length + (m->config.is_diffusion() ? canvas : gen_length);
    if (need > m->config.context_length) {
      return FailWith(kWho, OutOfRangeError(m->name + ": prompt " + std::to_string(prompt_length) +
                                            " + output " + std::to_string(need - prompt_length) +
                                            " tokens exceed its context of " +
                                            std::to_string(m->config.context_length) + " tokens"));
    }
  }
  in.workload = {prompt_length, gen_length};
  in.batches = batches;
  in.latency_target_ms = latency_target_ms;
  const bool block_model = in.diffusion.config.is_block_diffusion();
  // A block model decodes with its own attention block (the --block-length flag is the
  // full-canvas engines').
  in.engines =
      block_model
          ? BlockPlanEngines(
                in.diffusion.config.block_length,
                std::min<double>(fast_tokens_per_forward, in.diffusion.config.block_length),
                draft_max, tokens_per_verify)
          : DefaultPlanEngines(block_length, fast_tokens_per_forward, draft_max, tokens_per_verify);
  if (eagle_nodes > 0) {
    // After ar+spec: an EAGLE draft layer of the AR model's own shapes, one pass per tree level.
    plan::EngineSpec eagle{.name = "ar+eagle",
                           .kind = plan::EngineKind::kArSpeculative,
                           .draft_max = eagle_nodes,
                           .tokens_per_verify = eagle_tau,
                           .draft_cost = plan::EagleDraftCost(in.ar.config, eagle_draft_vocab),
                           .draft_passes = eagle_depth};
    in.engines.insert(in.engines.begin() + 2, eagle);
  }
  for (const plan::EngineSpec& e : in.engines) {
    if (Status s = plan::ValidateEngineSpec(e); !s.ok()) return FailWith(kWho, s);
  }

  nlohmann::json out_json = {{"assumptions", nlohmann::json::array()},
                             {"hardware", nlohmann::json::array()}};
  std::vector<std::string> assumptions = PlanAssumptions(in, dtype, overhead_ms);
  for (const std::string& a : assumptions) out_json["assumptions"].push_back(a);
  if (output == "md") {
    std::printf("# unmask plan\n\nAssumptions:\n");
    for (const std::string& a : assumptions) std::printf("- %s\n", a.c_str());
  }
  if (!svg_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(svg_dir, ec);
    if (ec) {
      return FailWith(kWho,
                      InvalidArgumentError("--svg " + svg_dir + ": cannot create the folder (" +
                                           ec.message() + ")"));
    }
  }
  for (const plan::Hardware& hw : hws) {
    auto rates = plan::RatesFor(hw, dtype, overhead_ms);
    if (!rates.ok() && all) {  // --hardware all: machines without this dtype are skipped
      if (output == "md")
        std::printf("\n## %s: skipped (%s)\n", hw.id.c_str(), rates.status().message().c_str());
      continue;
    }
    if (!rates.ok()) return FailWith(kWho, rates.status());
    const double price = price_per_hour > 0 ? price_per_hour : hw.price.typical;
    auto report = ProjectPlan(in, *rates);
    if (!report.ok()) return FailWith(kWho, report.status());
    if (output == "md") {
      PrintPlanMarkdown(hw, *rates, dtype, price, price_per_hour > 0, in, *report);
    } else {
      out_json["hardware"].push_back(PlanJson(hw, *rates, dtype, price, in, *report));
    }
    if (!svg_dir.empty()) {
      const std::string path = svg_dir + "/plan-" + hw.id + ".svg";
      if (Status s = WriteSvg(PlanPlot(hw, dtype, in, *report), path); !s.ok())
        return FailWith(kWho, s);
      std::fprintf(stderr, "wrote %s\n", path.c_str());
    }
  }
  if (output == "json") {
    std::printf("%s\n",
                out_json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
}

}  // namespace unmask::tools
