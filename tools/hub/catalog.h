// The model catalogue: short names ("llada:8b-instruct", "sdar:4b-chat") for Hugging Face
// checkpoints, each with its source (repo, revision), the files to fetch, pinned checksums where
// known and the decoding defaults of its reference code. The catalogue shipped with unmask is
// data/catalog.json (embedded in the binary); $UNMASK_CATALOG names another file of the same
// format (a site's own list, or a test's).
//
// Format (catalog_version 1):
//   {"catalog_version": 1,
//    "models": [{"name": "family:tag", "repo": "org/name", "revision": "main",
//                "description": "...", "license": "...", "source": "URL of the model card",
//                "include": ["*.json", "*.safetensors"],        (optional: the files to fetch)
//                "files": [{"path": "...", "size": N, "sha256": "64 hex"}],   (optional pins)
//                "size_bytes": N,                                (optional: download size)
//                "defaults": {"flag-name": value, ...},          (unmask's long flag names)
//                "defaults_source": "where the defaults come from"}]}
#ifndef UNMASK_TOOLS_HUB_CATALOG_H_
#define UNMASK_TOOLS_HUB_CATALOG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace unmask::hub {

inline constexpr int kCatalogVersion = 1;

struct PinnedFile {
  std::string path;    // relative path in the repository
  uint64_t size = 0;   // bytes (0: not pinned)
  std::string sha256;  // 64 lowercase hex ("" : not pinned)
};

struct CatalogEntry {
  std::string name;      // "family:tag"
  std::string repo;      // Hugging Face repository id "org/name"
  std::string revision;  // branch, tag or 40-hex commit
  std::string description;
  std::string license;
  std::string source;                // model card URL
  std::vector<std::string> include;  // glob patterns (fnmatch); empty: the default selection
  std::vector<PinnedFile> files;
  uint64_t size_bytes = 0;  // approximate download size (0: unknown)
  // Flag long name (no dashes) -> value, in catalogue order: applied to generate, chat, serve and
  // bench for the flags the command line does not give.
  std::vector<std::pair<std::string, std::string>> defaults;
  std::string defaults_source;

  // The defaults as command-line words: "--block-length 32 --threshold 0.95".
  std::string DefaultsAsFlags() const;
};

struct Catalog {
  std::string origin;  // "built-in" or the file's path
  std::vector<CatalogEntry> models;

  // The entry named `name` (exact), or nullptr.
  const CatalogEntry* Find(std::string_view name) const;
  // The entry whose repo is `repo` (case-insensitive, as the hub treats ids), or nullptr.
  const CatalogEntry* FindRepo(std::string_view repo) const;
};

// Parses and checks a catalogue. Errors (InvalidArgument, naming `origin` and the entry): not
// JSON, catalog_version other than 1, a name that is not "family:tag" of [a-z0-9._-], a repo that
// is not a valid hub id, a pinned sha256 that is not 64 hex digits, an unsafe file path, a default
// whose key is not a flag name or whose value is not a string, number or boolean, a duplicate
// name.
StatusOr<Catalog> ParseCatalog(std::string_view text, std::string origin);

// The catalogue in effect: $UNMASK_CATALOG when set (a file), else the built-in one.
// Errors: those of ParseCatalog; NotFound for an unreadable $UNMASK_CATALOG.
StatusOr<Catalog> LoadCatalog();

// The catalogue compiled into the binary (data/catalog.json).
extern const char* const kBuiltinCatalogJson;

// True for a Hugging Face repository id: "org/name", each part 1..96 characters of
// [A-Za-z0-9._-], not starting or ending with '.' or '-', no "--" or "..".
bool IsValidRepoId(std::string_view repo);
// True for a revision the hub accepts in a URL path: a branch or tag name of printable ASCII
// without spaces, "..", backslash or a leading '/', 1..255 characters.
bool IsValidRevision(std::string_view revision);
// True for a file path inside a repository that is safe to create under a cache folder:
// relative, components separated by '/', none empty, "." or "..", no backslash, no control
// characters, at most 1024 bytes.
bool IsSafeRepoPath(std::string_view path);

}  // namespace unmask::hub

#endif  // UNMASK_TOOLS_HUB_CATALOG_H_
