#include "model/medusa_heads.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "model/draft_file.h"
#include "model/gguf_tensors.h"

namespace unmask {
namespace {

constexpr int64_t kMaxHeads = 15;   // the chain verifier's longest draft (decode/decoder_ar.h)
constexpr int64_t kMaxLayers = 16;  // residual blocks per head; Medusa uses 1

}  // namespace

StatusOr<std::unique_ptr<MedusaHeads>> MedusaHeads::Load(const std::string& path,
                                                         const ModelConfig& base) {
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> file, gguf::GgufFile::Open(path));
  return FromFile(std::move(file), base);
}

StatusOr<std::unique_ptr<MedusaHeads>> MedusaHeads::FromFile(std::unique_ptr<gguf::GgufFile> file,
                                                             const ModelConfig& base) {
  if (file == nullptr) return InvalidArgumentError("Medusa heads: no file");
  const gguf::GgufFile& f = *file;
  auto arch = f.GetString("general.architecture");
  if (!arch.ok()) return arch.status();  // (names the file)
  if (*arch != "medusa") {
    return InvalidArgumentError(f.path() + ": general.architecture is '" + *arch +
                                "', expected 'medusa' (a draft-heads file)");
  }
  auto heads = std::unique_ptr<MedusaHeads>(new MedusaHeads());
  heads->path_ = f.path();
  UNMASK_ASSIGN_OR_RETURN(const int64_t k, GetBoundedInt(f, "medusa.head_count", 1, kMaxHeads));
  UNMASK_ASSIGN_OR_RETURN(const int64_t layers,
                          GetBoundedInt(f, "medusa.layer_count", 1, kMaxLayers));
  UNMASK_ASSIGN_OR_RETURN(const int64_t hidden,
                          GetBoundedInt(f, "medusa.embedding_length", 1, 1 << 20));
  UNMASK_ASSIGN_OR_RETURN(const int64_t vocab, GetBoundedInt(f, "medusa.vocab_size", 1, 1 << 30));
  if (hidden != base.hidden_size) {
    return InvalidArgumentError(f.path() + ": medusa.embedding_length = " + std::to_string(hidden) +
                                " but the base model's hidden size is " +
                                std::to_string(base.hidden_size) + " (heads of another model?)");
  }
  if (vocab != base.vocab_size) {
    return InvalidArgumentError(f.path() + ": medusa.vocab_size = " + std::to_string(vocab) +
                                " but the base model's vocabulary has " +
                                std::to_string(base.vocab_size) +
                                " tokens (heads of another model?)");
  }
  UNMASK_ASSIGN_OR_RETURN(heads->draft_ids_, ReadDraftVocab(f, "medusa.draft_vocab", vocab));
  const int64_t n_draft = static_cast<int64_t>(heads->draft_ids_.size());
  heads->hidden_ = hidden;
  heads->layers_ = static_cast<int32_t>(layers);
  heads->heads_.resize(static_cast<size_t>(k));
  size_t bytes = 0;
  auto tensor_bytes = [&](const std::string& name) {
    const gguf::TensorInfo* t = f.FindTensor(name);
    return t == nullptr ? size_t{0} : static_cast<size_t>(t->num_bytes);
  };
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < layers; ++j) {
      const std::string stem =
          "medusa.blk." + std::to_string(i) + ".res." + std::to_string(j) + ".";
      Block b;
      UNMASK_ASSIGN_OR_RETURN(b.w, GetLinear(f, stem + "weight", hidden, hidden,
                                             WeightMode::kOnTheFly, ComputeType::kF32));
      UNMASK_ASSIGN_OR_RETURN(b.b, GetVector(f, stem + "bias", hidden));
      bytes += tensor_bytes(stem + "weight") + tensor_bytes(stem + "bias");
      heads->heads_[static_cast<size_t>(i)].push_back(std::move(b));
    }
  }
  UNMASK_ASSIGN_OR_RETURN(heads->output_, GetLinear(f, "medusa.output.weight", n_draft, hidden,
                                                    WeightMode::kOnTheFly, ComputeType::kF32));
  bytes += tensor_bytes("medusa.output.weight");
  heads->weight_bytes_ = bytes;
  heads->file_ = std::move(file);
  return heads;
}

double MedusaHeads::flops_per_head() const {
  const double h = static_cast<double>(hidden_);
  return 2.0 * (static_cast<double>(layers_) * h * h + static_cast<double>(draft_ids_.size()) * h);
}

Status MedusaHeads::Predict(std::span<const float> h, int32_t k, MedusaScratch& scratch,
                            MedusaGuess* out) const {
  if (k < 0 || k >= head_count()) {
    return InvalidArgumentError("Medusa head " + std::to_string(k) + " outside [0, " +
                                std::to_string(head_count()) + ")");
  }
  return Run(h, k, 1, scratch, out);
}

Status MedusaHeads::PredictChain(std::span<const float> h, int32_t n, MedusaScratch& scratch,
                                 std::vector<MedusaGuess>* out) const {
  if (n < 1 || n > std::min<int32_t>(head_count(), 16)) {
    return InvalidArgumentError("Medusa heads: a chain of " + std::to_string(n) +
                                " heads, expected 1 to " +
                                std::to_string(std::min<int32_t>(head_count(), 16)));
  }
  out->resize(static_cast<size_t>(n));
  return Run(h, 0, n, scratch, out->data());
}

Status MedusaHeads::Run(std::span<const float> h, int32_t k0, int32_t n, MedusaScratch& scratch,
                        MedusaGuess* out) const {
  if (static_cast<int64_t>(h.size()) != hidden_) {
    return InvalidArgumentError("Medusa heads: a hidden state of " + std::to_string(h.size()) +
                                " values, expected " + std::to_string(hidden_));
  }
  const auto d = static_cast<size_t>(hidden_);
  const size_t v = draft_ids_.size();
  const auto rows = static_cast<size_t>(n);
  scratch.r.resize(rows * d);
  scratch.t.resize(d);
  scratch.logits.resize(rows * v);
  for (size_t i = 0; i < rows; ++i) {
    float* r = scratch.r.data() + i * d;
    std::copy(h.begin(), h.end(), r);
    for (const Block& b : heads_[static_cast<size_t>(k0) + i]) {
      UNMASK_RETURN_IF_ERROR(Linear(TensorView{r, DType::kF32, Shape{1, hidden_}}, b.w,
                                    TensorView{scratch.t.data(), DType::kF32, Shape{1, hidden_}}));
      for (size_t j = 0; j < d; ++j) {
        const float z = scratch.t[j] + b.b[j];
        r[j] += z / (1.0f + std::exp(-z));  // SiLU
      }
    }
  }
  UNMASK_RETURN_IF_ERROR(
      Linear(TensorView{scratch.r.data(), DType::kF32, Shape{n, hidden_}}, output_,
             TensorView{scratch.logits.data(), DType::kF32, Shape{n, static_cast<int64_t>(v)}}));
  for (size_t i = 0; i < rows; ++i) {
    // Greedy guess and its softmax probability (max-subtracted; the first maximum wins ties, as
    // the base model's greedy choice does).
    const ArgMaxProb g = ArgMaxWithProb(std::span<const float>(scratch.logits.data() + i * v, v));
    out[i].token = draft_ids_[static_cast<size_t>(g.index)];
    out[i].prob = g.prob;
  }
  return Status::Ok();
}

std::string MedusaHeadsPathFor(const std::string& model_path) {
  return DraftFilePathFor(model_path, "medusa");
}

}  // namespace unmask
