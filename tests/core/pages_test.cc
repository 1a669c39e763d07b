#include "core/pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace unmask {
namespace {

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// The process's resident set in bytes (/proc/self/statm, second field).
size_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * PageSize() : 0;
}

// Only the whole pages inside the range are released; the partial ones at the ends are left.
TEST(PagesTest, ReleasesOnlyTheWholePagesInside) {
  const size_t page = PageSize();
  std::vector<uint8_t> buffer(8 * page, 7);
  const auto base = reinterpret_cast<uintptr_t>(buffer.data());
  const uintptr_t aligned = (base + page - 1) / page * page;
  auto* p = reinterpret_cast<uint8_t*>(aligned);
  const size_t expected_whole =
      ReleasePages(p + 1, 2 * page);  // 1 whole page: [p + page, p + 2 page)
  EXPECT_TRUE(expected_whole == page || expected_whole == 0) << expected_whole;  // 0: refused
  EXPECT_EQ(ReleasePages(p + 1, page - 2), 0u);  // inside one page: nothing whole
  EXPECT_EQ(ReleasePages(nullptr, 4 * page), 0u);
  EXPECT_EQ(ReleasePages(p, 0), 0u);
  // Private (anonymous) memory keeps its contents: the advice reclaims, it never discards.
  EXPECT_EQ(ReleasePages(p, 6 * page) % page, 0u);
  for (size_t i = 0; i < buffer.size(); ++i) ASSERT_EQ(buffer[i], 7) << "byte " << i;
}

// The pages of a mapped file leave the resident set and read back the same bytes.
TEST(PagesTest, MappedFilePagesLeaveTheResidentSetAndReadBackUnchanged) {
  const size_t page = PageSize();
  const size_t bytes = 1024 * page;  // 4 MiB with 4 KiB pages
  std::string path = ::testing::TempDir() + "/unmask_pages_test.XXXXXX";
  const int fd = mkstemp(path.data());
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> content(bytes);
  for (size_t i = 0; i < bytes; ++i) content[i] = static_cast<uint8_t>(i * 131 + i / page);
  ASSERT_EQ(write(fd, content.data(), bytes), static_cast<ssize_t>(bytes));
  ASSERT_EQ(fsync(fd), 0);  // clean pages: reclaim needs no writeback
  void* m = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  const auto* p = static_cast<const uint8_t*>(m);
  // Every page read (the sums are compared, so the reads stay in the optimized build).
  uint64_t sum = 0, want = 0;
  for (size_t i = 0; i < bytes; i += page) {
    sum += p[i];
    want += content[i];
  }
  ASSERT_EQ(sum, want);
  const size_t touched = ResidentBytes();
  const size_t released = ReleasePages(p, bytes);
  const size_t after = ResidentBytes();
  if (released == 0) {
    std::printf("[   NOTE   ] madvise(MADV_PAGEOUT) refused here: only the contents are checked\n");
  } else {
    EXPECT_EQ(released, bytes);
    // Most of the 4 MiB left (a few pages may be busy or shared with the page cache of another
    // process reading the file: the kernel then keeps them).
    EXPECT_GE(touched - std::min(touched, after), bytes / 2)
        << "resident " << touched << " -> " << after << " bytes";
  }
  for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], content[i]) << "byte " << i;
  munmap(m, bytes);
  close(fd);
  unlink(path.c_str());
}

}  // namespace
}  // namespace unmask
