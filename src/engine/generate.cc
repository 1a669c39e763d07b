#include "engine/generate.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace unmask {
namespace {
double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

StatusOr<GenerationStats> RunDiffusion(const Model& model, DiffusionDecoder& decoder, Workspace& ws,
                                       const DiffusionStepCallback& on_step) {
  DiffusionDecoder* const one[1] = {&decoder};
  return RunDiffusionBatch(model, one, ws, on_step);
}

StatusOr<GenerationStats> RunDiffusionBatch(const Model& model,
                                            std::span<DiffusionDecoder* const> decoders,
                                            Workspace& ws, const DiffusionStepCallback& on_step) {
  const auto start = std::chrono::steady_clock::now();
  if (decoders.empty()) return InvalidArgumentError("RunDiffusionBatch: no decoders");
  bool needs_kv = false;
  for (size_t i = 0; i < decoders.size(); ++i) {
    if (decoders[i] == nullptr) return InvalidArgumentError("RunDiffusionBatch: null decoder");
    decoders[i]->set_kv_seq(static_cast<int32_t>(i));
    needs_kv |= decoders[i]->needs_kv_cache();
  }
  std::optional<KvCache> kv;
  if (needs_kv) {
    UNMASK_ASSIGN_OR_RETURN(kv, model.MakeKvCache(static_cast<int64_t>(decoders.size())));
  }
  const int64_t vocab = model.config().vocab_size;
  GenerationStats stats;
  Tensor logits;
  DiffusionStepResult result;
  BatchPlan batch;
  std::vector<DiffusionDecoder*> active;
  std::vector<int64_t> row_begin;  // first logit row of each active decoder
  for (;;) {
    active.clear();
    batch.sequences.clear();
    row_begin.clear();
    int64_t rows = 0;
    for (DiffusionDecoder* d : decoders) {
      if (d->Done()) continue;
      const BatchPlan& plan = d->Plan();
      active.push_back(d);
      row_begin.push_back(rows);
      rows += plan.num_logit_rows();
      batch.sequences.insert(batch.sequences.end(), plan.sequences.begin(), plan.sequences.end());
    }
    if (active.empty()) break;
    if (logits.shape().rank() != 2 || logits.shape()[0] < rows) {
      logits = Tensor(DType::kF32, {std::max<int64_t>(rows, 1), vocab});
    }
    const TensorView out{logits.data(), DType::kF32, Shape{rows, vocab}};
    ForwardStats fs;
    Status st = model.Forward(batch, kv ? &*kv : nullptr, ws, out, &fs);
    if (!st.ok()) return st.WithContext("forward at step " + std::to_string(stats.nfe));
    stats.forward_ms += fs.ms;
    stats.flops += fs.flops;
    stats.bytes += fs.bytes();
    stats.forward_positions += fs.num_positions;
    const auto t = std::chrono::steady_clock::now();
    for (size_t i = 0; i < active.size(); ++i) {
      DiffusionDecoder& d = *active[i];
      const int64_t end = i + 1 < active.size() ? row_begin[i + 1] : rows;
      const TensorView mine{logits.as<float>() + row_begin[i] * vocab, DType::kF32,
                            Shape{end - row_begin[i], vocab}};
      st = d.Update(mine, &result);
      if (!st.ok()) return st.WithContext("decode at step " + std::to_string(d.step()));
      if (on_step) on_step(d, result);
    }
    stats.decode_ms += MsSince(t);
    ++stats.nfe;
  }
  for (DiffusionDecoder* d : decoders) stats.generated_tokens += d->params().gen_length;
  stats.total_ms = MsSince(start);
  return stats;
}

}  // namespace unmask
