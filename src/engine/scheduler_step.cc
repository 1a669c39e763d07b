// The engine steps of the scheduler: one forward for every running request of a model.
#include <algorithm>

#include "engine/scheduler.h"
#include "engine/scheduler_state.h"

namespace unmask {

void Scheduler::StepAr(ModelState& ms) {
  const int64_t vocab = ms.m.model->config().vocab_size;
  ms.batch.sequences.clear();
  std::vector<int64_t> rows;  // logit rows of each running request
  auto it = ms.running.begin();
  while (it != ms.running.end()) {
    auto plan = (*it)->ar->Plan();
    if (!plan.ok()) {
      Finish(ms, **it, FinishReason::kError, plan.status());
      it = ms.running.erase(it);
      continue;
    }
    rows.push_back((*plan)->num_logit_rows());
    const auto& seqs = (*plan)->sequences;
    ms.batch.sequences.insert(ms.batch.sequences.end(), seqs.begin(), seqs.end());
    ++it;
  }
  if (ms.running.empty()) return;
  int64_t total_rows = 0;
  for (int64_t r : rows) total_rows += r;
  if (ms.logits.shape().rank() != 2 || ms.logits.shape()[0] < total_rows) {
    ms.logits = Tensor(DType::kF32, {std::max<int64_t>(total_rows, 8), vocab});
  }
  ForwardStats fs;
  const Status st =
      ms.m.model->Forward(ms.batch, &*ms.kv, ms.ws,
                          TensorView{ms.logits.data(), DType::kF32, Shape{total_rows, vocab}}, &fs);
  if (!st.ok()) {
    for (auto& a : ms.running) Finish(ms, *a, FinishReason::kError, st);
    ms.running.clear();
    return;
  }
  RecordForward(ms, fs);
  int64_t row = 0;
  ArStepResult result;
  for (size_t i = 0; i < ms.running.size(); ++i) {
    Active& a = *ms.running[i];
    const TensorView mine{ms.logits.as<float>() + row * vocab, DType::kF32, Shape{rows[i], vocab}};
    row += rows[i];
    ++a.stats.nfe;
    a.stats.forward_positions += static_cast<int64_t>(ms.batch.sequences[i].tokens.size());
    const Status us = a.ar->Update(mine, &result);
    if (!us.ok()) {
      Finish(ms, a, FinishReason::kError, us);
      continue;
    }
    a.stats.drafted += result.drafted;
    a.stats.accepted += result.accepted;
    if (metrics_ != nullptr && result.drafted > 0) {
      metrics_->Add("spec_decode_num_draft_tokens_total", {ms.m.name, ms.engine()},
                    static_cast<double>(result.drafted));
      metrics_->Add("spec_decode_num_accepted_tokens_total", {ms.m.name, ms.engine()},
                    static_cast<double>(result.accepted));
    }
    SendText(ms, a, a.text->Update(a.ar->generated(), a.ar->Done()));
    if (a.text->complete() && !a.ar->Done()) a.ar->Stop();
    if (a.ar->Done()) {
      FinishReason r = a.text->complete()                 ? a.text->finish()
                       : a.ar->finish() == ArFinish::kEos ? FinishReason::kStop
                                                          : FinishReason::kLength;
      Finish(ms, a, r);
    }
  }
  std::erase_if(ms.running, [](const std::unique_ptr<Active>& a) { return a->stream->finished(); });
}

void Scheduler::StepDiffusion(ModelState& ms) {
  const int64_t vocab = ms.m.model->config().vocab_size;
  ms.batch.sequences.clear();
  std::vector<int64_t> rows, seq_count;
  bool needs_kv = false;
  for (auto& a : ms.running) {
    const BatchPlan& plan = a->diffusion->Plan();
    rows.push_back(plan.num_logit_rows());
    seq_count.push_back(static_cast<int64_t>(plan.sequences.size()));
    ms.batch.sequences.insert(ms.batch.sequences.end(), plan.sequences.begin(),
                              plan.sequences.end());
    needs_kv |= a->diffusion->needs_kv_cache();
  }
  int64_t total_rows = 0;
  for (int64_t r : rows) total_rows += r;
  if (ms.logits.shape().rank() != 2 || ms.logits.shape()[0] < total_rows) {
    ms.logits = Tensor(DType::kF32, {std::max<int64_t>(total_rows, 8), vocab});
  }
  ForwardStats fs;
  const Status st =
      ms.m.model->Forward(ms.batch, needs_kv ? &*ms.kv : nullptr, ms.ws,
                          TensorView{ms.logits.data(), DType::kF32, Shape{total_rows, vocab}}, &fs);
  if (!st.ok()) {
    for (auto& a : ms.running) Finish(ms, *a, FinishReason::kError, st);
    ms.running.clear();
    return;
  }
  RecordForward(ms, fs);
  const auto now = SteadyClock::now();
  int64_t row = 0;
  size_t seq = 0;
  DiffusionStepResult result;
  for (size_t i = 0; i < ms.running.size(); ++i) {
    Active& a = *ms.running[i];
    DiffusionDecoder& d = *a.diffusion;
    const TensorView mine{ms.logits.as<float>() + row * vocab, DType::kF32, Shape{rows[i], vocab}};
    row += rows[i];
    ++a.stats.nfe;
    for (int64_t s = 0; s < seq_count[i]; ++s, ++seq) {
      a.stats.forward_positions += static_cast<int64_t>(ms.batch.sequences[seq].tokens.size());
    }
    const Status us = d.Update(mine, &result);
    if (!us.ok()) {
      Finish(ms, a, FinishReason::kError, us);
      continue;
    }
    if (a.req.stream_canvas) {
      StreamEvent e;
      e.type = StreamEvent::Type::kCanvas;
      e.canvas.assign(d.generated().begin(), d.generated().end());
      e.mask_id = d.token_ids().mask;
      e.step = result.step;
      e.block = result.block;
      e.elapsed_ms = MsBetween(a.req.arrival, now);
      a.stream->Push(std::move(e));
    }
    SendText(ms, a, a.text->Update(CommittedPrefix(d), d.Done()));
    // The output is decided once its prefix holds EOS, a stop string or max_tokens tokens: the
    // rest of the canvas would not be returned, so it is not denoised.
    if (a.text->complete() || d.Done()) {
      Finish(ms, a, a.text->complete() ? a.text->finish() : FinishReason::kLength);
    }
  }
  std::erase_if(ms.running, [](const std::unique_ptr<Active>& a) { return a->stream->finished(); });
}

}  // namespace unmask
