#include "core/pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace unmask {

size_t ReleasePages(const void* data, size_t bytes) {
#ifdef MADV_PAGEOUT
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  if (data == nullptr || page == 0) return 0;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  if (bytes > UINTPTR_MAX - begin) return 0;
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes) / page * page;
  if (last <= first) return 0;
  // The advice reclaims; it never discards contents (unlike MADV_DONTNEED on private memory).
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_PAGEOUT) != 0) return 0;
  return last - first;
#else
  (void)data;
  (void)bytes;
  return 0;
#endif
}

}  // namespace unmask
