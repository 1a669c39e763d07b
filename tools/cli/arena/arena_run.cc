#include "cli/arena/arena_run.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "core/clock.h"
#include "decode/drafter.h"
#include "engine/engine.h"

namespace unmask::tools {

const LoadedModel* ArenaModelOf(const ArenaMode& mode, const ArenaModels& models) {
  if (mode.block) return models.block;
  return mode.diffusion ? models.diffusion : models.ar;
}

GenerationRequest MakeArenaRequest(const ArenaMode& mode, const ArenaSettings& s,
                                   const std::vector<int32_t>& prompt, int64_t i,
                                   const ArenaModels& models) {
  GenerationRequest req;
  req.id = mode.name + "-" + std::to_string(i);
  req.prompt = prompt;
  req.max_tokens = s.gen_length;
  req.ar.sampling.temperature = 0;
  req.ar.draft_max = mode.draft_max;
  req.speculative_lookup = mode.drafter == ArenaDrafter::kLookup;
  if (mode.drafter == ArenaDrafter::kMedusa) req.medusa_heads = models.medusa;
  if (mode.drafter == ArenaDrafter::kEagle && models.ar != nullptr) {
    req.eagle_head = models.eagle;
    req.eagle_base = models.ar->model.get();
    req.eagle.total_tokens = mode.draft_max;
  }
  req.diffusion = mode.diffusion_params;
  req.diffusion.temperature = 0;
  req.diffusion.steps = 0;  // the factory's default: one token per forward up to 128 tokens
  if (mode.block) {
    // SDAR (decoder_factory.h SettleBlockParams): the strategy by name; block_length not given,
    // so the model's trained block; steps not given, so one denoising step per block position.
    req.remasking = std::string(BlockRemaskingName(mode.block_mode.remasking));
    if (mode.block_mode.denoising_steps > 0) {
      req.block.denoising_steps = mode.block_mode.denoising_steps;
      req.given.push_back({"denoising_steps", "--denoising-steps"});
    }
    if (mode.block_mode.threshold >= 0) {
      req.diffusion.threshold = mode.block_mode.threshold;
      req.given.push_back({"threshold", "--threshold"});
    }
  } else {
    req.diffusion.block_length = s.block_length;
  }
  req.arrival = SteadyClock::now();
  return req;
}

namespace {

StatusOr<ArenaPoint> RunScheduled(const ArenaMode& mode, const LoadedModel& lm,
                                  const ArenaModels& models, const ArenaSettings& settings,
                                  const std::vector<std::vector<int32_t>>& prompts, int64_t batch,
                                  int64_t requests, const ArenaProgress& progress) {
  SchedulerOptions o;
  o.max_batch = batch;
  o.max_queue = requests + batch;
  o.max_batched_tokens = int64_t{1} << 30;
  EngineOptions eo;
  eo.scheduler = o;
  Engine engine(eo, nullptr, lm.backend);
  const size_t index = engine.AddModel(mode.name, &lm);
  UNMASK_RETURN_IF_ERROR(OnTemporaryThread([&] { return engine.StartServing(); }));
  Scheduler& sched = engine.scheduler();
  ArenaPoint point;
  point.mode = mode.name;
  point.batch = batch;
  std::atomic<int64_t> next{0};
  std::mutex mu;  // guards point.requests, error, progress
  Status error;
  const auto t0 = SteadyClock::now();
  auto client = [&] {
    for (;;) {
      const int64_t i = next.fetch_add(1);
      if (i >= requests) return;
      const size_t p = static_cast<size_t>(i) % prompts.size();
      auto stream = sched.Submit(index, MakeArenaRequest(mode, settings, prompts[p], i, models));
      if (!stream.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (error.ok()) error = stream.status();
        return;
      }
      StreamEvent e;
      // Asleep until the request is done: a client thread woken for every token would take a
      // core from the engine's threads on a small machine.
      while (!(*stream)->WaitFinished(std::chrono::milliseconds(1000))) {
      }
      while (!(*stream)->Pop(&e, std::chrono::milliseconds(1000)) ||
             e.type != StreamEvent::Type::kDone) {
      }
      std::lock_guard<std::mutex> lock(mu);
      if (e.finish == FinishReason::kError || e.finish == FinishReason::kAbort) {
        if (error.ok()) {
          error = e.status.ok() ? InternalError("request " + std::to_string(i) + " was aborted")
                                : e.status;
        }
        return;
      }
      point.drafted += e.stats.drafted;
      point.accepted += e.stats.accepted;
      point.requests.push_back({p, e.stats, std::move(e.output_ids)});
      if (progress) progress(static_cast<int64_t>(point.requests.size()), requests);
    }
  };
  std::vector<std::thread> clients;
  for (int64_t c = 0; c < std::min(batch, requests); ++c) clients.emplace_back(client);
  for (std::thread& t : clients) t.join();
  point.wall_ms = MsSince(t0);
  point.totals = sched.Load(index).totals;
  sched.Shutdown();  // before `engine` goes: the requests' streams are done
  if (!error.ok()) return error;
  return point;
}

// Batch 1 through Engine::Run with a model drafter (served requests draft by prompt lookup only).
StatusOr<ArenaPoint> RunSpeculative(const ArenaMode& mode, const ArenaModels& models,
                                    const ArenaSettings& settings,
                                    const std::vector<std::vector<int32_t>>& prompts,
                                    int64_t requests, const ArenaProgress& progress) {
  const LoadedModel& target = *models.ar;
  const LoadedModel* drafter_model =
      mode.drafter == ArenaDrafter::kModel ? models.draft : models.diffusion;
  if (drafter_model == nullptr) {
    return InvalidArgumentError(mode.name + " needs a draft model");
  }
  if (drafter_model->model->config().vocab_size != target.model->config().vocab_size) {
    return InvalidArgumentError(mode.name + ": the drafter's vocabulary (" +
                                std::to_string(drafter_model->model->config().vocab_size) +
                                ") differs from the target's (" +
                                std::to_string(target.model->config().vocab_size) + ")");
  }
  Engine engine;
  const size_t index = engine.AddModel(mode.name, &target);
  StepBuffers buffers;
  ArenaPoint point;
  point.mode = mode.name;
  point.batch = 1;
  const auto t0 = SteadyClock::now();
  for (int64_t i = 0; i < requests; ++i) {
    std::unique_ptr<Drafter> drafter;
    if (mode.drafter == ArenaDrafter::kModel) {
      UNMASK_ASSIGN_OR_RETURN(drafter, MakeModelDrafter(drafter_model->model.get(), {}));
    } else {
      DiffusionDrafterParams dp;
      dp.mask_token = drafter_model->tokenizer->special().mask;
      UNMASK_ASSIGN_OR_RETURN(drafter, MakeDiffusionDrafter(drafter_model->model.get(), dp));
    }
    const size_t p = static_cast<size_t>(i) % prompts.size();
    GenerationRequest req = MakeArenaRequest(mode, settings, prompts[p], i, models);
    req.drafter = drafter.get();
    UNMASK_ASSIGN_OR_RETURN(BuiltDecoder dec, engine.MakeDecoder(index, req.prompt, req));
    Decoder* const one[1] = {dec.decoder.get()};
    UNMASK_ASSIGN_OR_RETURN(GenerationStats st, engine.Run(index, one, nullptr, &buffers));
    ArenaRequest r;
    r.prompt_index = p;
    r.output.assign(dec.decoder->generated().begin(), dec.decoder->generated().end());
    r.stats.prompt_tokens = st.prompt_tokens;
    r.stats.completion_tokens = st.generated_tokens;
    r.stats.nfe = st.nfe;
    r.stats.forward_positions = st.forward_positions;
    r.stats.drafted = st.speculative.drafted;
    r.stats.accepted = st.speculative.accepted;
    r.stats.ttft_ms = st.ttft_ms;
    r.stats.total_ms = st.total_ms;
    point.drafted += r.stats.drafted;
    point.accepted += r.stats.accepted;
    point.totals.forwards += st.nfe;
    point.totals.positions += st.forward_positions;
    point.totals.flops += st.flops;
    point.totals.bytes += st.bytes;
    point.totals.forward_ms += st.forward_ms;
    point.totals.moe_layer_forwards += st.moe_layer_forwards;
    point.totals.experts_hit += st.experts_hit;
    point.totals.expert_bytes += st.expert_bytes;
    point.requests.push_back(std::move(r));
    if (progress) progress(i + 1, requests);
  }
  point.wall_ms = MsSince(t0);
  return point;
}

}  // namespace

int64_t ArenaPoint::completion_tokens() const {
  int64_t n = 0;
  for (const ArenaRequest& r : requests) n += r.stats.completion_tokens;
  return n;
}

StatusOr<ArenaPoint> RunArenaPoint(const ArenaMode& mode, const ArenaModels& models,
                                   const ArenaSettings& settings,
                                   const std::vector<std::vector<int32_t>>& prompts, int64_t batch,
                                   int64_t requests, const ArenaProgress& progress) {
  if (batch < 1 || requests < 1) return InvalidArgumentError("batch and requests must be >= 1");
  if (prompts.empty()) return InvalidArgumentError("no prompts");
  const LoadedModel* lm = ArenaModelOf(mode, models);
  if (lm == nullptr) {
    return InvalidArgumentError(mode.name + " needs " +
                                (mode.block       ? "a block-diffusion"
                                 : mode.diffusion ? "a diffusion"
                                                  : "an AR") +
                                " model");
  }
  if (!mode.batched) {
    if (batch != 1) return InvalidArgumentError(mode.name + " runs at batch 1 only");
    return OnTemporaryThread(
        [&] { return RunSpeculative(mode, models, settings, prompts, requests, progress); });
  }
  if ((mode.drafter == ArenaDrafter::kMedusa && models.medusa == nullptr) ||
      (mode.drafter == ArenaDrafter::kEagle && models.eagle == nullptr)) {
    return InvalidArgumentError(
        mode.name + " needs " +
        (mode.drafter == ArenaDrafter::kMedusa ? "Medusa heads" : "an EAGLE draft layer") +
        " beside the AR model");
  }
  return RunScheduled(mode, *lm, models, settings, prompts, batch, requests, progress);
}

}  // namespace unmask::tools
