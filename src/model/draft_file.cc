#include "model/draft_file.h"

#include <cmath>
#include <set>

namespace unmask {

StatusOr<int64_t> GetBoundedInt(const gguf::GgufFile& f, const std::string& key, int64_t lo,
                                int64_t hi) {
  auto v = f.GetInt(key);
  if (!v.ok()) return v.status();  // (names the file)
  if (*v < lo || *v > hi) {
    return InvalidArgumentError(f.path() + ": " + key + " = " + std::to_string(*v) +
                                ", expected a value in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  }
  return *v;
}

StatusOr<std::vector<int32_t>> ReadDraftVocab(const gguf::GgufFile& f, const std::string& key,
                                              int64_t vocab) {
  std::vector<int32_t> out;
  if (f.Find(key) == nullptr) {
    out.resize(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i) out[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    return out;
  }
  auto ids = f.GetIntArray(key);
  if (!ids.ok()) return ids.status();  // (names the file)
  if (ids->empty()) return InvalidArgumentError(f.path() + ": " + key + " is empty");
  std::set<int64_t> seen;
  for (int64_t id : *ids) {
    if (id < 0 || id >= vocab) {
      return InvalidArgumentError(f.path() + ": " + key + " holds id " + std::to_string(id) +
                                  ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
    if (!seen.insert(id).second) {
      return InvalidArgumentError(f.path() + ": " + key + " repeats id " + std::to_string(id));
    }
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

std::string DraftFilePathFor(const std::string& model_path, const std::string& kind) {
  std::string p = model_path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const std::string ext = ".gguf";
  if (p.size() > ext.size() && p.compare(p.size() - ext.size(), ext.size(), ext) == 0) {
    return p.substr(0, p.size() - ext.size()) + "." + kind + ".gguf";
  }
  return p + "/" + kind + ".gguf";
}

StatusOr<std::string> DraftFileKind(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> f, gguf::GgufFile::Open(path));
  auto arch = f->GetString("general.architecture");
  if (!arch.ok()) return arch.status().WithContext(path);
  if (*arch != "medusa" && *arch != "eagle") {
    return InvalidArgumentError(path + ": general.architecture is '" + *arch +
                                "', not draft heads ('medusa' or 'eagle')");
  }
  return *arch;
}

ArgMaxProb ArgMaxWithProb(std::span<const float> l) {
  ArgMaxProb r;
  if (l.empty()) return r;
  size_t best = 0;
  for (size_t j = 1; j < l.size(); ++j) {
    if (l[j] > l[best]) best = j;
  }
  double z = 0;
  for (float x : l) z += std::exp(static_cast<double>(x - l[best]));
  r.index = static_cast<int64_t>(best);
  r.prob = std::isfinite(z) && z > 0 ? 1.0 / z : 0.0;
  return r;
}

}  // namespace unmask
