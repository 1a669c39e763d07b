#include "engine/generate_ar.h"

#include <chrono>
#include <string>

#include "core/tensor.h"

namespace unmask {
namespace {
double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

StatusOr<ArGenerationStats> RunAr(const Model& model, KvCache& kv, ArDecoder& decoder,
                                  Workspace& ws, const Drafter* drafter,
                                  const ArStepCallback& on_step) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t vocab = model.config().vocab_size;
  ArGenerationStats stats;
  stats.prompt_tokens = decoder.prompt_length();
  Tensor logits;
  ArStepResult result;
  while (!decoder.Done()) {
    const int64_t step = decoder.nfe();
    auto plan = decoder.Plan();
    if (!plan.ok()) return plan.status().WithContext("draft at step " + std::to_string(step));
    const int64_t rows = (*plan)->num_logit_rows();
    if (logits.shape().rank() != 2 || logits.shape()[0] < rows) {
      logits = Tensor(DType::kF32, {std::max<int64_t>(rows, 8), vocab});
    }
    const TensorView out{logits.data(), DType::kF32, Shape{rows, vocab}};
    ForwardStats fs;
    Status st = model.Forward(**plan, &kv, ws, out, &fs);
    if (!st.ok()) return st.WithContext("forward at step " + std::to_string(step));
    stats.forward_ms += fs.ms;
    stats.flops += fs.flops;
    stats.bytes += fs.bytes();
    stats.forward_positions += fs.num_positions;
    st = decoder.Update(out, &result);
    if (!st.ok()) return st.WithContext("decode at step " + std::to_string(step));
    if (step == 0) {
      stats.prefill_ms = stats.ttft_ms = MsSince(start);
      stats.first_step_tokens = static_cast<int64_t>(result.tokens.size());
    }
    if (on_step && !on_step(decoder, result)) decoder.Stop();
  }
  stats.generated_tokens = static_cast<int64_t>(decoder.generated().size());
  stats.nfe = decoder.nfe();
  stats.speculative = decoder.speculative();
  if (drafter != nullptr) stats.drafter = drafter->stats();
  stats.total_ms = MsSince(start);
  return stats;
}

}  // namespace unmask
