#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "engine/scheduler_state.h"
#include "engine/text_stream.h"

namespace unmask {

Scheduler::Scheduler(SchedulerOptions options, MetricsRegistry* metrics)
    : options_(options), metrics_(metrics) {
  options_.max_batch = std::max<int64_t>(options_.max_batch, 1);
  options_.max_queue = std::max<int64_t>(options_.max_queue, 0);
  options_.max_batched_tokens = std::max<int64_t>(options_.max_batched_tokens, 1);
  if (metrics_ == nullptr) return;
  MetricsRegistry& r = *metrics_;
  const std::vector<std::string> me = {"model", "engine"};
  r.DeclareCounter("requests_total",
                   "Finished requests by model and outcome (stop, length, deadline, abort, error)",
                   {"model", "engine", "outcome"});
  r.DeclareCounter("requests_admitted_total",
                   "Requests admitted (queued or running); once idle, equal to the sum of "
                   "requests_total over outcomes",
                   me);
  r.DeclareCounter("prompt_tokens_total", "Prompt tokens of admitted requests", me);
  r.DeclareCounter("generation_tokens_total", "Tokens returned to clients", me);
  r.DeclareCounter("forward_passes_total", "Model forward passes (one per engine step)", me);
  r.DeclareCounter("forward_positions_total", "Positions fed to forward passes", me);
  r.DeclareCounter("forward_flops_total", "FLOPs of the forward passes", me);
  r.DeclareCounter("forward_bytes_total",
                   "Bytes the forward passes moved (weights, KV cache, activations)", me);
  r.DeclareGauge("forward_arithmetic_intensity", "FLOPs per byte of the last forward pass", me);
  r.DeclareCounter("moe_layer_forwards_total",
                   "Mixture-of-experts layers run, summed over forward passes", me);
  r.DeclareCounter("moe_experts_hit_total",
                   "Distinct experts routed to, per MoE layer, summed over forward passes", me);
  r.DeclareCounter("moe_expert_bytes_total",
                   "Bytes of routed-expert weights read (the hit experts only)", me);
  r.DeclareCounter(
      "request_nfe_total",
      "Forward passes summed over requests (a batched forward counts once per request)", me);
  r.DeclareCounter("spec_decode_num_draft_tokens_total", "Speculative tokens proposed", me);
  r.DeclareCounter("spec_decode_num_accepted_tokens_total", "Speculative tokens accepted", me);
  r.DeclareGauge("num_requests_waiting", "Requests in the queue", me);
  r.DeclareGauge("num_requests_running", "Requests in the running batch", me);
  r.DeclareGauge("batch_positions", "Positions fed by the last forward", me);
  const std::vector<double> lat = LatencyBucketsSeconds();
  r.DeclareHistogram("time_to_first_token_seconds", "Arrival to first streamed text", me, lat);
  r.DeclareHistogram("inter_token_latency_seconds", "Time between streamed text pieces", me, lat);
  r.DeclareHistogram("e2e_request_latency_seconds", "Arrival to finish", me, lat);
  r.DeclareHistogram("request_queue_time_seconds", "Arrival to admission", me, lat);
  r.DeclareHistogram("request_tokens_per_forward",
                     "Returned tokens per forward pass of each finished request", me,
                     {0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8, 16, 32});
}

Scheduler::~Scheduler() { Shutdown(); }

StatusOr<size_t> Scheduler::AddModel(const EngineModel& m) {
  if (m.model == nullptr || m.tokenizer == nullptr) {
    return InvalidArgumentError("Scheduler::AddModel: null model or tokenizer");
  }
  auto ms = std::make_unique<ModelState>();
  ms->m = m;
  ms->diffusion = m.model->config().needs_mask_token();  // full-canvas or block diffusion
  UNMASK_ASSIGN_OR_RETURN(ms->kv, m.model->MakeKvCache(options_.max_batch));
  ms->slot_used.assign(static_cast<size_t>(options_.max_batch), 0);
  // Cost model: forwards of 1 and P positions (best of a few), without a cache.
  const int64_t ctx = m.model->config().context_length;
  const int64_t vocab = m.model->config().vocab_size;
  const int64_t big = std::max<int64_t>(2, std::min<int64_t>(64, ctx));
  std::vector<int32_t> tokens(static_cast<size_t>(big), 0);
  Tensor logits(DType::kF32, {1, vocab});
  auto time_forward = [&](int64_t n) -> StatusOr<double> {
    const int32_t last[1] = {static_cast<int32_t>(n - 1)};
    BatchPlan plan;
    plan.sequences.push_back(SequenceInput{std::span<const int32_t>(tokens.data(), n), 0, last});
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      ForwardStats fs;
      UNMASK_RETURN_IF_ERROR(m.model->Forward(plan, ms->buffers.ws, logits.view(), &fs));
      best = std::min(best, fs.ms);
    }
    return best;
  };
  UNMASK_ASSIGN_OR_RETURN(const double t1, time_forward(1));
  UNMASK_ASSIGN_OR_RETURN(const double tb, time_forward(big));
  ms->load.cost.ms_per_position = std::max(0.0, (tb - t1) / static_cast<double>(big - 1));
  ms->load.cost.overhead_ms = std::max(0.0, t1 - ms->load.cost.ms_per_position);
  ms->load.diffusion = ms->diffusion;
  ms->load.block_diffusion = m.model->config().is_block_diffusion();
  ms->load.max_batch = options_.max_batch;
  std::lock_guard<std::mutex> lock(mu_);
  models_.push_back(std::move(ms));
  return models_.size() - 1;
}

size_t Scheduler::num_models() const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_.size();
}

const EngineModel& Scheduler::model(size_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_.at(index)->m;
}

EngineLoad Scheduler::Load(size_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_.at(index)->load;
}

StatusOr<BuiltDecoder> Scheduler::Build(size_t index, const GenerationRequest& req) const {
  const EngineModel* em = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= models_.size()) return OutOfRangeError("unknown model index");
    em = &models_[index]->m;
  }
  // A served request returns at least one token (an AR n_predict of 0 or -1 is the CLI's).
  if (req.max_tokens < 1) return InvalidArgumentError("max_tokens must be at least 1");
  const SpecialTokens& sp = em->tokenizer->special();
  const DecoderModel dm{&em->model->config(), {sp.mask, sp.eos, sp.eot, sp.pad}, em->name};
  return MakeDecoder(dm, req.prompt, req);
}

StatusOr<std::shared_ptr<RequestStream>> Scheduler::Submit(size_t index, GenerationRequest req,
                                                           std::unique_ptr<Decoder> decoder) {
  if (decoder == nullptr) {
    UNMASK_ASSIGN_OR_RETURN(BuiltDecoder built, Build(index, req));
    decoder = std::move(built.decoder);
  }
  auto stream = std::make_shared<RequestStream>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) return FailedPreconditionError("the server is shutting down");
    if (index >= models_.size()) return OutOfRangeError("unknown model index");
    ModelState& ms = *models_[index];
    // A request that will run at once (a free place in its model's batch) never counts against the
    // queue; only those that must wait do.
    const bool runs_now =
        ms.load.running + static_cast<int64_t>(ms.waiting.size()) < options_.max_batch;
    if (!runs_now && total_waiting_ >= options_.max_queue) {
      return ResourceExhaustedError("the queue is full (" + std::to_string(options_.max_queue) +
                                    " requests waiting)");
    }
    ms.waiting.push_back(Pending{std::move(req), std::move(decoder), stream});
    ++ms.load.waiting;
    ++total_waiting_;
    if (metrics_ != nullptr) metrics_->Add("requests_admitted_total", {ms.m.name, ms.engine()});
  }
  cv_.notify_all();
  return stream;
}

void Scheduler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || shutdown_) return;
  thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Nothing runs any more: end whatever is left.
  for (auto& ms : models_) {
    for (auto& a : ms->running) Finish(*ms, *a, FinishReason::kAbort);
    ms->running.clear();
    std::deque<Pending> waiting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      waiting.swap(ms->waiting);
      total_waiting_ -= static_cast<int64_t>(waiting.size());
      ms->load.waiting = 0;
    }
    for (Pending& p : waiting) FinishPending(*ms, p, FinishReason::kAbort);
  }
}

void Scheduler::Loop() {
  for (;;) {
    std::vector<ModelState*> models;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto has_work = [&] {
        for (auto& ms : models_) {
          if (!ms->waiting.empty() || !ms->running.empty()) return true;
        }
        return false;
      };
      // Waiting requests may expire or be cancelled while nothing runs: wake up now and then.
      cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return shutdown_ || has_work(); });
      if (shutdown_) return;
      for (auto& ms : models_) models.push_back(ms.get());
    }
    for (ModelState* ms : models) {
      Admit(*ms);
      if (DropStopped(*ms)) Step(*ms);
      UpdateGauges(*ms);
    }
  }
}

void Scheduler::Admit(ModelState& ms) {
  const auto now = SteadyClock::now();
  // Positions the running batch feeds next (an estimate: the last plans).
  int64_t budget_used = 0;
  for (auto& a : ms.running) budget_used += a->decoder->step_positions();
  // Requests anywhere in the queue whose client left or whose deadline passed leave it now (they
  // would otherwise hold queue places until they reach the front).
  std::vector<Pending> dead;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = ms.waiting.begin(); it != ms.waiting.end();) {
      if (it->stream->cancelled() || now >= it->req.deadline) {
        dead.push_back(std::move(*it));
        it = ms.waiting.erase(it);
        --ms.load.waiting;
        --total_waiting_;
      } else {
        ++it;
      }
    }
  }
  for (Pending& p : dead) {
    FinishPending(ms, p, p.stream->cancelled() ? FinishReason::kAbort : FinishReason::kDeadline);
  }
  for (;;) {
    Pending p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ms.waiting.empty()) return;
      Pending& front = ms.waiting.front();
      if (static_cast<int64_t>(ms.running.size()) >= options_.max_batch) return;
      const int64_t need = front.decoder->kind() == DecoderKind::kAr
                               ? static_cast<int64_t>(front.req.prompt.size())
                               : front.decoder->step_positions();
      if (!ms.running.empty() && budget_used + need > options_.max_batched_tokens) return;
      budget_used += need;
      p = std::move(front);
      ms.waiting.pop_front();
      --ms.load.waiting;
      --total_waiting_;
    }
    auto a = std::make_unique<Active>();
    a->req = std::move(p.req);
    a->stream = std::move(p.stream);
    a->stats.prompt_tokens = static_cast<int64_t>(a->req.prompt.size());
    a->stats.queue_ms = MsBetween(a->req.arrival, now);
    const auto slot = std::find(ms.slot_used.begin(), ms.slot_used.end(), 0);
    a->slot = static_cast<int32_t>(slot - ms.slot_used.begin());
    const Tokenizer& tok = *ms.m.tokenizer;
    a->decoder = std::move(p.decoder);
    a->decoder->set_kv_seq(a->slot);
    a->text.emplace(tok, a->req.stop, a->req.max_tokens, a->req.ar.ignore_eos,
                    a->req.prompt.empty() ? kNoToken : a->req.prompt.back(),
                    /*verbatim=*/a->req.verbatim_text || static_cast<bool>(a->req.make_constraint));
    *slot = 1;
    if (metrics_ != nullptr) {
      metrics_->Add("prompt_tokens_total", {ms.m.name, ms.engine()}, a->stats.prompt_tokens);
      metrics_->Observe("request_queue_time_seconds", {ms.m.name, ms.engine()},
                        a->stats.queue_ms / 1000);
    }
    ms.running.push_back(std::move(a));
    {
      std::lock_guard<std::mutex> lock(mu_);
      ms.load.running = static_cast<int64_t>(ms.running.size());
    }
  }
}

bool Scheduler::DropStopped(ModelState& ms) {
  const auto now = SteadyClock::now();
  auto it = ms.running.begin();
  while (it != ms.running.end()) {
    Active& a = **it;
    if (a.stream->cancelled() || now >= a.req.deadline) {
      Finish(ms, a, a.stream->cancelled() ? FinishReason::kAbort : FinishReason::kDeadline);
      it = ms.running.erase(it);
    } else {
      ++it;
    }
  }
  return !ms.running.empty();
}

void Scheduler::RecordForward(ModelState& ms, const ForwardStats& fs) {
  if (metrics_ != nullptr) {
    metrics_->Add("forward_passes_total", {ms.m.name, ms.engine()});
    metrics_->Add("forward_positions_total", {ms.m.name, ms.engine()},
                  static_cast<double>(fs.num_positions));
    metrics_->Set("batch_positions", {ms.m.name, ms.engine()},
                  static_cast<double>(fs.num_positions));
    metrics_->Add("forward_flops_total", {ms.m.name, ms.engine()}, fs.flops);
    metrics_->Add("forward_bytes_total", {ms.m.name, ms.engine()}, fs.bytes());
    metrics_->Set("forward_arithmetic_intensity", {ms.m.name, ms.engine()},
                  fs.arithmetic_intensity());
    if (fs.moe_layers > 0) {
      metrics_->Add("moe_layer_forwards_total", {ms.m.name, ms.engine()},
                    static_cast<double>(fs.moe_layers));
      metrics_->Add("moe_experts_hit_total", {ms.m.name, ms.engine()},
                    static_cast<double>(fs.experts_hit));
      metrics_->Add("moe_expert_bytes_total", {ms.m.name, ms.engine()}, fs.expert_bytes);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ms.load.running_positions = fs.num_positions;
  ms.load.totals.forwards += 1;
  ms.load.totals.positions += fs.num_positions;
  ms.load.totals.flops += fs.flops;
  ms.load.totals.bytes += fs.bytes();
  ms.load.totals.forward_ms += fs.ms;
  ms.load.totals.moe_layer_forwards += fs.moe_layers;
  ms.load.totals.experts_hit += fs.experts_hit;
  ms.load.totals.expert_bytes += fs.expert_bytes;
  if (fs.moe_layers > 0) {
    ms.load.totals.experts_uniform +=
        static_cast<double>(fs.moe_layers) *
        ms.m.model->config().ExpectedExpertsHit(static_cast<double>(fs.num_positions));
  }
  // Refine the per-position cost from forwards large enough to measure it (EMA, weight 0.1).
  if (fs.num_positions >= 8) {
    const double per =
        std::max(0.0, (fs.ms - ms.load.cost.overhead_ms) / static_cast<double>(fs.num_positions));
    ms.load.cost.ms_per_position = 0.9 * ms.load.cost.ms_per_position + 0.1 * per;
  } else if (fs.num_positions == 1) {
    ms.load.cost.overhead_ms =
        0.9 * ms.load.cost.overhead_ms + 0.1 * std::max(0.0, fs.ms - ms.load.cost.ms_per_position);
  }
}

void Scheduler::SendText(ModelState& ms, Active& a, std::string text) {
  if (text.empty()) return;
  const auto now = SteadyClock::now();
  if (metrics_ != nullptr) {
    if (!a.sent_text) {
      metrics_->Observe("time_to_first_token_seconds", {ms.m.name, ms.engine()},
                        MsBetween(a.req.arrival, now) / 1000);
    } else {
      metrics_->Observe("inter_token_latency_seconds", {ms.m.name, ms.engine()},
                        MsBetween(a.last_text, now) / 1000);
    }
  }
  if (!a.sent_text) a.stats.ttft_ms = MsBetween(a.req.arrival, now);
  a.sent_text = true;
  a.last_text = now;
  StreamEvent e;
  e.type = StreamEvent::Type::kText;
  e.text = std::move(text);
  a.stream->Push(std::move(e));
}

void Scheduler::Finish(ModelState& ms, Active& a, FinishReason reason, Status status) {
  if (a.stream->finished()) return;
  std::span<const int32_t> tokens;
  if (a.decoder) tokens = a.decoder->committed();
  // Flush text held back for a possible stop string or UTF-8 continuation.
  if (a.text && reason != FinishReason::kError && reason != FinishReason::kAbort) {
    SendText(ms, a, a.text->Update(tokens, true));
  }
  a.stats.completion_tokens = a.text ? a.text->kept_tokens() : 0;
  a.stats.total_ms = MsBetween(a.req.arrival, SteadyClock::now());
  if (metrics_ != nullptr) {
    const std::vector<std::string> me = {ms.m.name, ms.engine()};
    metrics_->Add("requests_total",
                  {ms.m.name, ms.engine(), std::string(FinishReasonName(reason))});
    metrics_->Add("generation_tokens_total", me, static_cast<double>(a.stats.completion_tokens));
    metrics_->Add("request_nfe_total", me, static_cast<double>(a.stats.nfe));
    metrics_->Observe("e2e_request_latency_seconds", me, a.stats.total_ms / 1000);
    if (a.stats.nfe > 0) {
      metrics_->Observe("request_tokens_per_forward", me, a.stats.tokens_per_forward());
    }
  }
  if (a.stats.nfe > 0 && (reason == FinishReason::kStop || reason == FinishReason::kLength)) {
    std::lock_guard<std::mutex> lock(mu_);
    const double service = a.stats.total_ms - a.stats.queue_ms;
    ms.load.mean_service_ms =
        ms.load.mean_service_ms > 0 ? 0.8 * ms.load.mean_service_ms + 0.2 * service : service;
    if (ms.diffusion) {
      ms.tpf_sum += a.stats.tokens_per_forward();
      ++ms.tpf_count;
      ms.load.diffusion_tokens_per_forward = ms.tpf_sum / static_cast<double>(ms.tpf_count);
      ms.load.tokens_per_forward_requests = ms.tpf_count;
    }
  }
  if (a.slot >= 0 && a.slot < static_cast<int32_t>(ms.slot_used.size())) {
    ms.kv->Clear(a.slot);
    ms.slot_used[static_cast<size_t>(a.slot)] = 0;
  }
  StreamEvent e;
  e.type = StreamEvent::Type::kDone;
  e.finish = reason;
  e.stats = a.stats;
  const auto kept = std::min(tokens.size(), static_cast<size_t>(a.stats.completion_tokens));
  e.output_ids.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(kept));
  if (a.decoder) {
    const auto lp = a.decoder->logprobs();
    e.logprobs.assign(lp.begin(),
                      lp.begin() + static_cast<std::ptrdiff_t>(std::min(lp.size(), kept)));
  }
  e.status = std::move(status);
  a.stream->Push(std::move(e));
}

void Scheduler::FinishPending(ModelState& ms, Pending& p, FinishReason reason) {
  StreamEvent e;
  e.type = StreamEvent::Type::kDone;
  e.finish = reason;
  e.stats.prompt_tokens = static_cast<int64_t>(p.req.prompt.size());
  e.stats.queue_ms = e.stats.total_ms = MsBetween(p.req.arrival, SteadyClock::now());
  if (metrics_ != nullptr) {
    metrics_->Add("requests_total",
                  {ms.m.name, ms.engine(), std::string(FinishReasonName(reason))});
  }
  p.stream->Push(std::move(e));
}

void Scheduler::UpdateGauges(ModelState& ms) {
  int64_t waiting = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ms.load.running = static_cast<int64_t>(ms.running.size());
    waiting = ms.load.waiting;
  }
  if (metrics_ == nullptr) return;
  metrics_->Set("num_requests_waiting", {ms.m.name, ms.engine()}, static_cast<double>(waiting));
  metrics_->Set("num_requests_running", {ms.m.name, ms.engine()},
                static_cast<double>(ms.running.size()));
  if (ms.running.empty()) metrics_->Set("batch_positions", {ms.m.name, ms.engine()}, 0);
}

}  // namespace unmask
