#include "common/suggest.h"

#include <algorithm>
#include <vector>

namespace unmask::tools {
namespace {

char Fold(char c) {
  if (c == '_') return '-';
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

}  // namespace

size_t NameDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t cost = Fold(a[i - 1]) == Fold(b[j - 1]) ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string ClosestName(std::string_view word, std::span<const std::string> names) {
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& name : names) {
    // The distance is at least the difference in length: a name that cannot be close enough is
    // not compared, so a megabyte-long unknown field costs nothing (found by
    // fuzz/openai_request_fuzz.cc: a 1.3 KB key took 0.4 s under the sanitizers).
    const size_t shorter = std::min(word.size(), name.size());
    if (std::max(word.size(), name.size()) - shorter > limit) continue;
    const size_t d = NameDistance(word, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best;
}

}  // namespace unmask::tools
