#include "hub/digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace unmask::hub {

struct Digest::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Digest::Digest(DigestKind kind, uint64_t size_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  const EVP_MD* md = kind == DigestKind::kSha256 ? EVP_sha256() : EVP_sha1();
  if (impl_->ctx == nullptr || EVP_DigestInit_ex(impl_->ctx, md, nullptr) != 1) {
    throw std::runtime_error("OpenSSL: cannot initialise a digest");
  }
  if (kind == DigestKind::kGitBlobSha1) {
    const std::string header = "blob " + std::to_string(size_bytes);
    EVP_DigestUpdate(impl_->ctx, header.data(), header.size() + 1);  // with its '\0'
  }
}

Digest::~Digest() { EVP_MD_CTX_free(impl_->ctx); }

void Digest::Update(const void* data, size_t n) {
  if (n > 0) EVP_DigestUpdate(impl_->ctx, data, n);
}

std::string Digest::HexFinal() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, out, &len);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 15];
  }
  return hex;
}

std::string HexDigest(DigestKind kind, std::string_view data) {
  Digest d(kind, data.size());
  d.Update(data.data(), data.size());
  return d.HexFinal();
}

Status HashFilePrefix(const std::string& path, uint64_t size_bytes, Digest* digest) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return NotFoundError("cannot open " + path);
  std::vector<char> buf(1 << 20);
  uint64_t left = size_bytes;
  while (left > 0) {
    const size_t want = left < buf.size() ? static_cast<size_t>(left) : buf.size();
    const size_t got = std::fread(buf.data(), 1, want, f);
    if (got == 0) break;
    digest->Update(buf.data(), got);
    left -= got;
  }
  std::fclose(f);
  if (left > 0)
    return DataLossError(path + " is shorter than " + std::to_string(size_bytes) + " bytes");
  return Status::Ok();
}

bool IsHex(std::string_view text, size_t n) {
  if (text.size() != n) return false;
  for (char c : text) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) return false;
  }
  return true;
}

}  // namespace unmask::hub
