// What a model hub (or a site's catalogue) sends `unmask pull`: the model-info JSON (file list,
// sizes, checksums, paths to create under the cache) and catalogue files ($UNMASK_CATALOG),
// then the file selection and GGUF quantization names over what parsed.
// Input: one byte (bit 0: a catalogue, else a model-info answer), then the JSON. Seeds:
// data/catalog.json and the model info of the project's HF checkpoint (scripts/fuzz_seeds.py).
#include <cstddef>
#include <cstdint>
#include <string>

#include "hub/catalog.h"
#include "hub/hub_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask::hub;
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) != 0) {
    auto c = ParseCatalog(text, "fuzz");
    if (c.ok()) {
      for (const CatalogEntry& e : c->models) {
        (void)e.DefaultsAsFlags();
        if (!IsValidRepoId(e.repo) || !IsValidRevision(e.revision)) __builtin_trap();
        for (const PinnedFile& p : e.files) {
          if (!IsSafeRepoPath(p.path)) __builtin_trap();
        }
      }
    }
    return 0;
  }
  auto info = ParseRepoInfo(text, "org/name");
  if (!info.ok()) return 0;
  for (const RepoFile& f : info->files) {
    if (!IsSafeRepoPath(f.path)) __builtin_trap();  // the invariant the cache relies on
    (void)GgufQuantName(f.path);
  }
  const std::string quant = (data[0] & 2) != 0 ? "Q8_0" : "";
  (void)SelectFiles(*info, {}, {}, quant);
  (void)SelectFiles(*info, {"*.json", "*/*.gguf"}, {"*.bin"}, "");
  return 0;
}
