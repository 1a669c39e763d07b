#include "format/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace unmask::format {

MappedFile::~MappedFile() { Release(); }

void MappedFile::Release() {
  if (mapping_ != nullptr) munmap(mapping_, size_);
  mapping_ = nullptr;
  data_ = nullptr;
  size_ = 0;
  owned_.clear();
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this == &other) return *this;
  Release();
  mapping_ = std::exchange(other.mapping_, nullptr);
  size_ = std::exchange(other.size_, 0);
  owned_ = std::move(other.owned_);  // a moved vector keeps its buffer: data_ stays valid
  data_ = std::exchange(other.data_, nullptr);
  return *this;
}

StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return NotFoundError("cannot open '" + path + "': " + std::generic_category().message(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return NotFoundError("cannot stat '" + path + "': " + std::generic_category().message(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return NotFoundError("'" + path + "' is not a regular file");
  }
  MappedFile f;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* mapping = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return ResourceExhaustedError("cannot mmap '" + path + "' (" + std::to_string(f.size_) +
                                    " bytes): " + std::generic_category().message(err));
    }
    f.mapping_ = mapping;
    f.data_ = static_cast<const uint8_t*>(mapping);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return f;
}

MappedFile MappedFile::FromBytes(std::vector<uint8_t> bytes) {
  MappedFile f;
  f.owned_ = std::move(bytes);
  f.data_ = f.owned_.data();
  f.size_ = f.owned_.size();
  return f;
}

}  // namespace unmask::format
