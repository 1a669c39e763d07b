#include "model/transformer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "core/clock.h"
#include "model/gguf_tensors.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/convert.h"
#include "ops/norm.h"

namespace unmask {
namespace {

// Rows [begin, begin + n) of a 2-D tensor as a [n, cols] view.
TensorView Rows(const Tensor& t, int64_t begin, int64_t n) {
  const int64_t cols = t.shape()[1];
  return TensorView{t.as<float>() + begin * cols, DType::kF32, Shape{n, cols}};
}
// The same rows seen as [n, heads, head_dim].
TensorView Heads(const Tensor& t, int64_t begin, int64_t n, int64_t heads) {
  const int64_t cols = t.shape()[1];
  return TensorView{t.as<float>() + begin * cols, DType::kF32, Shape{n, heads, cols / heads}};
}

// y[r, :] += bias for the first n rows of a row-major [rows, bias.size()] f32 array; no-op when
// the bias is empty.
void AddBias(float* p, int64_t n, const std::vector<float>& bias) {
  if (bias.empty()) return;
  const int64_t cols = static_cast<int64_t>(bias.size());
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < cols; ++j) p[r * cols + j] += bias[static_cast<size_t>(j)];
  }
}

// RMSNorm of every head of the first n rows of t ([rows, heads * head_dim]) with weight [head_dim]
// (Qwen3 q_norm / k_norm); no-op when the weight is empty.
Status HeadNorm(const Tensor& t, int64_t n, int64_t heads, const std::vector<float>& weight,
                float eps) {
  if (weight.empty() || n == 0) return Status::Ok();
  const int64_t head_dim = static_cast<int64_t>(weight.size());
  const TensorView rows{t.as<float>(), DType::kF32, Shape{n * heads, head_dim}};
  const TensorView w{const_cast<float*>(weight.data()), DType::kF32, Shape{head_dim}};
  return RmsNorm(rows, w, eps, rows);
}

}  // namespace

StatusOr<std::unique_ptr<TransformerModel>> TransformerModel::Create(
    std::shared_ptr<const gguf::GgufFile> file, ModelConfig config, WeightMode mode,
    ComputeType compute, const std::function<void(int, int)>& progress,
    std::shared_ptr<const Backend> backend) {
  if (backend == nullptr) return InvalidArgumentError("TransformerModel::Create: null backend");
  if (backend->device() != Device::kCpu) {
    return UnimplementedError(file->path() + ": the transformer keeps its weights in host " +
                              "memory and runs on the cpu backend only, not on " +
                              std::string(DeviceName(backend->device())));
  }
  std::unique_ptr<TransformerModel> m(new TransformerModel());
  const gguf::GgufFile& f = *file;
  m->file_ = std::move(file);
  m->backend_ = std::move(backend);
  ModelConfig& c = config;

  const gguf::TensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFoundError(f.path() + ": missing tensor 'token_embd.weight'");
  std::vector<int64_t> embd_dims = embd->dims;  // GGUF order; trailing 1s are not dimensions
  while (embd_dims.size() > 2 && embd_dims.back() == 1) embd_dims.pop_back();
  if (embd_dims.size() != 2) {
    return InvalidArgumentError(f.path() + ": tensor 'token_embd.weight' must be 2-D, has shape " +
                                embd->ShapeString());
  }
  c.vocab_size = embd_dims[1];
  const std::string vocab_key = c.architecture + ".vocab_size";
  if (f.Find(vocab_key)) {
    UNMASK_ASSIGN_OR_RETURN(const int64_t declared, f.GetInt(vocab_key));
    if (declared != c.vocab_size) {
      return InvalidArgumentError(f.path() + ": " + vocab_key + " = " + std::to_string(declared) +
                                  " but token_embd.weight has " + std::to_string(c.vocab_size) +
                                  " rows");
    }
  }
  // A corrupt block_count must not size anything before the tensors are checked.
  const uint64_t needed_tensors = static_cast<uint64_t>(c.num_layers) * 9 + 2;
  if (f.tensors().size() < needed_tensors) {
    return InvalidArgumentError(f.path() + ": " + c.architecture +
                                ".block_count = " + std::to_string(c.num_layers) +
                                " needs at least " + std::to_string(needed_tensors) +
                                " tensors, the file has " + std::to_string(f.tensors().size()));
  }
  c.tied_output = f.FindTensor("output.weight") == nullptr;
  const int64_t d = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  UNMASK_ASSIGN_OR_RETURN(m->token_embd_, GetTensor(f, "token_embd.weight", {c.vocab_size, d}));

  // Progress counts tensors of the file: 9 per layer, the embedding, the final norm and the output.
  int total = c.tied_output ? 2 : 3;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    total += c.is_moe_layer(l) ? 10 + (c.shared_expert_ffn_size > 0 ? 3 : 0) : 9;
  }
  int done = 1;  // token_embd
  auto tick = [&](int n = 1) {
    done += n;
    if (progress) progress(done, total);
  };
  m->layers_.resize(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    TransformerLayer& L = m->layers_[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    UNMASK_ASSIGN_OR_RETURN(L.attn_norm, GetVector(f, p + "attn_norm.weight", d));
    UNMASK_ASSIGN_OR_RETURN(L.ffn_norm, GetVector(f, p + "ffn_norm.weight", d));
    tick(2);
    UNMASK_ASSIGN_OR_RETURN(L.wq, GetLinear(f, p + "attn_q.weight", q, d, mode, compute));
    tick();
    UNMASK_ASSIGN_OR_RETURN(L.wk, GetLinear(f, p + "attn_k.weight", kv, d, mode, compute));
    tick();
    UNMASK_ASSIGN_OR_RETURN(L.wv, GetLinear(f, p + "attn_v.weight", kv, d, mode, compute));
    tick();
    if (f.FindTensor(p + "attn_qkv.weight") != nullptr) {
      return UnimplementedError(f.path() + ": fused tensor '" + p +
                                "attn_qkv.weight' is not supported (use separate attn_q/k/v)");
    }
    UNMASK_ASSIGN_OR_RETURN(L.bq, GetBias(f, p + "attn_q.bias", q));
    UNMASK_ASSIGN_OR_RETURN(L.bk, GetBias(f, p + "attn_k.bias", kv));
    UNMASK_ASSIGN_OR_RETURN(L.bv, GetBias(f, p + "attn_v.bias", kv));
    const bool has_qk_norm = f.FindTensor(p + "attn_q_norm.weight") != nullptr ||
                             f.FindTensor(p + "attn_k_norm.weight") != nullptr;
    if (has_qk_norm || c.architecture == "qwen3" || c.architecture == "sdar" || c.is_moe()) {
      UNMASK_ASSIGN_OR_RETURN(L.q_norm, GetVector(f, p + "attn_q_norm.weight", c.head_dim));
      UNMASK_ASSIGN_OR_RETURN(L.k_norm, GetVector(f, p + "attn_k_norm.weight", c.head_dim));
    }
    UNMASK_ASSIGN_OR_RETURN(L.wo, GetLinear(f, p + "attn_output.weight", d, q, mode, compute));
    tick();
    if (c.is_moe_layer(l)) {
      UNMASK_ASSIGN_OR_RETURN(L.moe, LoadMoeFfn(f, c, p, mode, compute));
      tick(4 + (L.moe->has_shared ? 3 : 0));
      continue;
    }
    UNMASK_ASSIGN_OR_RETURN(TensorView gate, GetTensor(f, p + "ffn_gate.weight", {c.ffn_size, d}));
    UNMASK_ASSIGN_OR_RETURN(TensorView up, GetTensor(f, p + "ffn_up.weight", {c.ffn_size, d}));
    const TensorView parts[2] = {gate, up};
    auto gate_up = LinearWeight::Prepare(parts, mode, compute);
    if (!gate_up.ok()) return gate_up.status().WithContext(f.path() + ": " + p + "ffn_gate/ffn_up");
    L.gate_up = std::move(gate_up).value();
    tick(2);
    UNMASK_ASSIGN_OR_RETURN(L.down,
                            GetLinear(f, p + "ffn_down.weight", d, c.ffn_size, mode, compute));
    tick();
  }
  UNMASK_ASSIGN_OR_RETURN(m->output_norm_, GetVector(f, "output_norm.weight", d));
  tick();
  if (c.tied_output) {
    auto out =
        LinearWeight::Prepare(std::span<const TensorView>(&m->token_embd_, 1), mode, compute);
    if (!out.ok()) return out.status().WithContext(f.path() + ": tied output (token_embd.weight)");
    m->output_ = std::move(out).value();
  } else {
    UNMASK_ASSIGN_OR_RETURN(m->output_,
                            GetLinear(f, "output.weight", c.vocab_size, d, mode, compute));
    tick();
  }
  UNMASK_ASSIGN_OR_RETURN(m->output_bias_, GetBias(f, "output.bias", c.vocab_size));

  size_t bytes = m->output_.owned_bytes();
  for (const TransformerLayer& L : m->layers_) {
    bytes += L.wq.owned_bytes() + L.wk.owned_bytes() + L.wv.owned_bytes() + L.wo.owned_bytes() +
             L.gate_up.owned_bytes() + L.down.owned_bytes();
    if (L.moe) {
      bytes += L.moe->router.owned_bytes() + L.moe->shared_gate_up.owned_bytes() +
               L.moe->shared_down.owned_bytes();
      for (size_t e = 0; e < L.moe->gate_up.size(); ++e) {
        bytes += L.moe->gate_up[e].owned_bytes() + L.moe->down[e].owned_bytes();
      }
      m->expert_bytes_ = L.moe->expert_bytes;
      m->all_expert_bytes_ += L.moe->expert_bytes * static_cast<double>(L.moe->gate_up.size());
    }
  }
  if (mode == WeightMode::kOnTheFly) bytes += f.file_size();
  m->weight_bytes_ = bytes;
  m->compute_ = mode == WeightMode::kOnTheFly ? ComputeType::kF32 : compute;
  m->config_ = std::move(config);
  return m;
}

Status TransformerModel::EmbedTokens(std::span<const int32_t> ids, TensorView out) const {
  for (int32_t id : ids) {
    if (id < 0 || id >= config_.vocab_size) {
      return InvalidArgumentError("token id " + std::to_string(id) +
                                  " is outside the vocabulary [0, " +
                                  std::to_string(config_.vocab_size) + ")");
    }
  }
  return GetRows(token_embd_, ids, out);
}

Status TransformerModel::ValidatePlan(const BatchPlan& plan, const KvCache* kv,
                                      const TensorView& logits) const {
  const ModelConfig& c = config_;
  std::vector<int32_t> kv_seqs;
  for (size_t s = 0; s < plan.sequences.size(); ++s) {
    const SequenceInput& seq = plan.sequences[s];
    const int64_t n = static_cast<int64_t>(seq.tokens.size());
    const std::string where = "sequence " + std::to_string(s);
    if (seq.kv_seq >= 0) {
      if (kv == nullptr) return InvalidArgumentError(where + ": kv_seq set but no KV cache given");
      if (kv->config().num_layers != c.num_layers ||
          kv->config().kv_dim != c.num_kv_heads * c.head_dim) {
        return InvalidArgumentError("KV cache shaped for another model (layers " +
                                    std::to_string(kv->config().num_layers) + ", kv_dim " +
                                    std::to_string(kv->config().kv_dim) + ")");
      }
      if (seq.kv_seq >= kv->num_sequences()) {
        return InvalidArgumentError(where + ": kv_seq " + std::to_string(seq.kv_seq) +
                                    " but the KV cache has " + std::to_string(kv->num_sequences()) +
                                    " sequences");
      }
      if (std::find(kv_seqs.begin(), kv_seqs.end(), seq.kv_seq) != kv_seqs.end()) {
        return InvalidArgumentError(where + ": kv_seq " + std::to_string(seq.kv_seq) +
                                    " used twice in one batch");
      }
      kv_seqs.push_back(seq.kv_seq);
      if (seq.pos0 > kv->length(seq.kv_seq)) {
        return FailedPreconditionError(where + ": starts at position " + std::to_string(seq.pos0) +
                                       " but the KV cache holds " +
                                       std::to_string(kv->length(seq.kv_seq)) + " positions");
      }
      if (seq.kv_replace && seq.pos0 + n > kv->length(seq.kv_seq)) {
        return FailedPreconditionError(where + ": kv_replace of positions [" +
                                       std::to_string(seq.pos0) + ", " +
                                       std::to_string(seq.pos0 + n) + ") but the KV cache holds " +
                                       std::to_string(kv->length(seq.kv_seq)) + " positions");
      }
    } else if (seq.kv_seq < -1) {
      return InvalidArgumentError(where + ": kv_seq must be -1 or a cache sequence");
    } else if (seq.kv_replace) {
      return InvalidArgumentError(where + ": kv_replace needs a KV cache sequence (kv_seq)");
    }
    if (!seq.tree_parents.empty()) {
      if (seq.kv_seq < 0 || seq.kv_replace || c.attention != AttentionKind::kCausal) {
        return InvalidArgumentError(where +
                                    ": a token tree needs a causal model, a KV cache sequence "
                                    "and no kv_replace");
      }
      if (seq.tree_parents.size() != seq.tokens.size()) {
        return InvalidArgumentError(where + ": " + std::to_string(seq.tree_parents.size()) +
                                    " tree parents for " + std::to_string(n) + " tokens");
      }
      for (int64_t i = 0; i < n; ++i) {
        const int32_t parent = seq.tree_parents[static_cast<size_t>(i)];
        if (parent < -1 || parent >= i) {
          return InvalidArgumentError(where + ": tree parent " + std::to_string(parent) +
                                      " of token " + std::to_string(i) +
                                      " (must be -1 or an earlier token)");
        }
      }
    }
    if (!seq.kv_keep.empty()) {
      if (seq.kv_seq < 0 || seq.kv_replace) {
        return InvalidArgumentError(where +
                                    ": kv_keep needs a KV cache sequence and no kv_replace");
      }
      const Status moves = kv->CheckMoveRows(seq.kv_seq, seq.kv_keep,
                                             seq.pos0 - static_cast<int64_t>(seq.kv_keep.size()));
      if (!moves.ok()) return moves.WithContext(where + ": kv_keep");
    }
    if (seq.block_length < 0) {
      return InvalidArgumentError(where + ": block_length must be >= 0");
    }
    const int64_t block_length = seq.block_length > 0 ? seq.block_length : c.block_length;
    if (seq.kv_seq < 0 && c.attention == AttentionKind::kBlockCausal &&
        seq.pos0 % block_length != 0) {
      // Without a cache the keys are the fed rows; their blocks line up with the absolute ones
      // only when pos0 starts a block.
      return InvalidArgumentError(where +
                                  ": a block-causal forward without a KV cache must start "
                                  "at a block boundary (block_length " +
                                  std::to_string(block_length) + "), got pos0 " +
                                  std::to_string(seq.pos0));
    }
    if (seq.pos0 < 0 || seq.pos0 + n > c.context_length) {
      return InvalidArgumentError(where + ": positions [" + std::to_string(seq.pos0) + ", " +
                                  std::to_string(seq.pos0 + n) + ") exceed the context length " +
                                  std::to_string(c.context_length));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int32_t id = seq.tokens[static_cast<size_t>(i)];
      if (id < 0 || id >= c.vocab_size) {
        return InvalidArgumentError(where + ": token id " + std::to_string(id) + " at index " +
                                    std::to_string(i) + " is outside the vocabulary [0, " +
                                    std::to_string(c.vocab_size) + ")");
      }
    }
    int32_t prev = -1;
    for (int32_t r : seq.logit_rows) {
      if (r <= prev || r >= n) {
        return InvalidArgumentError(where + ": logit rows must be ascending indices in [0, " +
                                    std::to_string(n) + "), got " + std::to_string(r));
      }
      prev = r;
    }
  }
  const int64_t rows = plan.num_logit_rows();
  if (logits.device != backend_->device()) {
    return InvalidArgumentError("logits are on " + std::string(DeviceName(logits.device)) +
                                ", the model computes on " +
                                std::string(DeviceName(backend_->device())));
  }
  if (logits.dtype != DType::kF32 || logits.shape.rank() != 2 || logits.shape[0] != rows ||
      logits.shape[1] != c.vocab_size) {
    return InvalidArgumentError("logits must be f32 [" + std::to_string(rows) + ", " +
                                std::to_string(c.vocab_size) + "], got " + logits.shape.ToString());
  }
  return Status::Ok();
}

Status TransformerModel::Forward(const BatchPlan& plan, KvCache* kv, Workspace& ws,
                                 TensorView logits, ForwardStats* stats) const {
  const auto start = std::chrono::steady_clock::now();
  UNMASK_RETURN_IF_ERROR(ValidatePlan(plan, kv, logits));
  const ModelConfig& c = config_;
  const int64_t total = plan.num_positions();
  const int64_t num_rows = plan.num_logit_rows();
  if (total == 0) return Status::Ok();
  // Plan every sequence's cache write before applying any: an invalid sequence leaves every cache
  // as it was.
  std::vector<KvWrite> writes;
  for (const SequenceInput& seq : plan.sequences) {
    if (seq.kv_seq >= 0) {
      const int64_t n = static_cast<int64_t>(seq.tokens.size());
      UNMASK_ASSIGN_OR_RETURN(KvWrite w, seq.kv_replace ? kv->PlanReplace(seq.kv_seq, seq.pos0, n)
                                                        : kv->Plan(seq.kv_seq, seq.pos0, n));
      writes.push_back(w);
    }
  }
  for (const SequenceInput& seq : plan.sequences) {  // the accepted path of a tree, into place
    if (!seq.kv_keep.empty()) {
      kv->MoveRows(seq.kv_seq, seq.kv_keep, seq.pos0 - static_cast<int64_t>(seq.kv_keep.size()));
    }
  }
  for (const KvWrite& w : writes) kv->Apply(w);
  ws.Reserve(c, total, num_rows);
  int64_t max_position = 0;
  for (const SequenceInput& seq : plan.sequences) {
    max_position =
        std::max<int64_t>(max_position, seq.pos0 + static_cast<int64_t>(seq.tokens.size()));
  }
  if (ws.rope.max_positions() < max_position || ws.rope.rope_dim() != c.rope_dim) {
    // Grow geometrically (at least 4096 positions), never past the context length.
    const int64_t want = std::min(
        c.context_length, std::max({max_position, 2 * ws.rope.max_positions(), int64_t{4096}}));
    UNMASK_ASSIGN_OR_RETURN(ws.rope, RopeTable::Create(c.rope_dim, c.rope_base, want));
  }

  // Flattened ids and absolute positions of every fed position; positions of the logit rows.
  std::vector<int32_t> ids, positions, row_positions;
  std::vector<int64_t> offsets, row_offsets;  // per sequence: first position / first logit row
  ids.reserve(static_cast<size_t>(total));
  positions.reserve(static_cast<size_t>(total));
  row_positions.reserve(static_cast<size_t>(num_rows));
  for (const SequenceInput& seq : plan.sequences) {
    offsets.push_back(static_cast<int64_t>(ids.size()));
    row_offsets.push_back(static_cast<int64_t>(row_positions.size()));
    const size_t first = positions.size();
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      ids.push_back(seq.tokens[i]);
      // A tree token sits one position after its parent (the prefix's end for -1).
      const int32_t parent =
          seq.tree_parents.empty() ? static_cast<int32_t>(i) - 1 : seq.tree_parents[i];
      positions.push_back(parent < 0 ? seq.pos0
                                     : positions[first + static_cast<size_t>(parent)] + 1);
    }
    for (int32_t r : seq.logit_rows)
      row_positions.push_back(positions[first + static_cast<size_t>(r)]);
  }

  const bool bidirectional = c.attention == AttentionKind::kBidirectional;
  AttentionParams attn_params;
  attn_params.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  attn_params.mask = bidirectional                                ? AttentionMask::kNone
                     : c.attention == AttentionKind::kBlockCausal ? AttentionMask::kBlockCausal
                                                                  : AttentionMask::kCausal;
  attn_params.block_length = c.block_length;
  const int64_t h = c.num_heads, hkv = c.num_kv_heads;

  UNMASK_RETURN_IF_ERROR(GetRows(token_embd_, ids, Rows(ws.hidden, 0, total)));

  // Copies the logit rows of `src` [total, hidden] into `dst` [num_rows, hidden].
  auto gather_rows = [&](const Tensor& src, const Tensor& dst) {
    const int64_t d = c.hidden_size;
    int64_t j = 0;
    for (size_t s = 0; s < plan.sequences.size(); ++s) {
      for (int32_t r : plan.sequences[s].logit_rows) {
        std::copy_n(src.as<float>() + (offsets[s] + r) * d, d, dst.as<float>() + j * d);
        ++j;
      }
    }
  };

  const int64_t kv_dim = hkv * c.head_dim;
  ForwardStats moe;  // the MoE counters
  // Everything of layer l after its keys and values are cached: queries, attention, output
  // projection and FFN, over every position or (prune) the logit rows only; count: add the MoE
  // counters to the forward's.
  auto layer_rest = [&](int64_t l, bool prune, bool count) -> Status {
    const TransformerLayer& L = layers_[static_cast<size_t>(l)];
    const TensorView ffn_norm{const_cast<float*>(L.ffn_norm.data()), DType::kF32,
                              Shape{c.hidden_size}};
    // The rows that continue through this layer: all positions, or the logit rows when pruning.
    const Tensor& resid = prune ? ws.last_hidden : ws.hidden;
    const Tensor& normed = prune ? ws.last_normed : ws.normed;
    const int64_t n = prune ? num_rows : total;
    const std::vector<int32_t>& q_positions = prune ? row_positions : positions;
    const std::vector<int64_t>& q_offsets = prune ? row_offsets : offsets;
    if (prune) {
      gather_rows(ws.hidden, ws.last_hidden);
      gather_rows(ws.normed, ws.last_normed);
    }
    if (n > 0) {
      UNMASK_RETURN_IF_ERROR(Linear(Rows(normed, 0, n), L.wq, Rows(ws.q, 0, n)));
      AddBias(ws.q.as<float>(), n, L.bq);
      UNMASK_RETURN_IF_ERROR(HeadNorm(ws.q, n, h, L.q_norm, c.rms_eps));
      UNMASK_RETURN_IF_ERROR(ApplyRope(Heads(ws.q, 0, n, h), q_positions, ws.rope, c.rope_layout));
    }
    for (size_t s = 0; s < plan.sequences.size(); ++s) {
      const SequenceInput& seq = plan.sequences[s];
      const int64_t len = static_cast<int64_t>(seq.tokens.size());
      // Keys: the cache rows [0, pos0 + len) or the fed rows; key_base = key index of tokens[0].
      const bool cached = seq.kv_seq >= 0;
      const int64_t key_base = cached ? seq.pos0 : 0;
      // kv_replace: every cached row, including those after the fed window.
      const int64_t num_keys = seq.kv_replace ? kv->length(seq.kv_seq) : key_base + len;
      const TensorView keys = cached ? TensorView{kv->Keys(seq.kv_seq, l), DType::kF32,
                                                  Shape{num_keys, hkv, c.head_dim}}
                                     : Heads(ws.k, offsets[s], len, hkv);
      const TensorView values = cached ? TensorView{kv->Values(seq.kv_seq, l), DType::kF32,
                                                    Shape{num_keys, hkv, c.head_dim}}
                                       : Heads(ws.v, offsets[s], len, hkv);
      // Queries for token indices [a, b) stored from row q_row; a causal query at token index i
      // sees keys [0, key_base + i].
      auto run_attention = [&](int64_t q_row, int64_t a, int64_t b) -> Status {
        AttentionParams p = attn_params;
        p.q_pos0 = key_base + a;
        if (seq.block_length > 0) p.block_length = seq.block_length;
        if (!seq.tree_parents.empty()) {
          p.mask = AttentionMask::kTree;
          p.q_pos0 = key_base;  // the cached prefix; the fed tokens are the tree's nodes
          p.tree_parents = seq.tree_parents;
          p.tree_q0 = a;
        }
        return Attention(Heads(ws.q, q_row, b - a, h), keys, values, p,
                         Heads(ws.attn, q_row, b - a, h));
      };
      if (!prune) {
        if (len > 0) UNMASK_RETURN_IF_ERROR(run_attention(q_offsets[s], 0, len));
        continue;
      }
      // Pruned: the logit rows, in maximal runs of consecutive indices (one call when
      // bidirectional, where every query sees every key).
      const std::span<const int32_t> rows = seq.logit_rows;
      for (size_t i = 0; i < rows.size();) {
        size_t j = i + 1;
        while (j < rows.size() && (bidirectional || rows[j] == rows[j - 1] + 1)) ++j;
        UNMASK_RETURN_IF_ERROR(run_attention(q_offsets[s] + static_cast<int64_t>(i), rows[i],
                                             rows[i] + static_cast<int64_t>(j - i)));
        i = j;
      }
    }
    if (n == 0) return Status::Ok();
    UNMASK_RETURN_IF_ERROR(Linear(Rows(ws.attn, 0, n), L.wo, Rows(ws.proj, 0, n)));
    UNMASK_RETURN_IF_ERROR(AddInPlace(Rows(resid, 0, n), Rows(ws.proj, 0, n)));
    UNMASK_RETURN_IF_ERROR(RmsNorm(Rows(resid, 0, n), ffn_norm, c.rms_eps, Rows(normed, 0, n)));
    if (L.moe) {
      MoeFfnCounters counters;
      // A NaN router logit comes from the layer's input (NaN weights or activations upstream):
      // the error names the layer.
      UNMASK_RETURN_IF_ERROR(
          MoeFfn(Rows(normed, 0, n), *L.moe, c.routing, ws, Rows(ws.proj, 0, n), &counters)
              .WithContext("layer " + std::to_string(l) + " (blk." + std::to_string(l) +
                           ".ffn_gate_inp)"));
      UNMASK_RETURN_IF_ERROR(AddInPlace(Rows(resid, 0, n), Rows(ws.proj, 0, n)));
      if (count) {
        ++moe.moe_layers;
        moe.experts_hit += counters.experts_hit;
        moe.expert_rows += counters.expert_rows;
      }
      return Status::Ok();
    }
    UNMASK_RETURN_IF_ERROR(Linear(Rows(normed, 0, n), L.gate_up, Rows(ws.gate_up, 0, n)));
    UNMASK_RETURN_IF_ERROR(SwiGlu(Rows(ws.gate_up, 0, n), Rows(ws.ffn, 0, n)));
    UNMASK_RETURN_IF_ERROR(Linear(Rows(ws.ffn, 0, n), L.down, Rows(ws.proj, 0, n)));
    UNMASK_RETURN_IF_ERROR(AddInPlace(Rows(resid, 0, n), Rows(ws.proj, 0, n)));
    return Status::Ok();
  };

  for (int64_t l = 0; l < c.num_layers; ++l) {
    const TransformerLayer& L = layers_[static_cast<size_t>(l)];
    // The last layer only needs queries (and everything after attention) at the logit rows; keys
    // and values are needed (and cached) everywhere.
    const bool prune = l == c.num_layers - 1;
    const TensorView attn_norm{const_cast<float*>(L.attn_norm.data()), DType::kF32,
                               Shape{c.hidden_size}};
    UNMASK_RETURN_IF_ERROR(
        RmsNorm(Rows(ws.hidden, 0, total), attn_norm, c.rms_eps, Rows(ws.normed, 0, total)));
    UNMASK_RETURN_IF_ERROR(Linear(Rows(ws.normed, 0, total), L.wk, Rows(ws.k, 0, total)));
    AddBias(ws.k.as<float>(), total, L.bk);
    UNMASK_RETURN_IF_ERROR(HeadNorm(ws.k, total, hkv, L.k_norm, c.rms_eps));
    UNMASK_RETURN_IF_ERROR(Linear(Rows(ws.normed, 0, total), L.wv, Rows(ws.v, 0, total)));
    AddBias(ws.v.as<float>(), total, L.bv);
    UNMASK_RETURN_IF_ERROR(
        ApplyRope(Heads(ws.k, 0, total, hkv), positions, ws.rope, c.rope_layout));
    for (size_t s = 0; s < plan.sequences.size(); ++s) {
      const SequenceInput& seq = plan.sequences[s];
      if (seq.kv_seq < 0) continue;
      const size_t len = seq.tokens.size() * static_cast<size_t>(kv_dim);
      std::copy_n(ws.k.as<float>() + offsets[s] * kv_dim, len,
                  kv->Keys(seq.kv_seq, l) + seq.pos0 * kv_dim);
      std::copy_n(ws.v.as<float>() + offsets[s] * kv_dim, len,
                  kv->Values(seq.kv_seq, l) + seq.pos0 * kv_dim);
    }

    UNMASK_RETURN_IF_ERROR(layer_rest(l, prune, true));
  }

  const TensorView out_norm{const_cast<float*>(output_norm_.data()), DType::kF32,
                            Shape{c.hidden_size}};
  if (std::any_of(plan.sequences.begin(), plan.sequences.end(),
                  [](const SequenceInput& seq) { return seq.all_features; })) {
    // The last layer once more over every position (the pruned pass above left its input in
    // ws.hidden and ws.normed), then the output norm of every row: the logit rows keep the values
    // of the pruned pass, so asking for features never changes a token.
    UNMASK_RETURN_IF_ERROR(layer_rest(c.num_layers - 1, /*prune=*/false, /*count=*/false));
    if (ws.all_features.shape().rank() != 2 || ws.all_features.shape()[0] < total ||
        ws.all_features.shape()[1] != c.hidden_size) {
      ws.all_features = Tensor(DType::kF32, {total, c.hidden_size});
    }
    UNMASK_RETURN_IF_ERROR(
        RmsNorm(Rows(ws.hidden, 0, total), out_norm, c.rms_eps, Rows(ws.all_features, 0, total)));
  }
  if (num_rows > 0) {
    UNMASK_RETURN_IF_ERROR(RmsNorm(Rows(ws.last_hidden, 0, num_rows), out_norm, c.rms_eps,
                                   Rows(ws.last_normed, 0, num_rows)));
    UNMASK_RETURN_IF_ERROR(Linear(Rows(ws.last_normed, 0, num_rows), output_, logits));
    AddBias(logits.as<float>(), num_rows, output_bias_);
  }

  if (stats != nullptr) {
    stats->num_positions = total;
    stats->num_logit_rows = num_rows;
    stats->flops = 0;
    stats->kv_bytes = 0;
    stats->moe_layers = moe.moe_layers;
    stats->experts_hit = moe.experts_hit;
    stats->expert_rows = moe.expert_rows;
    stats->expert_bytes = static_cast<double>(moe.experts_hit) * expert_bytes_;
    // Experts no row was routed to are never read.
    stats->weight_bytes =
        static_cast<double>(weight_bytes_) - all_expert_bytes_ + stats->expert_bytes;
    stats->activation_bytes = c.ForwardActivationBytes(total, num_rows);
    for (const SequenceInput& seq : plan.sequences) {
      const int64_t n = static_cast<int64_t>(seq.tokens.size());
      const int64_t cached = seq.kv_seq < 0   ? 0
                             : seq.kv_replace ? kv->length(seq.kv_seq) - n
                                              : seq.pos0;
      stats->flops += c.ForwardFlops(n, static_cast<int64_t>(seq.logit_rows.size()), true, cached);
      stats->kv_bytes += c.ForwardKvBytes(n, cached, seq.kv_seq >= 0);
    }
    stats->ms = MsSince(start);
  }
  return Status::Ok();
}

}  // namespace unmask
