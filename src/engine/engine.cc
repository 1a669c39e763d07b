#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/clock.h"

namespace unmask {

StatusOr<GenerationStats> RunToCompletion(const Model& model, std::span<Decoder* const> decoders,
                                          const StepCallback& on_step, StepBuffers* buffers) {
  const auto start = std::chrono::steady_clock::now();
  if (decoders.empty()) return InvalidArgumentError("RunToCompletion: no decoders");
  std::vector<StepSlot> slots(decoders.size());
  bool needs_kv = false;
  GenerationStats stats;
  for (size_t i = 0; i < decoders.size(); ++i) {
    if (decoders[i] == nullptr) return InvalidArgumentError("RunToCompletion: null decoder");
    slots[i].decoder = decoders[i];
    decoders[i]->set_kv_seq(static_cast<int32_t>(i));
    needs_kv |= decoders[i]->needs_kv_cache();
    stats.prompt_tokens += decoders[i]->prompt_length();
  }
  std::optional<KvCache> kv;
  if (needs_kv) {
    UNMASK_ASSIGN_OR_RETURN(kv, model.MakeKvCache(static_cast<int64_t>(decoders.size())));
  }
  StepBuffers local;
  StepBuffers& buf = buffers != nullptr ? *buffers : local;
  StepStats step;
  for (;;) {
    UNMASK_RETURN_IF_ERROR(StepBatch(model, slots, kv ? &*kv : nullptr, buf, &step));
    for (const StepSlot& s : slots) {
      if (!s.status.ok()) return s.status;
    }
    if (step.stepped == 0) break;
    stats.forward_ms += step.forward.ms;
    stats.flops += step.forward.flops;
    stats.bytes += step.forward.bytes();
    stats.moe_layer_forwards += step.forward.moe_layers;
    stats.experts_hit += step.forward.experts_hit;
    stats.expert_bytes += step.forward.expert_bytes;
    stats.forward_positions += step.forward.num_positions;
    stats.decode_ms += step.decode_ms;
    stats.plan_ms += step.plan_ms;
    const bool first = stats.nfe == 0;
    ++stats.nfe;
    for (StepSlot& s : slots) {
      if (!s.stepped) continue;
      if (first) stats.first_step_tokens += static_cast<int64_t>(s.result.tokens.size());
      if (on_step && !on_step(*s.decoder, s.result)) s.decoder->Stop();
    }
    if (first) stats.ttft_ms = MsSince(start);
  }
  for (Decoder* d : decoders) {
    stats.generated_tokens += static_cast<int64_t>(d->generated().size());
    if (const auto* ar = dynamic_cast<const ArDecoder*>(d); ar != nullptr) {
      stats.speculative.steps += ar->speculative().steps;
      stats.speculative.drafted += ar->speculative().drafted;
      stats.speculative.accepted += ar->speculative().accepted;
      if (const Drafter* dr = ar->drafter(); dr != nullptr) {
        const DrafterStats& ds = dr->stats();
        stats.drafter.calls += ds.calls;
        stats.drafter.forwards += ds.forwards;
        stats.drafter.positions += ds.positions;
        stats.drafter.ms += ds.ms;
        stats.drafter.flops += ds.flops;
      }
    }
  }
  stats.total_ms = MsSince(start);
  return stats;
}

StatusOr<std::unique_ptr<Engine>> Engine::Create(EngineOptions options, MetricsRegistry* metrics) {
  UNMASK_ASSIGN_OR_RETURN(std::shared_ptr<Backend> backend, CreateBackend(options.backend));
  return std::make_unique<Engine>(std::move(options), metrics, std::move(backend));
}

Engine::Engine(EngineOptions options, MetricsRegistry* metrics, std::shared_ptr<Backend> backend)
    : options_(std::move(options)),
      metrics_(metrics),
      backend_(backend ? std::move(backend) : DefaultBackend()) {}

StatusOr<size_t> Engine::LoadModel(std::string name, const std::string& path, WeightMode mode,
                                   std::function<void(int, int)> progress) {
  LoadOptions lo;
  lo.weight_mode = mode;
  lo.backend = backend_;
  lo.progress = std::move(progress);
  UNMASK_ASSIGN_OR_RETURN(LoadedModel loaded, unmask::LoadModel(path, lo));
  return AddModel(std::move(name), std::move(loaded));
}

Engine::~Engine() { Shutdown(); }

void Engine::Shutdown() {
  if (scheduler_) scheduler_->Shutdown();
}

size_t Engine::AddModel(std::string name, LoadedModel model) {
  models_.push_back({std::move(name), std::make_shared<const LoadedModel>(std::move(model))});
  return models_.size() - 1;
}

size_t Engine::AddModel(std::string name, const LoadedModel* model) {
  // Not owned: a shared_ptr that deletes nothing.
  models_.push_back({std::move(name), std::shared_ptr<const LoadedModel>(model, [](auto*) {})});
  return models_.size() - 1;
}

DecoderModel Engine::decoder_model(size_t index) const {
  const LoadedModel& lm = model(index);
  const SpecialTokens& sp = lm.tokenizer->special();
  return DecoderModel{&lm.model->config(), {sp.mask, sp.eos, sp.eot, sp.pad}, name(index)};
}

StatusOr<BuiltDecoder> Engine::MakeDecoder(size_t index, std::span<const int32_t> prompt,
                                           const DecodeOptions& options) const {
  if (index >= models_.size()) return OutOfRangeError("unknown model index");
  return unmask::MakeDecoder(decoder_model(index), prompt, options);
}

StatusOr<GenerationStats> Engine::Run(size_t index, std::span<Decoder* const> decoders,
                                      const StepCallback& on_step, StepBuffers* buffers) const {
  if (index >= models_.size()) return OutOfRangeError("unknown model index");
  return RunToCompletion(*model(index).model, decoders, on_step, buffers);
}

Status Engine::StartServing() {
  if (scheduler_) return Status::Ok();
  auto s = std::make_unique<Scheduler>(options_.scheduler, metrics_);
  for (const Entry& e : models_) {
    UNMASK_ASSIGN_OR_RETURN(const size_t index, s->AddModel({e.name, e.loaded->model.get(),
                                                             e.loaded->tokenizer.get()}));
    (void)index;  // equal to the engine index: models are added in order
  }
  scheduler_ = std::move(s);
  scheduler_->Start();
  return Status::Ok();
}

StatusOr<RouteDecision> Engine::Route(std::span<const GenerationRequest* const> settled,
                                      double latency_target_ms) const {
  if (!scheduler_) return FailedPreconditionError("Engine::Route before StartServing");
  std::vector<RouteCandidate> candidates;
  RouteRequest rr;
  rr.latency_target_ms = latency_target_ms;
  for (size_t i = 0; i < settled.size() && i < models_.size(); ++i) {
    const GenerationRequest* g = settled[i];
    if (g == nullptr) continue;
    RouteCandidate c{i, name(i), scheduler_->Load(i)};
    c.prompt_tokens = static_cast<int64_t>(g->prompt.size());
    c.max_tokens = g->until_done ? std::min(g->max_tokens, kRouteUntilDoneTokens) : g->max_tokens;
    rr.max_tokens = c.max_tokens;
    const ModelConfig& config = model(i).model->config();
    if (config.is_diffusion()) {
      // As the diffusion engine will run it: the factory's canvas rule and default steps.
      auto p = SettleDiffusionParams(*g);
      if (p.ok()) {
        rr.diffusion = *p;
        if (SelectDecoder(config, *g) == DecoderKind::kDream) {
          rr.diffusion.gen_length = rr.diffusion.block_length = g->max_tokens;
        }
      }
    } else if (config.is_block_diffusion()) {
      // Block diffusion, as its decoder will run it (is_diffusion() is false for these models).
      BlockRoute b;
      if (SelectDecoder(config, *g) == DecoderKind::kBlockDiffusion) {
        auto p = SettleBlockParams(decoder_model(i), *g);
        if (p.ok()) {
          b.block_length = p->block_length;
          b.steps_per_block = p->denoising_steps;
          b.fixed_steps = p->remasking == BlockRemasking::kSequential ||
                          p->remasking == BlockRemasking::kLowConfidenceStatic;
          b.separate_store = p->separate_store;
        }
      } else {
        // Fast-dLLM v2 (MakeDecoder's rule for block_size): threshold commits, at worst one token
        // per step.
        b.block_length =
            Given(*g, "block_length") ? g->diffusion.block_length : config.block_length;
        b.steps_per_block = b.block_length;
        b.fixed_steps = false;
      }
      c.block = b;
    }
    // One engine thread steps every model in turn: the others' forwards delay each step.
    for (size_t j = 0; j < models_.size(); ++j) {
      if (j == i) continue;
      const EngineLoad other = scheduler_->Load(j);
      if (other.running > 0) c.shared_step_ms += other.last_forward_ms;
    }
    candidates.push_back(std::move(c));
  }
  if (candidates.empty()) return InvalidArgumentError("no loaded model can run this request");
  RouteDecision d = unmask::Route(rr, candidates);
  return d;
}

}  // namespace unmask
