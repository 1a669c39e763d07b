#include "ops/attention.h"

#include <cmath>
#include <string>

#include "ops/kernels_cpu.h"
#include "ops/op_check.h"

namespace unmask {

Status Attention(const TensorView& q, const TensorView& k, const TensorView& v,
                 const AttentionParams& params, TensorView out) {
  using ops_internal::Describe;
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("Attention", "q", q, 3));
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("Attention", "k", k, 3));
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("Attention", "v", v, 3));
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("Attention", "out", out, 3));
  UNMASK_ASSIGN_OR_RETURN(
      const Device device,
      ops_internal::CommonDevice("Attention", {{"q", &q}, {"k", &k}, {"v", &v}, {"out", &out}}));
  const int64_t t = q.shape[0];
  const int64_t num_heads = q.shape[1];
  const int64_t head_dim = q.shape[2];
  const int64_t s = k.shape[0];
  const int64_t num_kv_heads = k.shape[1];
  if (k.shape[2] != head_dim) {
    return InvalidArgumentError("Attention: head_dim of " + Describe("k", k) + " differs from " +
                                Describe("q", q));
  }
  if (!(v.shape == k.shape)) {
    return InvalidArgumentError("Attention: " + Describe("v", v) + " must have the shape of " +
                                Describe("k", k));
  }
  if (!(out.shape == q.shape)) {
    return InvalidArgumentError("Attention: " + Describe("out", out) + " must have the shape of " +
                                Describe("q", q));
  }
  if (num_kv_heads < 1 || num_heads % num_kv_heads != 0) {
    return InvalidArgumentError("Attention: num_heads " + std::to_string(num_heads) +
                                " (q) must be a multiple of num_kv_heads " +
                                std::to_string(num_kv_heads) + " (k/v), which must be >= 1");
  }
  if (s == 0 && t > 0) {
    return InvalidArgumentError("Attention: no keys (" + Describe("k", k) + ") for " +
                                std::to_string(t) + " queries");
  }
  if (params.mask != AttentionMask::kNone && params.mask != AttentionMask::kCausal &&
      params.mask != AttentionMask::kBlockCausal && params.mask != AttentionMask::kTree) {
    return InvalidArgumentError("Attention: unknown AttentionMask value " +
                                std::to_string(static_cast<int>(params.mask)));
  }
  if (params.mask != AttentionMask::kNone && params.q_pos0 < 0) {
    return InvalidArgumentError("Attention: q_pos0 must be >= 0 for causal attention, got " +
                                std::to_string(params.q_pos0));
  }
  if (params.mask == AttentionMask::kBlockCausal && params.block_length < 1) {
    return InvalidArgumentError(
        "Attention: block_length must be >= 1 for block-causal attention, "
        "got " +
        std::to_string(params.block_length));
  }
  if (params.mask == AttentionMask::kTree) {
    const auto nodes = static_cast<int64_t>(params.tree_parents.size());
    if (params.tree_q0 < 0 || params.tree_q0 + t > nodes) {
      return InvalidArgumentError("Attention: tree queries are nodes [" +
                                  std::to_string(params.tree_q0) + ", " +
                                  std::to_string(params.tree_q0 + t) + ") of a tree of " +
                                  std::to_string(nodes) + " nodes");
    }
    if (params.q_pos0 + nodes > s) {
      return InvalidArgumentError("Attention: a tree of " + std::to_string(nodes) +
                                  " nodes after " + std::to_string(params.q_pos0) +
                                  " prefix keys needs that many keys, got " + Describe("k", k));
    }
    for (int64_t r = 0; r < nodes; ++r) {
      const int32_t parent = params.tree_parents[static_cast<size_t>(r)];
      if (parent < -1 || parent >= r) {
        return InvalidArgumentError("Attention: tree node " + std::to_string(r) + " has parent " +
                                    std::to_string(parent) + " (must be -1 or an earlier node)");
      }
    }
  }
  if (!std::isfinite(params.scale)) {
    return InvalidArgumentError("Attention: scale must be finite, got " +
                                std::to_string(params.scale));
  }
  if (ops_internal::Overlap(out, q) || ops_internal::Overlap(out, k) ||
      ops_internal::Overlap(out, v)) {
    return InvalidArgumentError("Attention: out must not overlap q, k or v");
  }
  switch (device) {
    case Device::kCpu:
      if (t == 0 || num_heads == 0 || head_dim == 0) return Status::Ok();
      cpu::AttentionF32(q.as<float>(), k.as<float>(), v.as<float>(), t, s, num_heads, num_kv_heads,
                        head_dim, params, out.as<float>());
      return Status::Ok();
    case Device::kCuda:
      break;
  }
  return ops_internal::NoKernel("Attention", device);
}

}  // namespace unmask
