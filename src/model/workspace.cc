#include <algorithm>

#include "model/model.h"

namespace unmask {

int64_t BatchPlan::num_positions() const {
  int64_t n = 0;
  for (const SequenceInput& s : sequences) n += static_cast<int64_t>(s.tokens.size());
  return n;
}

int64_t BatchPlan::num_logit_rows() const {
  int64_t n = 0;
  for (const SequenceInput& s : sequences) n += static_cast<int64_t>(s.logit_rows.size());
  return n;
}

StatusOr<KvCache> Model::MakeKvCache(int64_t num_sequences) const {
  const ModelConfig& c = config();
  return KvCache::Create(
      KvCacheConfig{c.num_layers, c.num_kv_heads * c.head_dim, c.context_length, num_sequences});
}

void Workspace::Reserve(const ModelConfig& c, int64_t num_positions, int64_t num_logit_rows) {
  if (num_positions > capacity_) {
    const int64_t n = std::max<int64_t>(num_positions, 1);
    hidden = Tensor(DType::kF32, {n, c.hidden_size});
    normed = Tensor(DType::kF32, {n, c.hidden_size});
    q = Tensor(DType::kF32, {n, c.num_heads * c.head_dim});
    k = Tensor(DType::kF32, {n, c.num_kv_heads * c.head_dim});
    v = Tensor(DType::kF32, {n, c.num_kv_heads * c.head_dim});
    attn = Tensor(DType::kF32, {n, c.num_heads * c.head_dim});
    proj = Tensor(DType::kF32, {n, c.hidden_size});
    gate_up = Tensor(DType::kF32, {n, 2 * std::max<int64_t>(c.ffn_size, 1)});
    ffn = Tensor(DType::kF32, {n, std::max<int64_t>(c.ffn_size, 1)});
    if (c.is_moe()) {
      const int64_t slots = n * c.routing.top_k, fe = c.expert_ffn_size;
      moe_logits = Tensor(DType::kF32, {n, c.num_experts});
      moe_x = Tensor(DType::kF32, {slots, c.hidden_size});
      moe_gate_up = Tensor(DType::kF32, {slots, 2 * fe});
      moe_act = Tensor(DType::kF32, {slots, fe});
      moe_y = Tensor(DType::kF32, {slots, c.hidden_size});
      const int64_t fs = std::max<int64_t>(c.shared_expert_ffn_size, 1);
      shared_gate_up = Tensor(DType::kF32, {n, 2 * fs});
      shared_act = Tensor(DType::kF32, {n, fs});
      moe_ids.resize(static_cast<size_t>(slots));
      moe_weights.resize(static_cast<size_t>(slots));
      moe_slot_row.resize(static_cast<size_t>(slots));
    }
    capacity_ = n;
  }
  if (num_logit_rows > logit_capacity_) {
    const int64_t n = std::max<int64_t>(num_logit_rows, 1);
    last_hidden = Tensor(DType::kF32, {n, c.hidden_size});
    last_normed = Tensor(DType::kF32, {n, c.hidden_size});
    logit_capacity_ = n;
  }
}

}  // namespace unmask
