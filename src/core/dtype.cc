#include "core/dtype.h"

#include <array>
#include <cctype>
#include <limits>

namespace unmask {
namespace {

constexpr std::array<DTypeInfo, 9> kInfos = {{
    {"f32", 1, 4},
    {"f16", 1, 2},
    {"bf16", 1, 2},
    {"q8_0", 32, 34},
    {"q4_0", 32, 18},
    {"q4_1", 32, 20},
    {"q4_k", 256, 144},
    {"q6_k", 256, 210},
    {"i32", 1, 4},
}};

// The block structs of dtype.h are the layouts the table describes.
static_assert(kInfos[static_cast<size_t>(DType::kQ8_0)].block_bytes == sizeof(BlockQ8_0));
static_assert(kInfos[static_cast<size_t>(DType::kQ4_0)].block_bytes == sizeof(BlockQ4_0));
static_assert(kInfos[static_cast<size_t>(DType::kQ4_1)].block_bytes == sizeof(BlockQ4_1));
static_assert(kInfos[static_cast<size_t>(DType::kQ4_K)].block_bytes == sizeof(BlockQ4_K));
static_assert(kInfos[static_cast<size_t>(DType::kQ6_K)].block_bytes == sizeof(BlockQ6_K));
static_assert(kInfos[static_cast<size_t>(DType::kQ4_0)].block_size == kQ4_0BlockSize &&
              kInfos[static_cast<size_t>(DType::kQ4_1)].block_size == kQ4_1BlockSize &&
              kInfos[static_cast<size_t>(DType::kQ4_K)].block_size == kQkK &&
              kInfos[static_cast<size_t>(DType::kQ6_K)].block_size == kQkK);

}  // namespace

const DTypeInfo& GetDTypeInfo(DType dtype) { return kInfos[static_cast<size_t>(dtype)]; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (size_t i = 0; i < kInfos.size(); ++i) {
    const std::string_view n = kInfos[i].name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t j = 0; j < n.size(); ++j) {
      if (std::tolower(static_cast<unsigned char>(name[j])) != n[j]) same = false;
    }
    if (same) return static_cast<DType>(i);
  }
  return std::nullopt;
}

std::optional<size_t> RowBytes(DType dtype, int64_t num_elements) {
  const DTypeInfo& info = GetDTypeInfo(dtype);
  if (num_elements < 0 || num_elements % info.block_size != 0) return std::nullopt;
  const uint64_t blocks = static_cast<uint64_t>(num_elements / info.block_size);
  if (blocks > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(info.block_bytes)) {
    return std::nullopt;
  }
  return static_cast<size_t>(blocks * static_cast<uint64_t>(info.block_bytes));
}

}  // namespace unmask
