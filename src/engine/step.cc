#include "engine/step.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/clock.h"

namespace unmask {

Status StepBatch(const Model& model, std::span<StepSlot> slots, KvCache* kv, StepBuffers& buffers,
                 StepStats* stats) {
  StepStats local;
  StepStats& st = stats != nullptr ? *stats : local;
  st = StepStats{};
  const int64_t vocab = model.config().vocab_size;
  BatchPlan& batch = buffers.batch;
  batch.sequences.clear();
  buffers.rows.clear();
  buffers.sequences.clear();
  int64_t total_rows = 0;
  const auto plan_start = std::chrono::steady_clock::now();
  for (StepSlot& s : slots) {
    s.stepped = false;
    s.positions = 0;
    if (s.decoder == nullptr) return InvalidArgumentError("StepBatch: null decoder");
    if (!s.status.ok() || s.decoder->Done()) continue;
    auto plan = s.decoder->Plan();
    if (!plan.ok()) {
      s.status = plan.status().WithContext("plan at step " + std::to_string(s.decoder->nfe()));
      continue;
    }
    s.stepped = true;
    const BatchPlan& p = **plan;
    for (const SequenceInput& seq : p.sequences) {
      s.positions += static_cast<int64_t>(seq.tokens.size());
    }
    buffers.rows.push_back(p.num_logit_rows());
    buffers.sequences.push_back(static_cast<int64_t>(p.sequences.size()));
    total_rows += p.num_logit_rows();
    batch.sequences.insert(batch.sequences.end(), p.sequences.begin(), p.sequences.end());
  }
  st.plan_ms = MsSince(plan_start);
  if (buffers.rows.empty()) return Status::Ok();
  Tensor& logits = buffers.logits;
  if (logits.shape().rank() != 2 || logits.shape()[0] < total_rows || logits.shape()[1] != vocab) {
    logits = Tensor(DType::kF32, {std::max<int64_t>(total_rows, 8), vocab});
  }
  const Status fs =
      model.Forward(batch, kv, buffers.ws,
                    TensorView{logits.data(), DType::kF32, Shape{total_rows, vocab}}, &st.forward);
  if (!fs.ok()) {
    for (StepSlot& s : slots) s.stepped = false;
    int64_t step = 0;
    for (const StepSlot& s : slots) step = std::max(step, s.decoder->nfe());
    return fs.WithContext("forward at step " + std::to_string(step));
  }
  const auto decode_start = std::chrono::steady_clock::now();
  int64_t row = 0;
  int64_t position = 0;  // first fed position of the slot in the batch
  size_t k = 0, seq = 0;
  for (StepSlot& s : slots) {
    if (!s.stepped) continue;
    const int64_t n = buffers.rows[k];
    const TensorView mine{logits.as<float>() + row * vocab, DType::kF32, Shape{n, vocab}};
    row += n;
    bool all_features = false;
    int64_t fed = 0;
    for (int64_t i = 0; i < buffers.sequences[k]; ++i) {
      const SequenceInput& in = batch.sequences[seq + static_cast<size_t>(i)];
      all_features = all_features || in.all_features;
      fed += static_cast<int64_t>(in.tokens.size());
    }
    seq += static_cast<size_t>(buffers.sequences[k]);
    ++k;
    if (s.decoder->wants_features()) {
      // The final hidden states of this slot's logit rows, or of every position it fed when it
      // asked for them all (Model::Forward leaves them in the workspace; a model that does not
      // gives the drafter nothing and it proposes nothing).
      const Tensor& h = all_features ? buffers.ws.all_features : buffers.ws.last_normed;
      const int64_t first = all_features ? position : row - n;
      const int64_t count = all_features ? fed : n;
      if (h.shape().rank() == 2 && h.shape()[0] >= first + count &&
          h.shape()[1] == model.config().hidden_size) {
        const int64_t width = h.shape()[1];
        s.decoder->SetFeatures(
            TensorView{h.as<float>() + first * width, DType::kF32, Shape{count, width}});
      }
    }
    position += fed;
    const int64_t step = s.decoder->nfe();
    const Status us = s.decoder->Update(mine, &s.result);
    if (!us.ok()) {
      s.status = us.WithContext("decode at step " + std::to_string(step));
      s.stepped = false;
      continue;
    }
    ++st.stepped;
  }
  st.decode_ms = MsSince(decode_start);
  return Status::Ok();
}

}  // namespace unmask
