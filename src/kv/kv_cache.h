// Key/value cache of attention layers (ARCHITECTURE.md "src/kv/"): per sequence and layer, the
// RoPE-rotated keys and the values of every position already fed, so that a causal model feeds
// each position once (prefill in one batched pass, then one token — or one speculative draft —
// per step).
//
// Plan/apply: a forward that feeds positions [pos0, pos0 + n) of sequence `seq` first calls
// Plan(seq, pos0, n), which only checks (const, no side effect) that positions [0, pos0) are
// cached and that the window fits, and returns the write as a KvWrite; Apply(write) then drops
// everything at or after pos0 (the rollback of rejected speculative tokens is simply the next plan
// starting earlier) and makes room; the model then writes the new rows layer by layer
// (Keys/Values) and attends over rows [0, pos0 + n). A batch plans every sequence before applying
// any, so a batch with one invalid sequence leaves every cache untouched.
//
// Replace (diffusion dual cache / vicinity refresh, Fast-dLLM and dInfer; ALGORITHMS.md §3.1,
// §4.3): PlanReplace(seq, pos0, n) keeps every cached row (its Apply changes nothing); the model
// overwrites rows [pos0, pos0 + n) in place and attends over all `length` rows, so positions
// outside the window keep their (possibly stale) keys and values.
//
// Storage: f32, [capacity, num_kv_heads * head_dim] per (sequence, layer) for K and V, grown
// geometrically up to max_positions (no memory is taken for positions never fed).
#ifndef UNMASK_KV_KV_CACHE_H_
#define UNMASK_KV_KV_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace unmask {

struct KvCacheConfig {
  int64_t num_layers = 0;
  int64_t kv_dim = 0;         // num_kv_heads * head_dim (floats per position per layer)
  int64_t max_positions = 0;  // context length
  int64_t num_sequences = 1;  // independent sequences (slots) the cache holds
};

// A write Plan/PlanReplace checked: positions [pos0, pos0 + n) of sequence `seq`.
struct KvWrite {
  int64_t seq = 0;
  int64_t pos0 = 0;
  int64_t n = 0;
  bool replace = false;  // overwrite cached rows in place (PlanReplace)
};

class KvCache {
 public:
  // Errors: InvalidArgument for non-positive sizes.
  static StatusOr<KvCache> Create(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return config_; }
  int64_t num_sequences() const { return config_.num_sequences; }
  // Positions of `seq` cached so far: [0, length).
  int64_t length(int64_t seq) const { return seqs_[static_cast<size_t>(seq)].length; }

  // Checks a write of positions [pos0, pos0 + n) of `seq` (Apply drops rows at or after pos0).
  // Errors: OutOfRange for an unknown sequence; FailedPrecondition when pos0 > length(seq) (a gap:
  // positions before pos0 were never fed); InvalidArgument when pos0 + n > max_positions.
  StatusOr<KvWrite> Plan(int64_t seq, int64_t pos0, int64_t n) const;
  // Checks an in-place overwrite of rows [pos0, pos0 + n) of `seq`; nothing is dropped and the
  // length stays. Errors: OutOfRange for an unknown sequence or a window outside [0, length(seq)).
  StatusOr<KvWrite> PlanReplace(int64_t seq, int64_t pos0, int64_t n) const;
  // Carries out a write planned on this cache with no mutation of its sequence since: sets
  // length(seq) to pos0 + n (dropping later rows) and grows the storage; a replace changes nothing.
  void Apply(const KvWrite& write);
  // After Apply: rows [0, pos0 + n) of layer `layer`, [max_positions-capacity, kv_dim] f32. The
  // model writes rows [pos0, pos0 + n) and reads all of them.
  float* Keys(int64_t seq, int64_t layer);
  float* Values(int64_t seq, int64_t layer);
  // Speculative tree verification keeps the accepted path: copies rows from[j] to row to0 + j of
  // `seq` in every layer, for j in order (from ascending with from[j] >= to0 + j, so no row is
  // read after it was overwritten); the length is unchanged. Checked by CheckMoveRows.
  void MoveRows(int64_t seq, std::span<const int32_t> from, int64_t to0);
  // Errors: OutOfRange for an unknown sequence or a row outside [0, length(seq));
  // InvalidArgument when from is not ascending or from[j] < to0 + j (or to0 < 0).
  Status CheckMoveRows(int64_t seq, std::span<const int32_t> from, int64_t to0) const;
  // Forgets everything of `seq` (length 0; memory kept for reuse).
  void Clear(int64_t seq);
  // Drops positions >= length of `seq` (no-op when already shorter).
  void Truncate(int64_t seq, int64_t length);

  // Bytes of memory held (K and V of all sequences and layers).
  size_t bytes() const;

 private:
  struct Sequence {
    int64_t length = 0;
    int64_t capacity = 0;       // positions allocated per layer
    std::vector<float> keys;    // [num_layers, capacity, kv_dim]
    std::vector<float> values;  // [num_layers, capacity, kv_dim]
  };
  void Grow(Sequence& s, int64_t positions);

  KvCacheConfig config_;
  std::vector<Sequence> seqs_;
};

}  // namespace unmask

#endif  // UNMASK_KV_KV_CACHE_H_
