#include "model/loader.h"

#include <unistd.h>

#include "model/config.h"
#include "model/transformer.h"

namespace unmask {
namespace {

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

WeightMode ChooseWeightMode(const gguf::GgufFile& f, const ModelConfig& config,
                            WeightMode requested) {
  if (requested != WeightMode::kAuto) return requested;
  // AR decoding feeds one position per forward: it is bound by the bytes of weights read, so the
  // weights stay in their stored width (a Q4 file reads ~7x fewer bytes than f32 copies).
  if (!config.is_diffusion()) return WeightMode::kOnTheFly;
  uint64_t f32_bytes = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    f32_bytes += static_cast<uint64_t>(t.num_elements()) * 4;
  }
  const uint64_t memory = PhysicalMemoryBytes();
  return (memory == 0 || f32_bytes <= memory / 2) ? WeightMode::kPackedF32 : WeightMode::kOnTheFly;
}

}  // namespace

StatusOr<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options) {
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> opened, gguf::GgufFile::Open(path));
  std::shared_ptr<const gguf::GgufFile> file(std::move(opened));
  UNMASK_ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(*file));
  LoadedModel out;
  auto tokenizer = Tokenizer::FromGguf(*file);
  if (!tokenizer.ok()) return tokenizer.status();  // its messages name the file and key
  out.tokenizer = std::move(tokenizer).value();
  if (config.is_diffusion() && out.tokenizer->special().mask == kNoToken) {
    return FailedPreconditionError(path + ": diffusion model '" + config.architecture +
                                   "' has no mask token (tokenizer.ggml.mask_token_id)");
  }
  out.weight_mode = ChooseWeightMode(*file, config, options.weight_mode);
  out.backend = options.backend ? options.backend : DefaultBackend();
  UNMASK_ASSIGN_OR_RETURN(auto model,
                          TransformerModel::Create(file, std::move(config), out.weight_mode,
                                                   options.progress, out.backend));
  if (out.tokenizer->vocab_size() > model->config().vocab_size) {
    return InvalidArgumentError(path + ": the tokenizer has " +
                                std::to_string(out.tokenizer->vocab_size()) +
                                " tokens but token_embd.weight only " +
                                std::to_string(model->config().vocab_size) + " rows");
  }
  out.model = std::move(model);
  out.file = std::move(file);
  return out;
}

}  // namespace unmask
