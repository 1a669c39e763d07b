#include "decode/schedule.h"

#include <cstddef>

namespace unmask {

std::vector<int64_t> NumTransferTokens(int64_t num_masked, int64_t steps) {
  if (steps <= 0) return {};
  std::vector<int64_t> n(static_cast<std::size_t>(steps), num_masked / steps);
  const int64_t rem = num_masked % steps;
  for (int64_t i = 0; i < rem; ++i) ++n[static_cast<std::size_t>(i)];
  return n;
}

}  // namespace unmask
