// ggml tensor types as stored in GGUF files (ggml.h `enum ggml_type`), with their block layouts.
// The reader knows the sizes of all of them so that any file can be inspected; which types unmask
// can compute with is a separate question (ToDType).
#ifndef UNMASK_FORMAT_GGML_TYPE_H_
#define UNMASK_FORMAT_GGML_TYPE_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"

namespace unmask::gguf {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeInfo {
  std::string_view name;  // ggml's name: "f32", "q8_0", "q4_K", ...
  int64_t block_size;     // elements per block
  int64_t block_bytes;    // bytes per block
};

// nullopt for ids that are not (or no longer) ggml types (e.g. 4, 5, 31-33, 36-38, >= 40).
std::optional<GgmlTypeInfo> GetGgmlTypeInfo(uint32_t type_id);

// The unmask DType for a ggml type, when unmask can compute with it; nullopt otherwise.
std::optional<DType> ToDType(GgmlType type);
// The ggml type of an unmask DType.
GgmlType FromDType(DType dtype);

}  // namespace unmask::gguf

#endif  // UNMASK_FORMAT_GGML_TYPE_H_
