#include "model/eagle_head.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "model/draft_file.h"
#include "model/gguf_tensors.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/norm.h"

namespace unmask {
namespace {

TensorView View(std::vector<float>& v, int64_t rows, int64_t cols) {
  return TensorView{v.data(), DType::kF32, Shape{rows, cols}};
}
TensorView Vec(const std::vector<float>& v) {
  return TensorView{const_cast<float*>(v.data()), DType::kF32,
                    Shape{static_cast<int64_t>(v.size())}};
}

}  // namespace

StatusOr<std::unique_ptr<EagleHead>> EagleHead::Load(const std::string& path,
                                                     const ModelConfig& base) {
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> file, gguf::GgufFile::Open(path));
  return FromFile(std::move(file), base);
}

StatusOr<std::unique_ptr<EagleHead>> EagleHead::FromFile(std::unique_ptr<gguf::GgufFile> file,
                                                         const ModelConfig& base) {
  if (file == nullptr) return InvalidArgumentError("EAGLE draft layer: no file");
  const gguf::GgufFile& f = *file;
  auto arch = f.GetString("general.architecture");
  if (!arch.ok()) return arch.status();  // (names the file)
  if (*arch != "eagle") {
    return InvalidArgumentError(f.path() + ": general.architecture is '" + *arch +
                                "', expected 'eagle' (an EAGLE draft-layer file)");
  }
  if (base.attention != AttentionKind::kCausal) {
    return UnimplementedError(f.path() + ": an EAGLE draft layer drafts for autoregressive " +
                              "(causal) models only");
  }
  auto e = std::unique_ptr<EagleHead>(new EagleHead());
  e->path_ = f.path();
  UNMASK_ASSIGN_OR_RETURN(const int64_t hidden,
                          GetBoundedInt(f, "eagle.embedding_length", 1, 1 << 20));
  UNMASK_ASSIGN_OR_RETURN(const int64_t vocab, GetBoundedInt(f, "eagle.vocab_size", 1, 1 << 30));
  UNMASK_ASSIGN_OR_RETURN(const int64_t ffn,
                          GetBoundedInt(f, "eagle.feed_forward_length", 1, 1 << 20));
  UNMASK_ASSIGN_OR_RETURN(const int64_t heads,
                          GetBoundedInt(f, "eagle.attention.head_count", 1, 1 << 12));
  UNMASK_ASSIGN_OR_RETURN(const int64_t kv_heads,
                          GetBoundedInt(f, "eagle.attention.head_count_kv", 1, heads));
  if (hidden != base.hidden_size) {
    return InvalidArgumentError(f.path() + ": eagle.embedding_length = " + std::to_string(hidden) +
                                " but the base model's hidden size is " +
                                std::to_string(base.hidden_size) +
                                " (a draft layer of another model?)");
  }
  if (vocab != base.vocab_size) {
    return InvalidArgumentError(f.path() + ": eagle.vocab_size = " + std::to_string(vocab) +
                                " but the base model's vocabulary has " +
                                std::to_string(base.vocab_size) +
                                " tokens (a draft layer of another model?)");
  }
  if (hidden % heads != 0 || heads % kv_heads != 0) {
    return InvalidArgumentError(f.path() +
                                ": eagle.attention.head_count = " + std::to_string(heads) +
                                " must divide the hidden size " + std::to_string(hidden) +
                                " and be a multiple of head_count_kv " + std::to_string(kv_heads));
  }
  const int64_t head_dim = hidden / heads;
  const int64_t rope_dim = base.rope_dim > 0 ? base.rope_dim : head_dim;
  if (rope_dim > head_dim || rope_dim % 2 != 0) {
    return InvalidArgumentError(
        f.path() + ": the base model's RoPE dimension " + std::to_string(rope_dim) +
        " does not fit the draft layer's head_dim " + std::to_string(head_dim) +
        " (RoPE needs an even dimension of at most head_dim)");
  }
  UNMASK_ASSIGN_OR_RETURN(e->draft_ids_, ReadDraftVocab(f, "eagle.draft_vocab", vocab));
  const int64_t n_draft = static_cast<int64_t>(e->draft_ids_.size());
  e->hidden_ = hidden;
  e->heads_ = heads;
  e->kv_heads_ = kv_heads;
  e->head_dim_ = head_dim;
  e->ffn_ = ffn;
  e->context_ = base.context_length;
  e->rms_eps_ = base.rms_eps;
  e->rope_base_ = base.rope_base;
  e->rope_dim_ = rope_dim;
  e->rope_layout_ = base.rope_layout;
  size_t bytes = 0;
  auto linear = [&](const std::string& name, int64_t rows, int64_t cols,
                    LinearWeight* out) -> Status {
    UNMASK_ASSIGN_OR_RETURN(
        *out, GetLinear(f, name, rows, cols, WeightMode::kOnTheFly, ComputeType::kF32));
    const gguf::TensorInfo* t = f.FindTensor(name);
    bytes += t == nullptr ? 0 : static_cast<size_t>(t->num_bytes);
    return Status::Ok();
  };
  const int64_t q = heads * head_dim, kv = kv_heads * head_dim;
  UNMASK_RETURN_IF_ERROR(linear("eagle.fc.weight", hidden, 2 * hidden, &e->fc_));
  UNMASK_ASSIGN_OR_RETURN(e->fc_bias_, GetBias(f, "eagle.fc.bias", hidden));
  if (f.FindTensor("eagle.attn_norm.weight") != nullptr) {
    UNMASK_ASSIGN_OR_RETURN(e->attn_norm_, GetVector(f, "eagle.attn_norm.weight", hidden));
  }
  UNMASK_RETURN_IF_ERROR(linear("eagle.attn_q.weight", q, hidden, &e->wq_));
  UNMASK_RETURN_IF_ERROR(linear("eagle.attn_k.weight", kv, hidden, &e->wk_));
  UNMASK_RETURN_IF_ERROR(linear("eagle.attn_v.weight", kv, hidden, &e->wv_));
  UNMASK_RETURN_IF_ERROR(linear("eagle.attn_output.weight", hidden, q, &e->wo_));
  UNMASK_ASSIGN_OR_RETURN(e->ffn_norm_, GetVector(f, "eagle.ffn_norm.weight", hidden));
  {
    UNMASK_ASSIGN_OR_RETURN(TensorView gate, GetTensor(f, "eagle.ffn_gate.weight", {ffn, hidden}));
    UNMASK_ASSIGN_OR_RETURN(TensorView up, GetTensor(f, "eagle.ffn_up.weight", {ffn, hidden}));
    const TensorView parts[2] = {gate, up};
    auto gate_up = LinearWeight::Prepare(parts, WeightMode::kOnTheFly, ComputeType::kF32);
    if (!gate_up.ok()) {
      return gate_up.status().WithContext(f.path() + ": eagle.ffn_gate/eagle.ffn_up");
    }
    e->gate_up_ = std::move(gate_up).value();
    bytes += static_cast<size_t>(f.FindTensor("eagle.ffn_gate.weight")->num_bytes +
                                 f.FindTensor("eagle.ffn_up.weight")->num_bytes);
  }
  UNMASK_RETURN_IF_ERROR(linear("eagle.ffn_down.weight", hidden, ffn, &e->down_));
  UNMASK_RETURN_IF_ERROR(linear("eagle.output.weight", n_draft, hidden, &e->output_));
  e->weight_bytes_ = bytes;
  e->file_ = std::move(file);
  return e;
}

double EagleHead::flops_per_row() const {
  const double d = static_cast<double>(hidden_), q = static_cast<double>(heads_ * head_dim_),
               kv = static_cast<double>(kv_heads_ * head_dim_), f = static_cast<double>(ffn_);
  const double n_draft = static_cast<double>(draft_ids_.size());
  return 2.0 * (2 * d * d + 2 * d * q + 2 * d * kv + 3 * d * f + n_draft * d);
}

StatusOr<KvCache> EagleHead::MakeKvCache(int64_t max_positions) const {
  return KvCache::Create(KvCacheConfig{1, kv_heads_ * head_dim_, max_positions, 1});
}

Status EagleHead::Forward(std::span<const float> embed, std::span<const float> features,
                          std::span<const int32_t> positions, std::span<const int32_t> tree_parents,
                          int64_t prefix, KvCache& kv, EagleWorkspace& ws) const {
  const auto n = static_cast<int64_t>(positions.size());
  const int64_t d = hidden_;
  if (n < 1 || static_cast<int64_t>(embed.size()) != n * d ||
      static_cast<int64_t>(features.size()) != n * d) {
    return InvalidArgumentError("EAGLE draft layer: " + std::to_string(n) + " rows need " +
                                std::to_string(n * d) + " embedding and feature values, got " +
                                std::to_string(embed.size()) + " and " +
                                std::to_string(features.size()));
  }
  const int64_t tree_rows = tree_parents.empty() ? n : static_cast<int64_t>(tree_parents.size());
  if (tree_rows < n) {
    return InvalidArgumentError("EAGLE draft layer: a tree of " + std::to_string(tree_rows) +
                                " rows cannot hold " + std::to_string(n) + " new rows");
  }
  for (int32_t p : positions) {
    if (p < 0 || p >= context_) {
      return InvalidArgumentError("EAGLE draft layer: position " + std::to_string(p) +
                                  " outside the context [0, " + std::to_string(context_) + ")");
    }
  }
  const int64_t kv_dim = kv_heads_ * head_dim_;
  if (kv.config().num_layers != 1 || kv.config().kv_dim != kv_dim) {
    return InvalidArgumentError("EAGLE draft layer: a K/V cache of another shape");
  }
  const int64_t first = prefix + tree_rows - n;  // cache row of the first new row
  UNMASK_ASSIGN_OR_RETURN(const KvWrite write, kv.Plan(0, first, n));
  if (ws.rope.max_positions() < context_ || ws.rope.rope_dim() != rope_dim_) {
    UNMASK_ASSIGN_OR_RETURN(ws.rope, RopeTable::Create(rope_dim_, rope_base_, context_));
  }
  const int64_t q_dim = heads_ * head_dim_;
  const int64_t n_draft = static_cast<int64_t>(draft_ids_.size());
  auto grow = [n](std::vector<float>& v, int64_t cols) {
    if (v.size() < static_cast<size_t>(n * cols)) v.resize(static_cast<size_t>(n * cols));
  };
  grow(ws.in, 2 * d);
  grow(ws.x, d);
  grow(ws.normed, d);
  grow(ws.q, q_dim);
  grow(ws.k, kv_dim);
  grow(ws.v, kv_dim);
  grow(ws.attn, q_dim);
  grow(ws.proj, d);
  grow(ws.gate_up, 2 * ffn_);
  grow(ws.ffn, ffn_);
  grow(ws.logits, n_draft);
  for (int64_t i = 0; i < n; ++i) {  // [embed ; feature], EAGLE's order
    std::copy_n(embed.data() + i * d, d, ws.in.data() + i * 2 * d);
    std::copy_n(features.data() + i * d, d, ws.in.data() + i * 2 * d + d);
  }
  UNMASK_RETURN_IF_ERROR(Linear(View(ws.in, n, 2 * d), fc_, View(ws.x, n, d)));
  if (!fc_bias_.empty()) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < d; ++j) ws.x[static_cast<size_t>(i * d + j)] += fc_bias_[j];
    }
  }
  // Attention input: the layer's RMSNorm when it has one (EAGLE-1's layer has none).
  if (attn_norm_.empty()) {
    std::copy_n(ws.x.data(), n * d, ws.normed.data());
  } else {
    UNMASK_RETURN_IF_ERROR(
        RmsNorm(View(ws.x, n, d), Vec(attn_norm_), rms_eps_, View(ws.normed, n, d)));
  }
  UNMASK_RETURN_IF_ERROR(Linear(View(ws.normed, n, d), wq_, View(ws.q, n, q_dim)));
  UNMASK_RETURN_IF_ERROR(Linear(View(ws.normed, n, d), wk_, View(ws.k, n, kv_dim)));
  UNMASK_RETURN_IF_ERROR(Linear(View(ws.normed, n, d), wv_, View(ws.v, n, kv_dim)));
  const TensorView qh{ws.q.data(), DType::kF32, Shape{n, heads_, head_dim_}};
  const TensorView kh{ws.k.data(), DType::kF32, Shape{n, kv_heads_, head_dim_}};
  UNMASK_RETURN_IF_ERROR(ApplyRope(qh, positions, ws.rope, rope_layout_));
  UNMASK_RETURN_IF_ERROR(ApplyRope(kh, positions, ws.rope, rope_layout_));
  kv.Apply(write);
  std::copy_n(ws.k.data(), n * kv_dim, kv.Keys(0, 0) + first * kv_dim);
  std::copy_n(ws.v.data(), n * kv_dim, kv.Values(0, 0) + first * kv_dim);
  const int64_t keys = first + n;
  AttentionParams ap;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  if (tree_parents.empty()) {
    ap.mask = AttentionMask::kCausal;
    ap.q_pos0 = first;
  } else {
    ap.mask = AttentionMask::kTree;
    ap.q_pos0 = prefix;
    ap.tree_parents = tree_parents;
    ap.tree_q0 = tree_rows - n;
  }
  UNMASK_RETURN_IF_ERROR(
      Attention(qh, TensorView{kv.Keys(0, 0), DType::kF32, Shape{keys, kv_heads_, head_dim_}},
                TensorView{kv.Values(0, 0), DType::kF32, Shape{keys, kv_heads_, head_dim_}}, ap,
                TensorView{ws.attn.data(), DType::kF32, Shape{n, heads_, head_dim_}}));
  UNMASK_RETURN_IF_ERROR(Linear(View(ws.attn, n, q_dim), wo_, View(ws.proj, n, d)));
  UNMASK_RETURN_IF_ERROR(AddInPlace(View(ws.x, n, d), View(ws.proj, n, d)));
  UNMASK_RETURN_IF_ERROR(
      RmsNorm(View(ws.x, n, d), Vec(ffn_norm_), rms_eps_, View(ws.normed, n, d)));
  UNMASK_RETURN_IF_ERROR(Linear(View(ws.normed, n, d), gate_up_, View(ws.gate_up, n, 2 * ffn_)));
  UNMASK_RETURN_IF_ERROR(SwiGlu(View(ws.gate_up, n, 2 * ffn_), View(ws.ffn, n, ffn_)));
  UNMASK_RETURN_IF_ERROR(Linear(View(ws.ffn, n, ffn_), down_, View(ws.proj, n, d)));
  UNMASK_RETURN_IF_ERROR(AddInPlace(View(ws.x, n, d), View(ws.proj, n, d)));
  return Linear(View(ws.x, n, d), output_, View(ws.logits, n, n_draft));
}

std::string EagleHeadPathFor(const std::string& model_path) {
  return DraftFilePathFor(model_path, "eagle");
}

}  // namespace unmask
