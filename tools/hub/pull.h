// `unmask pull`: fetches a checkpoint from the Hugging Face hub into the local cache (hub_cache.h
// layout), resuming interrupted downloads and verifying every file's checksum.
#ifndef UNMASK_TOOLS_HUB_PULL_H_
#define UNMASK_TOOLS_HUB_PULL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hub/catalog.h"
#include "hub/hub_http.h"

namespace unmask::hub {

// What a model name on the command line refers to.
struct ModelReference {
  std::string text;                     // as given
  const CatalogEntry* entry = nullptr;  // the catalogue entry (points into the Catalog)
  std::string repo;                     // "org/name"
  std::string revision;                 // "" : the entry's, else "main"
  std::string quant;                    // GGUF repos: "Q4_K_M" of "org/name:Q4_K_M"
};

// Parses "family:tag" (a catalogue name), "org/name", "org/name:QUANT", with an optional
// "hf.co/", "huggingface.co/" or "https://huggingface.co/" in front. Errors: InvalidArgument for
// anything else (SuggestModelName adds the close catalogue name the user probably meant).
StatusOr<ModelReference> ParseModelReference(std::string_view text, const Catalog& catalog);
// True when `text` has the form of a model reference (a catalogue name, or org/name[:QUANT]);
// says nothing about whether it exists.
bool LooksLikeModelReference(std::string_view text, const Catalog& catalog);

struct PullEvent {
  enum class Kind { kResolved, kFileStart, kFileProgress, kFileDone, kNote };
  Kind kind = Kind::kNote;
  std::string path;     // the file (kFile*), or the commit (kResolved)
  uint64_t done = 0;    // bytes on disk of this file
  uint64_t total = 0;   // its size (kResolved: the bytes to download in all)
  uint64_t reused = 0;  // kFileDone: bytes that were already there (cache or resume)
  std::string note;     // kNote: a retry, a wait for a lock
};

struct PullOptions {
  std::string cache_dir;  // "" : CacheDir()
  std::string endpoint;   // "" : HubEndpoint()
  std::string revision;   // "" : the reference's, the entry's, else "main"
  std::vector<std::string> include, exclude;
  HttpOptions http;  // token "" : HubToken()
  // Consecutive failed attempts of one file (without a byte of progress) before giving up.
  int max_attempts = 6;
  double retry_base_s = 0.5;     // backoff: base, 2x base, 4x base, ... capped at 30 s
  bool verify_existing = false;  // re-hash blobs that are already in the cache
  std::function<void(const PullEvent&)> on_event;
};

struct PullResult {
  std::string repo;
  std::string revision;
  std::string commit;
  std::string snapshot_path;  // the folder to give -m
  size_t files = 0;
  uint64_t downloaded_bytes = 0;
  uint64_t reused_bytes = 0;
};

// Fetches `ref`. Each file goes to blobs/<etag>.incomplete, is resumed from there after an
// interruption (this run's retries, or a later run), is checked against its checksum (LFS:
// sha256; other files: git blob sha1; and the catalogue's pinned sha256 and size) and only then
// renamed into place and linked into snapshots/<commit>/. Errors: those of the hub
// (HubErrorMessage: NotFound for 404, FailedPrecondition for 401/403), DataLoss for a checksum or
// size mismatch (the partial file is deleted), ResourceExhausted when the disk has not room for
// what is left, FailedPrecondition for a network failure after max_attempts or an interrupt (what
// was fetched stays for the next run), InvalidArgument for a selection that matches nothing or a
// catalogue pin the hub contradicts.
StatusOr<PullResult> Pull(const ModelReference& ref, const PullOptions& options);

}  // namespace unmask::hub

#endif  // UNMASK_TOOLS_HUB_PULL_H_
