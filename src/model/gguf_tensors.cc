#include "model/gguf_tensors.h"

#include <span>
#include <string>
#include <vector>

#include "ops/convert.h"

namespace unmask {

StatusOr<TensorView> GetTensor(const gguf::GgufFile& f, const std::string& name,
                               std::initializer_list<int64_t> shape) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) return NotFoundError(f.path() + ": missing tensor '" + name + "'");
  const std::vector<int64_t> expected(shape);
  std::vector<int64_t> row_major(t->dims.rbegin(), t->dims.rend());
  // GGUF writers may keep trailing 1-sized dims; ignore leading 1s of the row-major shape.
  while (row_major.size() > expected.size() && row_major.front() == 1) {
    row_major.erase(row_major.begin());
  }
  if (row_major != expected) {
    std::string want = "[";
    for (size_t i = 0; i < expected.size(); ++i) {
      want += (i ? ", " : "") + std::to_string(expected[i]);
    }
    want += "]";
    return InvalidArgumentError(f.path() + ": tensor '" + name + "' has shape " + t->ShapeString() +
                                ", expected " + want);
  }
  const auto dtype = gguf::ToDType(t->type);
  const bool ok =
      dtype && (*dtype == DType::kF32 || *dtype == DType::kF16 || *dtype == DType::kBF16 ||
                *dtype == DType::kQ8_0 || *dtype == DType::kQ4_0 || *dtype == DType::kQ4_1 ||
                *dtype == DType::kQ4_K || *dtype == DType::kQ6_K);
  if (!ok) {
    const auto info = gguf::GetGgmlTypeInfo(static_cast<uint32_t>(t->type));
    return UnimplementedError(f.path() + ": tensor '" + name + "' has type " +
                              std::string(info ? info->name : "unknown") +
                              "; supported: f32, f16, bf16, q8_0, q4_0, q4_1, q4_K, q6_K");
  }
  TensorView v;
  v.data = const_cast<uint8_t*>(t->data);  // read-only mapping; never written through
  v.dtype = *dtype;
  v.shape = expected.size() == 1 ? Shape{expected[0]} : Shape{expected[0], expected[1]};
  return v;
}

StatusOr<std::vector<float>> GetVector(const gguf::GgufFile& f, const std::string& name,
                                       int64_t n) {
  UNMASK_ASSIGN_OR_RETURN(TensorView t, GetTensor(f, name, {n}));
  std::vector<float> out(static_cast<size_t>(n));
  UNMASK_RETURN_IF_ERROR(ConvertRowToF32(t.dtype, t.data, n, out.data()).WithContext(name));
  return out;
}

StatusOr<std::vector<float>> GetBias(const gguf::GgufFile& f, const std::string& name, int64_t n) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) return std::vector<float>();
  const auto dtype = gguf::ToDType(t->type);
  if (!dtype || (*dtype != DType::kF32 && *dtype != DType::kF16)) {
    const auto info = gguf::GetGgmlTypeInfo(static_cast<uint32_t>(t->type));
    return InvalidArgumentError(f.path() + ": tensor '" + name + "' has type " +
                                std::string(info ? info->name : "unknown") +
                                "; biases must be f32 or f16");
  }
  return GetVector(f, name, n);
}

StatusOr<LinearWeight> GetLinear(const gguf::GgufFile& f, const std::string& name, int64_t rows,
                                 int64_t cols, WeightMode mode, ComputeType compute) {
  UNMASK_ASSIGN_OR_RETURN(TensorView t, GetTensor(f, name, {rows, cols}));
  auto w = LinearWeight::Prepare(std::span<const TensorView>(&t, 1), mode, compute);
  if (!w.ok()) return w.status().WithContext(f.path() + ": tensor '" + name + "'");
  return w;
}

StatusOr<std::vector<TensorView>> GetExperts(const gguf::GgufFile& f, const std::string& name,
                                             int64_t experts, int64_t rows, int64_t cols) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) return NotFoundError(f.path() + ": missing tensor '" + name + "'");
  std::vector<int64_t> dims = t->dims;
  while (dims.size() > 3 && dims.back() == 1) dims.pop_back();
  if (dims != std::vector<int64_t>{cols, rows, experts}) {
    return InvalidArgumentError(
        f.path() + ": tensor '" + name + "' has shape " + t->ShapeString() + ", expected [" +
        std::to_string(experts) + ", " + std::to_string(rows) + ", " + std::to_string(cols) +
        "] (expert_count, rows, cols; GGUF {" + std::to_string(cols) + ", " + std::to_string(rows) +
        ", " + std::to_string(experts) + "})");
  }
  const auto dtype = gguf::ToDType(t->type);
  if (!dtype || *dtype == DType::kI32) {
    const auto info = gguf::GetGgmlTypeInfo(static_cast<uint32_t>(t->type));
    return UnimplementedError(f.path() + ": tensor '" + name + "' has type " +
                              std::string(info ? info->name : "unknown") +
                              "; supported: f32, f16, bf16, q8_0, q4_0, q4_1, q4_K, q6_K");
  }
  const auto row_bytes = RowBytes(*dtype, cols);
  if (!row_bytes) {
    return InvalidArgumentError(f.path() + ": tensor '" + name + "': rows of " +
                                std::to_string(cols) + " elements do not fill whole " +
                                std::string(DTypeName(*dtype)) + " blocks");
  }
  std::vector<TensorView> out;
  for (int64_t e = 0; e < experts; ++e) {
    TensorView v;
    v.data = const_cast<uint8_t*>(t->data) + static_cast<size_t>(e * rows) * *row_bytes;
    v.dtype = *dtype;
    v.shape = Shape{rows, cols};
    out.push_back(v);
  }
  return out;
}

}  // namespace unmask
