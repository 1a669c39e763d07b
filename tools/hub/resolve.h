// What -m names: a file or folder on disk, or a model that `unmask pull` fetched (a catalogue
// name such as "llada:8b-instruct", or a hub id "org/name", "org/name-GGUF:Q4_K_M").
#ifndef UNMASK_TOOLS_HUB_RESOLVE_H_
#define UNMASK_TOOLS_HUB_RESOLVE_H_

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "hub/catalog.h"

namespace unmask::hub {

struct ResolvedModel {
  std::string path;         // the file or folder to load
  bool from_cache = false;  // a pulled model (else `path` is what was given)
  std::string name;         // the catalogue name, when the model is in the catalogue
  std::string repo;
  std::string commit;
  // The catalogue's decoding defaults (flag long name -> value), empty for a plain path.
  std::vector<std::pair<std::string, std::string>> defaults;
};

// An existing path is itself. Otherwise a model reference (ParseModelReference) resolves to its
// complete snapshot in the cache `cache_dir` ("" : CacheDir()) at its revision (the catalogue's,
// else "main"): the snapshot folder, or for a GGUF repository the GGUF file of the chosen (or
// only) quantization. Errors: NotFound "'X' is not downloaded: run 'unmask pull X'" for a
// reference that is not in the cache, NotFound "no such file" for anything else that does not
// exist; InvalidArgument for a GGUF snapshot with several quantizations and none chosen.
StatusOr<ResolvedModel> ResolveModel(const std::string& text, const Catalog& catalog,
                                     const std::string& cache_dir = "");

}  // namespace unmask::hub

#endif  // UNMASK_TOOLS_HUB_RESOLVE_H_
