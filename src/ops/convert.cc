#include "ops/convert.h"

#include <cstring>
#include <string>

#include "core/parallel.h"
#include "ops/kernels_cpu.h"
#include "ops/op_check.h"

namespace unmask {
namespace {

bool HasConverter(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
         dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ4_1 ||
         dtype == DType::kQ4_K || dtype == DType::kQ6_K;
}

}  // namespace

Status ConvertRowToF32(DType dtype, const void* src, int64_t n, float* dst) {
  if (!HasConverter(dtype)) {
    return UnimplementedError("ConvertRowToF32: no converter from " +
                              std::string(DTypeName(dtype)) +
                              " (supported: f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q6_k)");
  }
  if (n < 0) {
    return InvalidArgumentError("ConvertRowToF32: negative element count " + std::to_string(n));
  }
  const int64_t block = GetDTypeInfo(dtype).block_size;
  if (n % block != 0) {
    return InvalidArgumentError("ConvertRowToF32: " + std::to_string(n) + " elements of " +
                                std::string(DTypeName(dtype)) + " is not a whole number of " +
                                std::to_string(block) + "-element blocks");
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return InvalidArgumentError("ConvertRowToF32: null src or dst for " + std::to_string(n) +
                                " elements");
  }
  cpu::ConvertRow(dtype, src, n, dst);
  return Status::Ok();
}

Status GetRows(const TensorView& table, std::span<const int32_t> ids, TensorView out) {
  if (!HasConverter(table.dtype)) {
    return UnimplementedError("GetRows: no converter from " + std::string(DTypeName(table.dtype)) +
                              " for " + ops_internal::Describe("table", table));
  }
  if (table.shape.rank() != 2 || table.shape[0] < 0 || table.shape[1] < 0) {
    return InvalidArgumentError("GetRows: " + ops_internal::Describe("table", table) +
                                " must be [V, D]");
  }
  const int64_t vocab = table.shape[0];
  const int64_t dim = table.shape[1];
  const auto row_bytes = RowBytes(table.dtype, dim);
  if (!row_bytes) {
    return InvalidArgumentError("GetRows: " + ops_internal::Describe("table", table) +
                                ": D is not a multiple of the block size " +
                                std::to_string(GetDTypeInfo(table.dtype).block_size));
  }
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("GetRows", "out", out, 2));
  UNMASK_ASSIGN_OR_RETURN(const Device device, ops_internal::CommonDevice(
                                                   "GetRows", {{"table", &table}, {"out", &out}}));
  const auto num_ids = static_cast<int64_t>(ids.size());
  if (out.shape[0] != num_ids || out.shape[1] != dim) {
    return InvalidArgumentError("GetRows: " + ops_internal::Describe("out", out) + " must be [" +
                                std::to_string(num_ids) + ", " + std::to_string(dim) + "]");
  }
  if (table.data == nullptr && vocab * dim > 0) {
    return InvalidArgumentError("GetRows: " + ops_internal::Describe("table", table) +
                                " has null data");
  }
  for (int64_t i = 0; i < num_ids; ++i) {
    const int32_t id = ids[static_cast<size_t>(i)];
    if (id < 0 || id >= vocab) {
      return OutOfRangeError("GetRows: id " + std::to_string(id) + " at index " +
                             std::to_string(i) + " is outside [0, " + std::to_string(vocab) +
                             ") of " + ops_internal::Describe("table", table));
    }
  }
  switch (device) {
    case Device::kCpu:
      break;
    case Device::kCuda:
      return ops_internal::NoKernel("GetRows", device);
  }
  if (dim == 0) return Status::Ok();
  const auto* base = static_cast<const uint8_t*>(table.data);
  float* dst = out.as<float>();
  ParallelFor(num_ids, GrainForBytes(8 * dim), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto id = static_cast<size_t>(ids[static_cast<size_t>(i)]);
      cpu::ConvertRow(table.dtype, base + id * *row_bytes, dim, dst + i * dim);
    }
  });
  return Status::Ok();
}

}  // namespace unmask
