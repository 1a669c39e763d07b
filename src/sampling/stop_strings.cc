#include "sampling/stop_strings.h"

#include <algorithm>

namespace unmask {

size_t FindStopString(std::string_view text, const std::vector<std::string>& stops,
                      size_t* match_length) {
  size_t best = std::string_view::npos, best_len = 0;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    const size_t at = text.find(s);
    if (at == std::string_view::npos) continue;
    if (at < best || (at == best && s.size() > best_len)) {
      best = at;
      best_len = s.size();
    }
  }
  if (match_length != nullptr) *match_length = best_len;
  return best;
}

size_t PartialStopSuffix(std::string_view text, const std::vector<std::string>& stops) {
  size_t longest = 0;
  for (const std::string& s : stops) {
    const size_t max_len = std::min(text.size(), s.empty() ? 0 : s.size() - 1);
    for (size_t len = max_len; len > longest; --len) {
      if (text.substr(text.size() - len) == std::string_view(s).substr(0, len)) {
        longest = len;
        break;
      }
    }
  }
  return longest;
}

}  // namespace unmask
