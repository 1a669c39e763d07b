// The bytes of a model file: a read-only private mmap of a regular file, or bytes held in memory
// (tests, FromBytes readers). Shared by the GGUF and safetensors readers. Move-only.
#ifndef UNMASK_FORMAT_MAPPED_FILE_H_
#define UNMASK_FORMAT_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace unmask::format {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Errors: NotFound when `path` cannot be opened or is not a regular file (the message has the
  // OS error); ResourceExhausted when it cannot be mapped. An empty file maps to size() == 0.
  static StatusOr<MappedFile> Open(const std::string& path);
  static MappedFile FromBytes(std::vector<uint8_t> bytes);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // mmap base, or nullptr for owned bytes
  std::vector<uint8_t> owned_;
};

}  // namespace unmask::format

#endif  // UNMASK_FORMAT_MAPPED_FILE_H_
