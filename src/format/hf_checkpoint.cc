#include "format/hf_checkpoint.h"

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace unmask::format {
namespace {

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A shard file name from the index: a plain file name inside the folder.
bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

}  // namespace

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond double (1e400: found by
    // fuzz/hf_config_fuzz.cc; it used to end the process).
    return DataLossError(path + ": not valid JSON (" + e.what() + ")");
  }
}

StatusOr<std::unique_ptr<HfCheckpoint>> HfCheckpoint::Open(const std::string& dir_in) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (!IsDirectory(dir)) return NotFoundError(dir + ": not a checkpoint folder");
  std::unique_ptr<HfCheckpoint> ck(new HfCheckpoint());
  ck->dir_ = dir;
  const std::string config_path = dir + "/config.json";
  if (!IsRegularFile(config_path)) {
    return NotFoundError(dir + ": no config.json (a Hugging Face checkpoint folder has one)");
  }
  UNMASK_ASSIGN_OR_RETURN(ck->config_, ReadJsonFile(config_path));
  if (!ck->config_.is_object()) return DataLossError(config_path + ": must be a JSON object");

  // The shard files, in the order they are first named.
  std::vector<std::string> shard_files;
  std::vector<std::pair<std::string, std::string>> mapped;  // tensor -> shard file
  const std::string index_path = dir + "/model.safetensors.index.json";
  if (IsRegularFile(index_path)) {
    UNMASK_ASSIGN_OR_RETURN(const nlohmann::json index, ReadJsonFile(index_path));
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      return DataLossError(index_path + ": weight_map must be an object of tensor name -> file");
    }
    std::set<std::string> seen;
    for (const auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string() || !IsPlainFileName(file.get<std::string>())) {
        return DataLossError(index_path + ": weight_map['" + name +
                             "'] must be the name of a file in the folder");
      }
      const std::string f = file.get<std::string>();
      if (seen.insert(f).second) shard_files.push_back(f);
      mapped.emplace_back(name, f);
    }
    if (shard_files.empty()) return DataLossError(index_path + ": weight_map is empty");
  } else if (IsRegularFile(dir + "/model.safetensors")) {
    shard_files.push_back("model.safetensors");
  } else {
    return NotFoundError(dir +
                         ": no model.safetensors or model.safetensors.index.json (only "
                         "safetensors weights are read; convert .bin/.pth checkpoints first)");
  }

  for (size_t s = 0; s < shard_files.size(); ++s) {
    const std::string path = dir + "/" + shard_files[s];
    if (!IsRegularFile(path)) {
      return NotFoundError(index_path + ": names shard '" + shard_files[s] +
                           "', which is not in the folder");
    }
    UNMASK_ASSIGN_OR_RETURN(auto shard, safetensors::SafetensorsFile::Open(path));
    for (const safetensors::TensorInfo& t : shard->tensors()) {
      auto [it, inserted] = ck->by_name_.emplace(t.name, std::make_pair(&t, s));
      if (!inserted) {
        return DataLossError(path + ": tensor '" + t.name + "' is also in " +
                             shard_files[it->second.second]);
      }
      ck->tensors_.push_back(&t);
    }
    ck->shards_.push_back(std::move(shard));
  }
  for (const auto& [name, file] : mapped) {
    const auto it = ck->by_name_.find(name);
    if (it == ck->by_name_.end() || shard_files[it->second.second] != file) {
      return DataLossError(index_path + ": weight_map puts '" + name + "' in " + file +
                           ", which has no such tensor");
    }
  }
  return ck;
}

const safetensors::TensorInfo* HfCheckpoint::Find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.first;
}

std::string HfCheckpoint::ShardOf(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? std::string() : shards_[it->second.second]->path();
}

size_t HfCheckpoint::weight_file_bytes() const {
  size_t total = 0;
  for (const auto& s : shards_) total += s->file_size();
  return total;
}

}  // namespace unmask::format
