#include "ops/rope.h"

#include <cmath>
#include <new>
#include <string>

#include "ops/kernels_cpu.h"
#include "ops/op_check.h"

namespace unmask {

StatusOr<RopeTable> RopeTable::Create(int64_t rope_dim, double base, int64_t max_positions) {
  if (rope_dim <= 0 || rope_dim % 2 != 0) {
    return InvalidArgumentError("RopeTable: rope_dim must be even and > 0, got " +
                                std::to_string(rope_dim));
  }
  if (!(base > 0.0) || !std::isfinite(base)) {
    return InvalidArgumentError("RopeTable: base (rope theta) must be finite and > 0, got " +
                                std::to_string(base));
  }
  if (max_positions <= 0) {
    return InvalidArgumentError("RopeTable: max_positions must be > 0, got " +
                                std::to_string(max_positions));
  }
  const int64_t half = rope_dim / 2;
  constexpr int64_t kMaxEntries = int64_t{1} << 32;  // 16 GiB per table: surely a caller bug
  if (max_positions > kMaxEntries / half) {
    return InvalidArgumentError("RopeTable: max_positions " + std::to_string(max_positions) +
                                " x rope_dim/2 " + std::to_string(half) + " entries is too large");
  }
  RopeTable table;
  table.rope_dim_ = rope_dim;
  table.max_positions_ = max_positions;
  try {
    table.cos_.resize(static_cast<size_t>(max_positions * half));
    table.sin_.resize(static_cast<size_t>(max_positions * half));
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("RopeTable: out of memory for " + std::to_string(max_positions) +
                                  " positions");
  }
  for (int64_t i = 0; i < half; ++i) {
    // theta_i = pos * base^(-2i / rope_dim) (RoFormer eq. 15), in double.
    const double inv_freq =
        std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(rope_dim));
    for (int64_t pos = 0; pos < max_positions; ++pos) {
      const double angle = static_cast<double>(pos) * inv_freq;
      table.cos_[static_cast<size_t>(pos * half + i)] = static_cast<float>(std::cos(angle));
      table.sin_[static_cast<size_t>(pos * half + i)] = static_cast<float>(std::sin(angle));
    }
  }
  return table;
}

Status ApplyRope(TensorView x, std::span<const int32_t> positions, const RopeTable& table,
                 RopeLayout layout) {
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("ApplyRope", "x", x, 3));
  const int64_t m = x.shape[0];
  const int64_t num_heads = x.shape[1];
  const int64_t head_dim = x.shape[2];
  if (layout != RopeLayout::kInterleaved && layout != RopeLayout::kNeox) {
    return InvalidArgumentError("ApplyRope: unknown RopeLayout value " +
                                std::to_string(static_cast<int>(layout)));
  }
  if (static_cast<int64_t>(positions.size()) != m) {
    return InvalidArgumentError("ApplyRope: " + std::to_string(positions.size()) +
                                " positions for " + ops_internal::Describe("x", x) +
                                " (need one per row)");
  }
  if (table.rope_dim() <= 0) {
    return InvalidArgumentError("ApplyRope: the RopeTable is empty (use RopeTable::Create)");
  }
  if (table.rope_dim() > head_dim) {
    return InvalidArgumentError("ApplyRope: rope_dim " + std::to_string(table.rope_dim()) +
                                " exceeds head_dim of " + ops_internal::Describe("x", x));
  }
  for (size_t i = 0; i < positions.size(); ++i) {
    if (positions[i] < 0 || positions[i] >= table.max_positions()) {
      return InvalidArgumentError("ApplyRope: position " + std::to_string(positions[i]) +
                                  " at row " + std::to_string(i) + " is outside the table [0, " +
                                  std::to_string(table.max_positions()) + ")");
    }
  }
  // The table is host memory: a device backend copies it to its memory with the kernel.
  switch (x.device) {
    case Device::kCpu:
      if (m > 0 && num_heads > 0) {
        cpu::RopeRows(x.as<float>(), m, num_heads, head_dim, positions.data(), table, layout);
      }
      return Status::Ok();
    case Device::kCuda:
      break;
  }
  return ops_internal::NoKernel("ApplyRope", x.device);
}

}  // namespace unmask
