#include "grammar/grammar.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace unmask::grammar {
namespace {

using Alternatives = std::vector<std::vector<std::vector<Elem>>>;  // rule -> alternative -> seq

// The rules that derive some string of the kind asked for: the empty string (chars_ok false: an
// alternative with a character never counts) or any finite string (chars_ok true). Worklist
// algorithm, linear in the grammar's size: an alternative counts once every rule in it does
// (a fixpoint of passes over all rules is quadratic on a chain of rules).
std::vector<bool> Derivable(const Alternatives& alts, bool chars_ok) {
  const size_t n = alts.size();
  std::vector<bool> derivable(n, false);
  std::vector<std::vector<size_t>> missing(n);  // per rule, alternative: rules not yet derivable
  std::vector<std::vector<std::pair<size_t, size_t>>> users(n);  // rule -> (rule, alt) using it
  std::vector<size_t> queue;
  auto mark = [&](size_t r) {
    if (!derivable[r]) {
      derivable[r] = true;
      queue.push_back(r);
    }
  };
  for (size_t r = 0; r < n; ++r) {
    missing[r].assign(alts[r].size(), 0);
    for (size_t a = 0; a < alts[r].size(); ++a) {
      bool possible = true;
      for (const Elem& e : alts[r][a]) {
        if (e.type == ElemType::kChar) {
          possible = possible && chars_ok;
        } else if (e.type == ElemType::kRule) {
          ++missing[r][a];
        }
      }
      if (!possible) {
        missing[r][a] = SIZE_MAX;  // never counts
        continue;
      }
      for (const Elem& e : alts[r][a]) {
        if (e.type == ElemType::kRule) users[static_cast<size_t>(e.value)].emplace_back(r, a);
      }
      if (missing[r][a] == 0) mark(r);
    }
  }
  while (!queue.empty()) {
    const size_t s = queue.back();
    queue.pop_back();
    for (const auto& [r, a] : users[s]) {
      if (--missing[r][a] == 0) mark(r);
    }
  }
  return derivable;
}

}  // namespace

bool CharClass::Matches(uint32_t cp) const {
  if (cp < 128) return ((ascii[cp >> 6] >> (cp & 63)) & 1) != 0;
  bool in = false;
  for (const auto& [a, b] : ranges) {
    if (cp >= a && cp <= b) {
      in = true;
      break;
    }
  }
  return in != negated;
}

bool CharClass::Intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges) {
      if (a <= hi && b >= lo) return true;
    }
    return false;
  }
  // Negated: true unless the ranges cover [lo, hi] entirely.
  std::vector<std::pair<uint32_t, uint32_t>> r = ranges;
  std::sort(r.begin(), r.end());
  uint64_t next = lo;  // first code point of [lo, hi] not yet known to be covered
  for (const auto& [a, b] : r) {
    if (a > next) break;
    if (b + 1ull > next) next = b + 1ull;
    if (next > hi) return false;
  }
  return next <= hi;
}

void CharClass::Finish() {
  ascii = {0, 0};
  for (uint32_t cp = 0; cp < 128; ++cp) {
    bool in = false;
    for (const auto& [a, b] : ranges) {
      if (cp >= a && cp <= b) {
        in = true;
        break;
      }
    }
    if (in != negated) ascii[cp >> 6] |= uint64_t{1} << (cp & 63);
  }
}

int32_t Grammar::FindRule(const std::string& name) const {
  for (size_t i = 0; i < rule_names.size(); ++i) {
    if (rule_names[i] == name) return static_cast<int32_t>(i);
  }
  return -1;
}

int32_t GrammarBuilder::Rule(const std::string& name) {
  // A hash index: grammars with thousands of auxiliary rules (spelled-out repetitions) made the
  // linear search quadratic (fuzz/grammar_fuzz.cc).
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  names_.push_back(name);
  alts_.emplace_back();
  defined_.push_back(false);
  const int32_t id = static_cast<int32_t>(names_.size() - 1);
  ids_.emplace(name, id);
  return id;
}

int32_t GrammarBuilder::NewRule(const std::string& base) {
  int& n = next_aux_[base];
  for (;;) {
    const std::string name = base + "~" + std::to_string(++n);
    if (ids_.find(name) == ids_.end()) return Rule(name);
  }
}

int32_t GrammarBuilder::AddClass(CharClass c) {
  c.Finish();
  classes_.push_back(std::move(c));
  return static_cast<int32_t>(classes_.size() - 1);
}

void GrammarBuilder::AddAlternative(int32_t rule, const std::vector<Elem>& seq) {
  num_elements_ += seq.size() + 1;
  alts_[static_cast<size_t>(rule)].push_back(seq);
  defined_[static_cast<size_t>(rule)] = true;
}

StatusOr<Grammar> GrammarBuilder::Build(const std::string& root) {
  const size_t n = names_.size();
  for (size_t r = 0; r < n; ++r) {
    if (!defined_[r]) {
      return InvalidArgumentError("grammar: rule '" + names_[r] + "' is used but never defined");
    }
  }
  Grammar g;
  g.root = -1;
  for (size_t r = 0; r < n; ++r) {
    if (names_[r] == root) g.root = static_cast<int32_t>(r);
  }
  if (g.root < 0) return InvalidArgumentError("grammar: no rule '" + root + "' (the root)");
  // Nullable rules (derive the empty string).
  const std::vector<bool> nullable = Derivable(alts_, /*chars_ok=*/false);
  // Every rule the root reaches must be able to end: one that cannot (each alternative needs it
  // again, as `x ::= "[" x "]"`) would let the matcher accept text that never completes, so a
  // constrained generation would run to its token limit (a JSON schema with a required
  // property that refers to the schema itself compiles to such a rule).
  const std::vector<bool> productive = Derivable(alts_, /*chars_ok=*/true);
  {
    std::vector<bool> reached(n, false);
    std::vector<size_t> todo = {static_cast<size_t>(g.root)};
    reached[static_cast<size_t>(g.root)] = true;
    while (!todo.empty()) {
      const size_t r = todo.back();
      todo.pop_back();
      if (!productive[r]) {
        return InvalidArgumentError("grammar: rule '" + names_[r] + "' " +
                                    std::string(kNeverEndsPhrase) +
                                    " (every alternative needs it again, so no finite text "
                                    "matches it)");
      }
      for (const auto& alt : alts_[r]) {
        for (const Elem& e : alt) {
          if (e.type == ElemType::kRule && !reached[static_cast<size_t>(e.value)]) {
            reached[static_cast<size_t>(e.value)] = true;
            todo.push_back(static_cast<size_t>(e.value));
          }
        }
      }
    }
  }
  // Left corners: rule r reaches s at the left when s appears in an alternative of r after only
  // nullable elements. A cycle in that graph is left recursion.
  std::vector<std::vector<int32_t>> left(n);
  for (size_t r = 0; r < n; ++r) {
    for (const auto& alt : alts_[r]) {
      for (const Elem& e : alt) {
        if (e.type == ElemType::kChar) break;
        left[r].push_back(e.value);
        if (!nullable[static_cast<size_t>(e.value)]) break;
      }
    }
  }
  // Depth-first search for a cycle, with an explicit stack: a chain of 100,000 rules (a few MB of
  // grammar text in a request) overflowed the thread's stack when this recursed per rule.
  std::vector<int> color(n, 0);                 // 0 new, 1 on the path, 2 done
  std::vector<std::pair<size_t, size_t>> path;  // (rule, next left corner to visit)
  for (size_t start = 0; start < n; ++start) {
    if (color[start] != 0) continue;
    color[start] = 1;
    path.emplace_back(start, 0);
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == left[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const auto u = static_cast<size_t>(left[r][next++]);
      if (color[u] == 1) {
        return InvalidArgumentError(
            "grammar: rule '" + names_[u] +
            "' is left-recursive (it can reach itself before any "
            "character; rewrite it with repetition, e.g. x ::= y (\",\" y)*)");
      }
      if (color[u] == 0) {
        color[u] = 1;
        path.emplace_back(u, 0);
      }
    }
  }
  g.rule_names = names_;
  g.classes = classes_;
  g.rule_alts.resize(n);
  for (size_t r = 0; r < n; ++r) {
    for (const auto& alt : alts_[r]) {
      g.rule_alts[r].push_back(static_cast<int32_t>(g.elems.size()));
      g.elems.insert(g.elems.end(), alt.begin(), alt.end());
      g.elems.push_back(Elem{ElemType::kEnd, 0});
    }
  }
  return g;
}

}  // namespace unmask::grammar
