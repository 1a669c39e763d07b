#include "kv/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace unmask {

StatusOr<KvCache> KvCache::Create(const KvCacheConfig& config) {
  if (config.num_layers <= 0 || config.kv_dim <= 0 || config.max_positions <= 0 ||
      config.num_sequences <= 0) {
    return InvalidArgumentError("KV cache sizes must be positive (layers " +
                                std::to_string(config.num_layers) + ", kv_dim " +
                                std::to_string(config.kv_dim) + ", max_positions " +
                                std::to_string(config.max_positions) + ", sequences " +
                                std::to_string(config.num_sequences) + ")");
  }
  KvCache cache;
  cache.config_ = config;
  cache.seqs_.resize(static_cast<size_t>(config.num_sequences));
  return cache;
}

void KvCache::Grow(Sequence& s, int64_t positions) {
  if (positions <= s.capacity) return;
  const int64_t cap =
      std::min(config_.max_positions, std::max({positions, 2 * s.capacity, int64_t{64}}));
  const int64_t d = config_.kv_dim;
  std::vector<float> keys(static_cast<size_t>(config_.num_layers * cap * d));
  std::vector<float> values(keys.size());
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const size_t n = static_cast<size_t>(s.length * d);
    std::copy_n(s.keys.data() + l * s.capacity * d, n, keys.data() + l * cap * d);
    std::copy_n(s.values.data() + l * s.capacity * d, n, values.data() + l * cap * d);
  }
  s.keys = std::move(keys);
  s.values = std::move(values);
  s.capacity = cap;
}

StatusOr<KvWrite> KvCache::Plan(int64_t seq, int64_t pos0, int64_t n) const {
  if (seq < 0 || seq >= config_.num_sequences) {
    return OutOfRangeError("KV cache has " + std::to_string(config_.num_sequences) +
                           " sequences, got sequence " + std::to_string(seq));
  }
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (pos0 < 0 || pos0 > s.length) {
    return FailedPreconditionError(
        "KV cache sequence " + std::to_string(seq) + " holds " + std::to_string(s.length) +
        " positions; a forward from position " + std::to_string(pos0) + " would leave a gap");
  }
  if (n < 0 || pos0 + n > config_.max_positions) {
    return InvalidArgumentError("positions [" + std::to_string(pos0) + ", " +
                                std::to_string(pos0 + n) + ") exceed the KV cache's " +
                                std::to_string(config_.max_positions) + " positions");
  }
  return KvWrite{seq, pos0, n, /*replace=*/false};
}

StatusOr<KvWrite> KvCache::PlanReplace(int64_t seq, int64_t pos0, int64_t n) const {
  if (seq < 0 || seq >= config_.num_sequences) {
    return OutOfRangeError("KV cache has " + std::to_string(config_.num_sequences) +
                           " sequences, got sequence " + std::to_string(seq));
  }
  const Sequence& s = seqs_[static_cast<size_t>(seq)];
  if (pos0 < 0 || n < 0 || pos0 + n > s.length) {
    return OutOfRangeError("KV cache sequence " + std::to_string(seq) + " holds " +
                           std::to_string(s.length) + " positions; cannot replace [" +
                           std::to_string(pos0) + ", " + std::to_string(pos0 + n) + ")");
  }
  return KvWrite{seq, pos0, n, /*replace=*/true};
}

void KvCache::Apply(const KvWrite& write) {
  assert(write.seq >= 0 && write.seq < config_.num_sequences);
  Sequence& s = seqs_[static_cast<size_t>(write.seq)];
  if (write.replace) {
    assert(write.pos0 >= 0 && write.n >= 0 && write.pos0 + write.n <= s.length);
    return;
  }
  assert(write.pos0 >= 0 && write.pos0 <= s.length && write.n >= 0 &&
         write.pos0 + write.n <= config_.max_positions);
  s.length = write.pos0;
  Grow(s, write.pos0 + write.n);
  s.length = write.pos0 + write.n;
}

float* KvCache::Keys(int64_t seq, int64_t layer) {
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  return s.keys.data() + layer * s.capacity * config_.kv_dim;
}

float* KvCache::Values(int64_t seq, int64_t layer) {
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  return s.values.data() + layer * s.capacity * config_.kv_dim;
}

Status KvCache::CheckMoveRows(int64_t seq, std::span<const int32_t> from, int64_t to0) const {
  if (seq < 0 || seq >= config_.num_sequences) {
    return OutOfRangeError("KV cache has " + std::to_string(config_.num_sequences) +
                           " sequences, got sequence " + std::to_string(seq));
  }
  const int64_t length = seqs_[static_cast<size_t>(seq)].length;
  if (to0 < 0) return InvalidArgumentError("KV row move to a negative row " + std::to_string(to0));
  for (size_t j = 0; j < from.size(); ++j) {
    const int64_t src = from[j], dst = to0 + static_cast<int64_t>(j);
    if (src < 0 || src >= length) {
      return OutOfRangeError("KV cache sequence " + std::to_string(seq) + " holds " +
                             std::to_string(length) + " rows; cannot move row " +
                             std::to_string(src));
    }
    if (src < dst || (j > 0 && src <= from[j - 1])) {
      return InvalidArgumentError("KV row moves must be ascending and move rows down (row " +
                                  std::to_string(src) + " to row " + std::to_string(dst) + ")");
    }
  }
  return Status::Ok();
}

void KvCache::MoveRows(int64_t seq, std::span<const int32_t> from, int64_t to0) {
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  const int64_t d = config_.kv_dim;
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    float* keys = s.keys.data() + l * s.capacity * d;
    float* values = s.values.data() + l * s.capacity * d;
    for (size_t j = 0; j < from.size(); ++j) {
      const int64_t src = from[j], dst = to0 + static_cast<int64_t>(j);
      if (src == dst) continue;
      std::copy_n(keys + src * d, d, keys + dst * d);
      std::copy_n(values + src * d, d, values + dst * d);
    }
  }
}

void KvCache::Clear(int64_t seq) { seqs_[static_cast<size_t>(seq)].length = 0; }

void KvCache::Truncate(int64_t seq, int64_t length) {
  Sequence& s = seqs_[static_cast<size_t>(seq)];
  s.length = std::clamp<int64_t>(length, 0, s.length);
}

size_t KvCache::bytes() const {
  size_t b = 0;
  for (const Sequence& s : seqs_) b += (s.keys.size() + s.values.size()) * sizeof(float);
  return b;
}

}  // namespace unmask
