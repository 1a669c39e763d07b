#include "engine/generate_dream.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace unmask {
namespace {
double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

StatusOr<GenerationStats> RunDream(const Model& model, DreamDecoder& decoder, Workspace& ws,
                                   const DreamStepCallback& on_step) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t vocab = model.config().vocab_size;
  GenerationStats stats;
  Tensor logits;
  DreamStepResult result;
  while (!decoder.Done()) {
    const BatchPlan& plan = decoder.Plan();
    const int64_t rows = plan.num_logit_rows();
    if (logits.shape().rank() != 2 || logits.shape()[0] < rows) {
      logits = Tensor(DType::kF32, {std::max<int64_t>(rows, 1), vocab});
    }
    const TensorView out{logits.data(), DType::kF32, Shape{rows, vocab}};
    ForwardStats fs;
    Status st = model.Forward(plan, ws, out, &fs);
    if (!st.ok()) return st.WithContext("forward at step " + std::to_string(decoder.step()));
    stats.forward_ms += fs.ms;
    stats.flops += fs.flops;
    stats.bytes += fs.bytes();
    stats.forward_positions += fs.num_positions;
    const auto t = std::chrono::steady_clock::now();
    st = decoder.Update(out, &result);
    if (!st.ok()) return st.WithContext("decode at step " + std::to_string(decoder.step()));
    stats.decode_ms += MsSince(t);
    ++stats.nfe;
    if (on_step) on_step(decoder, result);
  }
  stats.generated_tokens = decoder.params().gen_length;
  stats.total_ms = MsSince(start);
  return stats;
}

}  // namespace unmask
