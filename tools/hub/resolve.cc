#include "hub/resolve.h"

#include <cctype>
#include <filesystem>
#include <optional>

#include "hub/hub_api.h"
#include "hub/hub_cache.h"
#include "hub/pull.h"

namespace unmask::hub {

namespace fs = std::filesystem;

StatusOr<ResolvedModel> ResolveModel(const std::string& text, const Catalog& catalog,
                                     const std::string& cache_dir) {
  ResolvedModel out;
  std::error_code ec;
  if (fs::exists(text, ec)) {
    out.path = text;
    return out;
  }
  if (!LooksLikeModelReference(text, catalog)) return NotFoundError("no such file: " + text);
  UNMASK_ASSIGN_OR_RETURN(ModelReference ref, ParseModelReference(text, catalog));
  const std::string cache = CacheDir(cache_dir);
  const std::string revision = ref.revision.empty() ? "main" : ref.revision;
  std::optional<CachedRepo> repo = FindCachedRepo(cache, ref.repo);
  std::optional<CachedSnapshot> snap;
  if (repo) snap = FindSnapshot(*repo, revision);
  if (!snap) {
    return NotFoundError("'" + text + "': no such file, and no model of that name in the cache " +
                         cache + " (to download it from the hub: unmask pull " + text + ")");
  }
  out.from_cache = true;
  out.repo = repo->repo;
  out.commit = snap->commit;
  out.path = snap->path;
  if (ref.entry != nullptr) {
    out.name = ref.entry->name;
    out.defaults = ref.entry->defaults;
  }
  // A GGUF repository: the file of the quantization.
  std::string quant = ref.quant;
  for (char& c : quant) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  bool safetensors = false;
  std::vector<std::string> ggufs;
  for (const std::string& f : snap->files) {
    if (f.size() > 12 && f.substr(f.size() - 12) == ".safetensors") safetensors = true;
    if (f.size() > 5 && f.substr(f.size() - 5) == ".gguf" && f.rfind("mmproj", 0) != 0) {
      if (quant.empty() || GgufQuantName(f) == quant) {
        ggufs.push_back(f);
      }
    }
  }
  if (!safetensors && !ggufs.empty()) {
    if (ggufs.size() > 1) {
      std::string list;
      for (const std::string& g : ggufs) list += (list.empty() ? "" : ", ") + g;
      return InvalidArgumentError("'" + text + "' holds several GGUF files (" + list +
                                  "): name one as " + ref.repo + ":QUANT or give its path");
    }
    out.path = snap->path + "/" + ggufs.front();
  } else if (!safetensors && !ref.quant.empty()) {
    return NotFoundError("'" + text + "': no " + ref.quant +
                         " GGUF was downloaded: run 'unmask pull " + text + "'");
  }
  return out;
}

}  // namespace unmask::hub
