// Attention per (head, block of queries): scores = scale * q_h k_h^T through cpu::Sgemm into a
// per-thread buffer, row softmax over the visible keys (the rest set to 0), then out_h = P v_h
// through cpu::Sgemm. Work items run in parallel (each Sgemm on its own thread) when the provider
// allows nested calls (cpu_backend.h SgemmRunsNested), otherwise in sequence with threaded Sgemm.
// Tiny problems use direct loops instead (GEMM call overhead would dominate).
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/parallel.h"
#include "ops/kernels_cpu.h"
#include "ops/parallel_util.h"
#include "ops/simd_math.h"

namespace unmask::cpu {
namespace {

constexpr int64_t kMaxQueryBlock = 128;
// Below this many multiply-adds per head (T * S * head_dim) the direct loops are used.
constexpr int64_t kDirectMaxWork = 32 * 1024;
constexpr int64_t kDirectMaxQueries = 16;

struct Problem {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  int64_t t, s, num_heads, num_kv_heads, head_dim;
  float scale;
  AttentionParams params;

  int64_t group() const { return num_heads / num_kv_heads; }
  int64_t q_stride() const { return num_heads * head_dim; }
  int64_t kv_stride() const { return num_kv_heads * head_dim; }
  // Keys visible to query `i`: [0, VisibleKeys(i)).
  int64_t VisibleKeys(int64_t i) const { return VisibleKeyCount(params, params.q_pos0 + i, s); }
};

std::vector<float>& ThreadScratch() {
  thread_local std::vector<float> scratch;
  return scratch;
}

// Queries [t0, t1) of head h.
void BlockWithGemm(const Problem& p, int64_t h, int64_t t0, int64_t t1) {
  const int64_t rows = t1 - t0;
  const int64_t kv_h = h / p.group();
  const int64_t keys = p.VisibleKeys(t1 - 1);  // the last query sees the most keys
  std::vector<float>& scores = ThreadScratch();
  if (scores.size() < static_cast<size_t>(rows * keys)) {
    scores.resize(static_cast<size_t>(rows * keys));
  }
  float* sc = scores.data();
  Sgemm(false, true, rows, keys, p.head_dim, p.scale, p.q + t0 * p.q_stride() + h * p.head_dim,
        p.q_stride(), p.k + kv_h * p.head_dim, p.kv_stride(), 0.0f, sc, keys);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t visible = p.VisibleKeys(t0 + r);
    float* row = sc + r * keys;
    SoftmaxRow(row, visible);
    std::fill(row + visible, row + keys, 0.0f);
  }
  Sgemm(false, false, rows, p.head_dim, keys, 1.0f, sc, keys, p.v + kv_h * p.head_dim,
        p.kv_stride(), 0.0f, p.out + t0 * p.q_stride() + h * p.head_dim, p.q_stride());
}

// Queries [t0, t1) of head h with plain loops (tiny problems).
void BlockDirect(const Problem& p, int64_t h, int64_t t0, int64_t t1) {
  const int64_t kv_h = h / p.group();
  const int64_t d = p.head_dim;
  std::vector<float>& scores = ThreadScratch();
  if (scores.size() < static_cast<size_t>(p.s)) scores.resize(static_cast<size_t>(p.s));
  float* sc = scores.data();
  for (int64_t i = t0; i < t1; ++i) {
    const float* qi = p.q + i * p.q_stride() + h * d;
    const int64_t visible = p.VisibleKeys(i);
    for (int64_t j = 0; j < visible; ++j) {
      sc[j] = p.scale * Dot(qi, p.k + j * p.kv_stride() + kv_h * d, d);
    }
    SoftmaxRow(sc, visible);
    float* oi = p.out + i * p.q_stride() + h * d;
    std::fill(oi, oi + d, 0.0f);
    for (int64_t j = 0; j < visible; ++j) {
      const float w = sc[j];
      const float* vj = p.v + j * p.kv_stride() + kv_h * d;
      for (int64_t c = 0; c < d; ++c) oi[c] += w * vj[c];  // auto-vectorized
    }
  }
}

// Queries [t0, t1) of head h under a tree mask (AttentionMask::kTree): each query sees the prefix
// keys [0, q_pos0) and its tree keys, and is computed with BlockDirect's arithmetic in key order,
// so a chain of nodes gives bit for bit what the causal mask gives.
void BlockTree(const Problem& p, int64_t h, int64_t t0, int64_t t1) {
  const int64_t kv_h = h / p.group();
  const int64_t d = p.head_dim;
  const int64_t prefix = p.params.q_pos0;
  std::vector<float>& scores = ThreadScratch();
  if (scores.size() < static_cast<size_t>(p.s)) scores.resize(static_cast<size_t>(p.s));
  float* sc = scores.data();
  thread_local std::vector<int64_t> tree;
  for (int64_t i = t0; i < t1; ++i) {
    TreeKeys(p.params, p.params.tree_q0 + i, &tree);
    const float* qi = p.q + i * p.q_stride() + h * d;
    const int64_t visible = prefix + static_cast<int64_t>(tree.size());
    auto key = [&](int64_t j) { return j < prefix ? j : tree[static_cast<size_t>(j - prefix)]; };
    for (int64_t j = 0; j < visible; ++j) {
      sc[j] = p.scale * Dot(qi, p.k + key(j) * p.kv_stride() + kv_h * d, d);
    }
    SoftmaxRow(sc, visible);
    float* oi = p.out + i * p.q_stride() + h * d;
    std::fill(oi, oi + d, 0.0f);
    for (int64_t j = 0; j < visible; ++j) {
      const float w = sc[j];
      const float* vj = p.v + key(j) * p.kv_stride() + kv_h * d;
      for (int64_t c = 0; c < d; ++c) oi[c] += w * vj[c];  // auto-vectorized
    }
  }
}

}  // namespace

void AttentionF32(const float* q, const float* k, const float* v, int64_t t, int64_t s,
                  int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
                  const AttentionParams& params, float* out) {
  const Problem p{q, k, v, out, t, s, num_heads, num_kv_heads, head_dim, params.scale, params};
  // Decode-like calls (at most kDirectMaxQueries queries: one AR token, or a speculative
  // verification) always take the direct loops, which compute each query on its own: a query's
  // output then does not depend on how many queries share the call, so verifying drafts in one
  // forward reproduces token-by-token decoding exactly.
  // Tree masks (speculative verification) always take the direct loops too (BlockTree).
  const bool direct = t <= kDirectMaxQueries || t * s * head_dim <= kDirectMaxWork ||
                      params.mask == AttentionMask::kTree;
  // Equal query blocks of at most kMaxQueryBlock rows (160 -> 2 x 80, not 128 + 32).
  const int64_t num_blocks = (t + kMaxQueryBlock - 1) / kMaxQueryBlock;
  const int64_t block = (t + num_blocks - 1) / num_blocks;
  const int64_t items = num_heads * num_blocks;
  // Items are handed out dynamically: causal blocks differ in cost (later queries see more keys).
  // Last query blocks first, so that the most expensive items do not end up last.
  auto run = [&](int64_t item) {
    const int64_t h = item % num_heads;
    const int64_t b = num_blocks - 1 - item / num_heads;
    const int64_t t0 = b * block;
    const int64_t t1 = std::min(t, t0 + block);
    if (params.mask == AttentionMask::kTree) {
      BlockTree(p, h, t0, t1);
    } else if (direct) {
      BlockDirect(p, h, t0, t1);
    } else {
      BlockWithGemm(p, h, t0, t1);
    }
  };
  if (direct || SgemmRunsNested()) {
    // Work proxy: every query head reads s keys and values of head_dim floats.
    const int workers = ThreadsForBytes(t * s * head_dim * num_heads * 8);
    ops_internal::ParallelForDynamic(items, workers, run);
  } else {
    for (int64_t item = 0; item < items; ++item) run(item);
  }
}

}  // namespace unmask::cpu
