// The local cache of downloaded checkpoints, in the Hugging Face hub's own layout, so a folder
// that `unmask pull` fetched is one that transformers and huggingface-cli find, and the other way
// round:
//   <cache>/models--<org>--<name>/blobs/<etag>            the files' bytes (etag: the LFS sha256 or
//                                                         the git blob sha1); <etag>.incomplete
//                                                         while downloading
//   <cache>/models--<org>--<name>/snapshots/<commit>/<path>   relative symlinks to the blobs
//   <cache>/models--<org>--<name>/refs/<revision>          the commit a branch or tag pointed to
//   <cache>/.locks/models--<org>--<name>/<etag>.lock       flock(2) while a blob is written
// Source: huggingface_hub's cache layout (docs "Understand caching"; file_download.py).
#ifndef UNMASK_TOOLS_HUB_HUB_CACHE_H_
#define UNMASK_TOOLS_HUB_HUB_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace unmask::hub {

// The cache folder: `override_dir` when not empty, else $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else $HOME/.cache/huggingface/hub.
std::string CacheDir(const std::string& override_dir = "");

// "org/name" -> "models--org--name".
std::string RepoFolderName(const std::string& repo);
// "models--org--name" -> "org/name"; nullopt for another name.
std::optional<std::string> RepoFromFolderName(const std::string& folder);

struct CachedSnapshot {
  std::string commit;
  std::string path;                // <cache>/models--.../snapshots/<commit>
  std::vector<std::string> refs;   // the revisions whose ref names this commit ("main")
  std::vector<std::string> files;  // relative paths, sorted
  uint64_t size_bytes = 0;         // the files' sizes (their blobs)
  bool complete = true;            // every file's blob is present
};

struct CachedRepo {
  std::string repo;  // "org/name"
  std::string path;  // <cache>/models--org--name
  std::vector<CachedSnapshot> snapshots;
  uint64_t blob_bytes = 0;        // all blobs on disk (what `rm` frees)
  uint64_t incomplete_bytes = 0;  // interrupted downloads (*.incomplete)
};

// The repositories in `cache_dir`, sorted by repo id; a missing folder is an empty cache.
// Folders that do not follow the layout are skipped.
std::vector<CachedRepo> ListCache(const std::string& cache_dir);
// The cached repo `repo` (case-insensitive id), or nullopt.
std::optional<CachedRepo> FindCachedRepo(const std::string& cache_dir, const std::string& repo);
// The snapshot of `revision` (a ref name or a commit, or a prefix of 7+ hex digits) that is
// complete, or nullopt.
std::optional<CachedSnapshot> FindSnapshot(const CachedRepo& repo, const std::string& revision);

// Deletes <cache>/models--org--name. Returns the bytes freed. Errors: NotFound when the repo is
// not cached; Internal when the folder cannot be removed (the message names it).
StatusOr<uint64_t> RemoveCachedRepo(const std::string& cache_dir, const std::string& repo);

// Human-readable size: "5.9 MB", "14.7 GB" (decimal units, as the hub shows them).
std::string FormatBytes(uint64_t bytes);

}  // namespace unmask::hub

#endif  // UNMASK_TOOLS_HUB_HUB_CACHE_H_
