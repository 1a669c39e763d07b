// Checksums of downloaded files (OpenSSL's EVP digests): SHA-256, which the Hugging Face hub
// reports for every Git LFS file (weights), and Git's blob SHA-1, the ETag of the hub's small
// files (config.json, tokenizer.json).
#ifndef UNMASK_TOOLS_HUB_DIGEST_H_
#define UNMASK_TOOLS_HUB_DIGEST_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace unmask::hub {

enum class DigestKind { kSha256, kGitBlobSha1 };

// An incremental digest. kGitBlobSha1 is SHA-1 over "blob <size>\0" + content (git hash-object),
// so the size must be known before the first byte.
class Digest {
 public:
  // `size_bytes`: the content's length, used by kGitBlobSha1 only.
  Digest(DigestKind kind, uint64_t size_bytes);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void Update(const void* data, size_t n);
  // Lowercase hex: 64 characters (SHA-256) or 40 (SHA-1). Call once.
  std::string HexFinal();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The digest of a whole string (tests, small files).
std::string HexDigest(DigestKind kind, std::string_view data);

// The digest of the first `size_bytes` of the file at `path` into `digest` (resuming a download
// re-hashes what is already on disk). Errors: NotFound when it cannot be opened, DataLoss when it
// is shorter than `size_bytes`.
Status HashFilePrefix(const std::string& path, uint64_t size_bytes, Digest* digest);

// True for `n` lowercase-or-uppercase hexadecimal characters.
bool IsHex(std::string_view text, size_t n);

}  // namespace unmask::hub

#endif  // UNMASK_TOOLS_HUB_DIGEST_H_
