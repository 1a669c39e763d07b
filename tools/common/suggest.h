// "Did you mean ...?" for a mistyped name (a command-line flag, a request field): the known name
// closest to it by edit distance.
#ifndef UNMASK_TOOLS_COMMON_SUGGEST_H_
#define UNMASK_TOOLS_COMMON_SUGGEST_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace unmask::tools {

// Levenshtein distance (insertions, deletions, substitutions; each costs 1) between `a` and `b`,
// ignoring ASCII case and treating '-' and '_' as the same character (--ctx_size, top-k).
size_t NameDistance(std::string_view a, std::string_view b);

// The name in `names` closest to `word`, or "" when none is within max(1, |word| / 3) edits (a
// suggestion further away than that is noise). Ties go to the earlier name. Leading dashes are
// compared too: pass flags with their dashes. Costs O(|word| x |name|) only for names whose length
// is within that many edits of the word's, so an arbitrarily long word is answered at once.
std::string ClosestName(std::string_view word, std::span<const std::string> names);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_SUGGEST_H_
