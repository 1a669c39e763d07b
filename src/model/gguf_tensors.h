// Reading a model's tensors out of a GGUF file (or a Hugging Face folder's GGUF view) with their
// shapes checked against the hyper-parameters: shared by the transformer's loader and the MoE
// FFN's (model/moe_ffn.h). Every error names the file and the tensor.
#ifndef UNMASK_MODEL_GGUF_TENSORS_H_
#define UNMASK_MODEL_GGUF_TENSORS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/compute.h"
#include "core/status.h"
#include "core/tensor.h"
#include "format/gguf.h"
#include "ops/linear.h"

namespace unmask {

// The tensor `name` as a view of its mapped data, row-major shape `shape` (1-D or 2-D; GGUF
// stores dims innermost first; leading 1-sized dims ignored). Errors: NotFound for a missing
// tensor; InvalidArgument for another shape; Unimplemented for a dtype other than f32, f16,
// bf16, q8_0, q4_0, q4_1, q4_K, q6_K.
StatusOr<TensorView> GetTensor(const gguf::GgufFile& f, const std::string& name,
                               std::initializer_list<int64_t> shape);
// A 1-D tensor of n elements converted to f32.
StatusOr<std::vector<float>> GetVector(const gguf::GgufFile& f, const std::string& name, int64_t n);
// An optional bias vector of n elements (f32 or f16); empty when the file has no such tensor.
StatusOr<std::vector<float>> GetBias(const gguf::GgufFile& f, const std::string& name, int64_t n);
// The [rows, cols] weight `name` prepared for Linear (errors of LinearWeight::Prepare name it).
StatusOr<LinearWeight> GetLinear(const gguf::GgufFile& f, const std::string& name, int64_t rows,
                                 int64_t cols, WeightMode mode, ComputeType compute);
// The `experts` [rows, cols] matrices of a stacked expert tensor (GGUF {cols, rows, experts}).
StatusOr<std::vector<TensorView>> GetExperts(const gguf::GgufFile& f, const std::string& name,
                                             int64_t experts, int64_t rows, int64_t cols);

}  // namespace unmask

#endif  // UNMASK_MODEL_GGUF_TENSORS_H_
