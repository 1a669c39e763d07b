// The mixture-of-experts SwiGLU FFN of one layer (MODELS.md §6.3): route every row, group the
// (row, slot) pairs by expert so that each expert's weights are read once per forward, run the
// experts that got rows (an expert without rows is never touched, as ggml's mul_mat_id skips
// it), then sum each row's slots in slot order (deterministic, independent of the grouping) and
// add the shared expert.
#ifndef UNMASK_MODEL_MOE_FFN_H_
#define UNMASK_MODEL_MOE_FFN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/compute.h"
#include "core/status.h"
#include "core/tensor.h"
#include "format/gguf.h"
#include "model/model.h"
#include "ops/linear.h"
#include "ops/moe_routing.h"

namespace unmask {

struct MoeFfnWeights {
  LinearWeight router;                // [E, hidden], f32 product (router_dtype fp32)
  std::vector<float> selection_bias;  // [E] (LLaDA2 expert_bias, GGUF exp_probs_b) or empty
  std::vector<LinearWeight> gate_up;  // E x [2 * expert_ffn, hidden]: gate rows then up rows
  std::vector<LinearWeight> down;     // E x [hidden, expert_ffn]
  bool has_shared = false;
  LinearWeight shared_gate_up;  // [2 * shared_ffn, hidden]
  LinearWeight shared_down;     // [hidden, shared_ffn]
  double expert_bytes = 0;      // bytes of one expert's three matrices as multiplied
};

// What one MoE FFN call did.
struct MoeFfnCounters {
  int64_t experts_hit = 0;  // experts that got at least one row
  int64_t expert_rows = 0;  // rows x top_k
};

// The MoE FFN of the layer with tensor prefix `prefix` ("blk.N."; moe_ffn_load.cc): router
// ffn_gate_inp [E, hidden] (an f32 product), optional selection bias exp_probs_b.bias [E]
// (finite), stacked experts ffn_{gate,up,down}_exps, and the shared expert ffn_*_shexp when the
// config has one. Errors: a tensor whose expert count, width or hidden size disagrees with the
// config names the tensor and the keys (<arch>.expert_count, expert_feed_forward_length).
StatusOr<std::unique_ptr<MoeFfnWeights>> LoadMoeFfn(const gguf::GgufFile& f, const ModelConfig& c,
                                                    const std::string& prefix, WeightMode mode,
                                                    ComputeType compute);

// out [n, hidden] = MoE(x [n, hidden]) with the routing `r`; the scratch tensors of `ws` must
// hold n rows (Workspace::Reserve with an MoE config). x and out must not overlap.
// Errors: those of RouteExperts (NaN router logits name the row) and Linear.
Status MoeFfn(const TensorView& x, const MoeFfnWeights& w, const MoeRouting& r, Workspace& ws,
              TensorView out, MoeFfnCounters* counters);

}  // namespace unmask

#endif  // UNMASK_MODEL_MOE_FFN_H_
