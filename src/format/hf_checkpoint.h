// A Hugging Face checkpoint folder as files (MODELS.md §1.1-1.2, §1.8): config.json and the
// weights, either one model.safetensors or shards listed by model.safetensors.index.json
// ({"metadata": {...}, "weight_map": {tensor name: shard file}}; the weight_map is what counts,
// metadata.total_size is informational and not checked). The folder's meaning (which
// architecture, which tensor is which) is model/hf_import.h's business.
//
// Checks: config.json must be a JSON object; the index's weight_map an object of strings naming
// files inside the folder (no '/' or ".."); every shard a valid safetensors file
// (format/safetensors.h); every mapped name present in the shard it is mapped to; no tensor in two
// shards. Errors are one line naming the file and the field or tensor.
#ifndef UNMASK_FORMAT_HF_CHECKPOINT_H_
#define UNMASK_FORMAT_HF_CHECKPOINT_H_

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "format/safetensors.h"

namespace unmask::format {

// True when `path` is a directory (a checkpoint folder rather than a model file).
bool IsDirectory(const std::string& path);

class HfCheckpoint {
 public:
  // Errors: NotFound when `dir` is not a directory, has no config.json, or has neither
  // model.safetensors nor model.safetensors.index.json (or a shard the index names is missing);
  // DataLoss naming the file and field for JSON that does not parse or has the wrong shape, and
  // the errors of SafetensorsFile::Open for a shard.
  static StatusOr<std::unique_ptr<HfCheckpoint>> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  // "<dir>/config.json", for messages.
  std::string config_path() const { return dir_ + "/config.json"; }
  const nlohmann::json& config() const { return config_; }
  // Every tensor of every shard, in shard order then data order.
  const std::vector<const safetensors::TensorInfo*>& tensors() const { return tensors_; }
  // nullptr when absent.
  const safetensors::TensorInfo* Find(std::string_view name) const;
  // The shard file holding `name` ("" when absent), for messages.
  std::string ShardOf(std::string_view name) const;
  // Total bytes of the shards.
  size_t weight_file_bytes() const;
  int num_shards() const { return static_cast<int>(shards_.size()); }

 private:
  HfCheckpoint() = default;
  std::string dir_;
  nlohmann::json config_;
  std::vector<std::unique_ptr<safetensors::SafetensorsFile>> shards_;
  std::vector<const safetensors::TensorInfo*> tensors_;
  std::map<std::string, std::pair<const safetensors::TensorInfo*, size_t>, std::less<>> by_name_;
};

// Reads a JSON file. Errors: NotFound when it cannot be read; DataLoss naming the file and the
// parser's position for malformed JSON.
StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

}  // namespace unmask::format

#endif  // UNMASK_FORMAT_HF_CHECKPOINT_H_
