#include "core/compute.h"

namespace unmask {

std::string_view ComputeTypeName(ComputeType type) {
  switch (type) {
    case ComputeType::kF32:
      return "f32";
    case ComputeType::kBf16:
      return "bf16";
    case ComputeType::kInt8:
      return "int8";
  }
  return "?";
}

std::optional<ComputeType> ComputeTypeFromName(std::string_view name) {
  for (ComputeType t : {ComputeType::kF32, ComputeType::kBf16, ComputeType::kInt8}) {
    if (name == ComputeTypeName(t)) return t;
  }
  return std::nullopt;
}

int ComputeTypeBytes(ComputeType type) {
  switch (type) {
    case ComputeType::kF32:
      return 4;
    case ComputeType::kBf16:
      return 2;
    case ComputeType::kInt8:
      return 1;
  }
  return 4;
}

}  // namespace unmask
