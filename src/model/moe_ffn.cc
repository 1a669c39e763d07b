#include "model/moe_ffn.h"

#include <algorithm>
#include <string>

#include "ops/activation.h"

namespace unmask {
namespace {

TensorView RowsOf(const Tensor& t, int64_t begin, int64_t n, int64_t cols) {
  return TensorView{t.as<float>() + begin * cols, DType::kF32, Shape{n, cols}};
}

}  // namespace

Status MoeFfn(const TensorView& x, const MoeFfnWeights& w, const MoeRouting& r, Workspace& ws,
              TensorView out, MoeFfnCounters* counters) {
  const int64_t n = x.shape[0], d = x.shape[1], k = r.top_k, e_count = r.num_experts;
  if (n == 0) return Status::Ok();
  const int64_t slots = n * k;
  if (ws.moe_x.shape().num_elements() < slots * d ||
      ws.moe_logits.shape().num_elements() < n * e_count) {
    return InvalidArgumentError("MoeFfn: the workspace holds fewer than " + std::to_string(n) +
                                " rows (Workspace::Reserve)");
  }
  const TensorView logits = RowsOf(ws.moe_logits, 0, n, e_count);
  UNMASK_RETURN_IF_ERROR(Linear(x, w.router, logits));
  const std::span<int32_t> ids(ws.moe_ids.data(), static_cast<size_t>(slots));
  const std::span<float> weights(ws.moe_weights.data(), static_cast<size_t>(slots));
  UNMASK_RETURN_IF_ERROR(RouteExperts(logits, w.selection_bias, r, ids, weights));
  MoeDispatch& dispatch = ws.moe_dispatch;
  UNMASK_RETURN_IF_ERROR(DispatchExperts(ids, e_count, &dispatch));

  // Gather: row i of moe_x is the input of slot order[i].
  const float* xs = x.as<float>();
  float* gathered = ws.moe_x.as<float>();
  for (int64_t i = 0; i < slots; ++i) {
    const int32_t slot = dispatch.order[static_cast<size_t>(i)];
    ws.moe_slot_row[static_cast<size_t>(slot)] = static_cast<int32_t>(i);
    std::copy_n(xs + (slot / k) * d, d, gathered + i * d);
  }
  const int64_t fe = w.down.empty() ? 0 : w.down[0].in_features();
  int64_t hit = 0;
  for (int64_t e = 0; e < e_count; ++e) {
    const int64_t begin = dispatch.offsets[static_cast<size_t>(e)];
    const int64_t rows = dispatch.offsets[static_cast<size_t>(e) + 1] - begin;
    if (rows == 0) continue;
    ++hit;
    const TensorView gu = RowsOf(ws.moe_gate_up, begin, rows, 2 * fe);
    const TensorView act = RowsOf(ws.moe_act, begin, rows, fe);
    UNMASK_RETURN_IF_ERROR(Linear(RowsOf(ws.moe_x, begin, rows, d), w.gate_up[e], gu));
    UNMASK_RETURN_IF_ERROR(SwiGlu(gu, act));
    UNMASK_RETURN_IF_ERROR(Linear(act, w.down[e], RowsOf(ws.moe_y, begin, rows, d)));
  }

  // out[t] = sum_j weight[t, j] * y[slot (t, j)], in slot order.
  const float* y = ws.moe_y.as<float>();
  float* o = out.as<float>();
  for (int64_t t = 0; t < n; ++t) {
    float* row = o + t * d;
    std::fill_n(row, d, 0.0f);
    for (int64_t j = 0; j < k; ++j) {
      const float wt = weights[static_cast<size_t>(t * k + j)];
      const float* src = y + static_cast<int64_t>(ws.moe_slot_row[t * k + j]) * d;
      for (int64_t c = 0; c < d; ++c) row[c] += wt * src[c];
    }
  }
  if (w.has_shared) {
    const int64_t fs = w.shared_down.in_features();
    const TensorView gu = RowsOf(ws.shared_gate_up, 0, n, 2 * fs);
    const TensorView act = RowsOf(ws.shared_act, 0, n, fs);
    UNMASK_RETURN_IF_ERROR(Linear(x, w.shared_gate_up, gu));
    UNMASK_RETURN_IF_ERROR(SwiGlu(gu, act));
    // Reuse moe_y's first n rows (the routed outputs are summed already).
    const TensorView shared = RowsOf(ws.moe_y, 0, n, d);
    UNMASK_RETURN_IF_ERROR(Linear(act, w.shared_down, shared));
    UNMASK_RETURN_IF_ERROR(AddInPlace(out, shared));
  }
  if (counters != nullptr) {
    counters->experts_hit = hit;
    counters->expert_rows = slots;
  }
  return Status::Ok();
}

}  // namespace unmask
