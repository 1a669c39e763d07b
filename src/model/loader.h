// Loads a model and its tokenizer from a GGUF file, onto a backend. Tools create the backend with
// CreateBackend (backend/backend.h, included here: LoadOptions carries it) and reach it through
// this header; they include nothing of src/backend or src/ops themselves.
#ifndef UNMASK_MODEL_LOADER_H_
#define UNMASK_MODEL_LOADER_H_

#include <functional>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "format/gguf.h"
#include "model/model.h"
#include "model/sampling_defaults.h"
#include "ops/linear.h"
#include "tokenizer/tokenizer.h"

namespace unmask {

struct LoadOptions {
  // kAuto: causal (AR) models keep their stored dtype (kOnTheFly: batch-1 decoding is bound by
  // the bytes of weights read) when the backend computes in f32; diffusion models, and AR models
  // on a bf16 / int8 backend, get packed weights in the backend's compute type
  // (Backend::compute(); their forwards are GEMMs over many positions) when the packed size fits
  // in half of physical memory, else (f32 only) kept in the file's dtype (kOnTheFly).
  WeightMode weight_mode = WeightMode::kAuto;
  // Called as tensors are prepared: (done, total).
  std::function<void(int, int)> progress;
  // The backend the model computes on and owns a reference to; null: DefaultBackend().
  std::shared_ptr<Backend> backend;
};

struct LoadedModel {
  std::shared_ptr<const gguf::GgufFile> file;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  WeightMode weight_mode = WeightMode::kPacked;  // the mode actually used
  std::shared_ptr<Backend> backend;              // the model's backend (model->backend())
  SamplingDefaults sampling_defaults;            // the file's recommended sampling (may be empty)
};

// `path` is a GGUF file or a Hugging Face checkpoint folder (model/hf_import.h).
// Errors: those of GgufFile::Open (ImportHfCheckpoint for a folder), ReadModelConfig,
// Tokenizer::FromGguf and model creation, each naming the file; InvalidArgument for kOnTheFly
// weights on a bf16 / int8 backend; ResourceExhausted when bf16 / int8 packed weights would not fit
// in half of memory; FailedPrecondition when a diffusion model has no mask token; Unimplemented for
// a backend the transformer cannot run on (any but the CPU backend in this build).
StatusOr<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options);

}  // namespace unmask

#endif  // UNMASK_MODEL_LOADER_H_
