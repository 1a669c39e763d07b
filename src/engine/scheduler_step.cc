// The engine step of the scheduler: one StepBatch (engine/step.h) for every running request of a
// model, then each request's text, canvas and finish events.
#include <algorithm>

#include "engine/scheduler.h"
#include "engine/scheduler_state.h"

namespace unmask {

void Scheduler::Step(ModelState& ms) {
  ms.slots.resize(ms.running.size());
  bool needs_kv = false;
  for (size_t i = 0; i < ms.running.size(); ++i) {
    // Slots are reused across steps (their DecodeStep keeps its buffers); only the decoder and the
    // status change.
    ms.slots[i].decoder = ms.running[i]->decoder.get();
    ms.slots[i].status = Status::Ok();
    needs_kv |= ms.running[i]->decoder->needs_kv_cache();
  }
  StepStats step;
  const Status st =
      StepBatch(*ms.m.model, ms.slots, needs_kv ? &*ms.kv : nullptr, ms.buffers, &step);
  if (!st.ok()) {
    for (auto& a : ms.running) Finish(ms, *a, FinishReason::kError, st);
    ms.running.clear();
    return;
  }
  if (step.stepped > 0) RecordForward(ms, step.forward);
  const auto now = SteadyClock::now();
  for (size_t i = 0; i < ms.running.size(); ++i) {
    Active& a = *ms.running[i];
    const StepSlot& slot = ms.slots[i];
    if (!slot.status.ok()) {
      Finish(ms, a, FinishReason::kError, slot.status);
      continue;
    }
    if (!slot.stepped) continue;
    Decoder& d = *a.decoder;
    const DecodeStep& result = slot.result;
    ++a.stats.nfe;
    a.stats.forward_positions += slot.positions;
    a.stats.drafted += result.drafted;
    a.stats.accepted += result.accepted;
    if (metrics_ != nullptr && result.drafted > 0) {
      metrics_->Add("spec_decode_num_draft_tokens_total", {ms.m.name, ms.engine()},
                    static_cast<double>(result.drafted));
      metrics_->Add("spec_decode_num_accepted_tokens_total", {ms.m.name, ms.engine()},
                    static_cast<double>(result.accepted));
    }
    if (a.req.stream_canvas && d.mask_id() >= 0) {
      StreamEvent e;
      e.type = StreamEvent::Type::kCanvas;
      e.canvas.assign(d.generated().begin(), d.generated().end());
      e.mask_id = d.mask_id();
      e.step = result.step;
      e.block = result.block;
      e.elapsed_ms = MsBetween(a.req.arrival, now);
      a.stream->Push(std::move(e));
    }
    SendText(ms, a, a.text->Update(d.committed(), d.Done()));
    // The output is decided once its text holds EOS, a stop string or max_tokens tokens: the rest
    // (AR: more tokens; diffusion: the rest of the canvas) would not be returned, so it is not
    // computed.
    if (a.text->complete() && !d.Done()) d.Stop();
    if (d.Done()) {
      // kStopped without a complete text: the decoder's grammar constraint ended the output.
      const bool stopped = d.finish() == DecodeFinish::kEos || d.finish() == DecodeFinish::kStopped;
      const FinishReason r = a.text->complete() ? a.text->finish()
                             : stopped          ? FinishReason::kStop
                                                : FinishReason::kLength;
      Finish(ms, a, r);
    }
  }
  std::erase_if(ms.running, [](const std::unique_ptr<Active>& a) { return a->stream->finished(); });
}

}  // namespace unmask
