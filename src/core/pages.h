// Memory pages the process will not read again: a weight's stored bytes once a packed copy of
// them is made (ops/linear.cc).
#ifndef UNMASK_CORE_PAGES_H_
#define UNMASK_CORE_PAGES_H_

#include <cstddef>

namespace unmask {

// Asks the kernel to reclaim the whole pages inside [data, data + bytes) now (Linux's
// madvise(MADV_PAGEOUT), 5.4 and later): clean pages of a mapped file leave the resident set
// (and the page cache, when no other process maps them), other pages are written to swap, or
// stay where there is none. The contents never change: a later read faults the page back in,
// so it is safe for any memory, owned or mapped, even one read again after all (it costs a
// disk read then). The partial pages at either end are left alone (they may hold bytes still
// in use). Returns the bytes of the whole pages asked for (0 when there are none, or when the
// kernel refuses the advice: an older kernel, a sandbox), for the load's statistics.
size_t ReleasePages(const void* data, size_t bytes);

}  // namespace unmask

#endif  // UNMASK_CORE_PAGES_H_
