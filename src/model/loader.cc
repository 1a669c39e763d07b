#include "model/loader.h"

#include <unistd.h>

#include "format/hf_checkpoint.h"
#include "model/config.h"
#include "model/hf_import.h"
#include "model/hf_vocab_keys.h"
#include "model/transformer.h"

namespace unmask {
namespace {

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

// The weight mode for `requested` and the backend's compute type. Errors: InvalidArgument for
// kOnTheFly with a compute type other than f32; ResourceExhausted when packed weights of that
// type would not fit (only bf16 / int8 compute insist on packing).
StatusOr<WeightMode> ChooseWeightMode(const gguf::GgufFile& f, const ModelConfig& config,
                                      WeightMode requested, ComputeType compute) {
  const bool low_precision = compute != ComputeType::kF32;
  if (requested == WeightMode::kOnTheFly && low_precision) {
    return InvalidArgumentError(
        f.path() + ": " + std::string(ComputeTypeName(compute)) +
        " compute multiplies packed weights; weights kept in their stored types (native) are "
        "multiplied in f32 or with int8 activations by their own kernels: use packed (or auto) "
        "weights with it, or f32 compute");
  }
  if (requested != WeightMode::kAuto) return requested;
  // AR decoding feeds one position per forward: it is bound by the bytes of weights read, so the
  // weights stay in their stored width (a Q4 file reads ~7x fewer bytes than f32 copies), unless
  // a lower-precision compute type was asked for (it needs packed weights).
  if (!config.is_diffusion() && !low_precision) return WeightMode::kOnTheFly;
  uint64_t packed_bytes = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    packed_bytes +=
        static_cast<uint64_t>(t.num_elements()) * static_cast<uint64_t>(ComputeTypeBytes(compute));
  }
  const uint64_t memory = PhysicalMemoryBytes();
  if (memory == 0 || packed_bytes <= memory / 2) return WeightMode::kPacked;
  if (low_precision) {
    return ResourceExhaustedError(
        f.path() + ": its weights packed for " + std::string(ComputeTypeName(compute)) +
        " compute would take " + std::to_string(packed_bytes >> 20) + " MiB, more than half of " +
        "this machine's " + std::to_string(memory >> 20) + " MiB of memory");
  }
  return WeightMode::kOnTheFly;
}

}  // namespace

StatusOr<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options) {
  // A folder is a Hugging Face checkpoint, seen as the GGUF its conversion would write.
  // The tokenizer of a folder follows Hugging Face's rules (LoadHfFolderTokenizer), which GGUF
  // keys cannot all carry: the view is built without tokenizer keys.
  const bool folder = format::IsDirectory(path);
  UNMASK_ASSIGN_OR_RETURN(
      std::unique_ptr<gguf::GgufFile> opened,
      folder ? ImportHfCheckpoint(path, /*with_tokenizer=*/false) : gguf::GgufFile::Open(path));
  std::shared_ptr<const gguf::GgufFile> file(std::move(opened));
  UNMASK_ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(*file));
  LoadedModel out;
  auto defaults = ReadSamplingDefaults(*file);
  if (!defaults.ok()) return defaults.status().WithContext(path);
  out.sampling_defaults = *defaults;
  auto tokenizer = folder ? LoadHfFolderTokenizer(path) : Tokenizer::FromGguf(*file);
  if (!tokenizer.ok()) return tokenizer.status();  // its messages name the file and key
  out.tokenizer = std::move(tokenizer).value();
  if (config.needs_mask_token() && out.tokenizer->special().mask == kNoToken) {
    return FailedPreconditionError(path + ": diffusion model '" + config.architecture +
                                   "' has no mask token (tokenizer.ggml.mask_token_id)");
  }
  out.backend = options.backend ? options.backend : DefaultBackend();
  const ComputeType compute = out.backend->compute();
  UNMASK_ASSIGN_OR_RETURN(out.weight_mode,
                          ChooseWeightMode(*file, config, options.weight_mode, compute));
  UNMASK_ASSIGN_OR_RETURN(
      auto model, TransformerModel::Create(file, std::move(config), out.weight_mode, compute,
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
