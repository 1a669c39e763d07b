#include "grammar/grammar.h"

#include <algorithm>
#include <functional>

namespace unmask::grammar {

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
  // Nullable rules (derive the empty string), by fixpoint.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : alts_[r]) {
        bool all = true;
        for (const Elem& e : alt) {
          if (e.type == ElemType::kChar ||
              (e.type == ElemType::kRule && !nullable[static_cast<size_t>(e.value)])) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = changed = true;
          break;
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
  std::vector<int> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::string cycle;
  std::function<bool(size_t)> dfs = [&](size_t r) {
    color[r] = 1;
    for (int32_t s : left[r]) {
      const size_t u = static_cast<size_t>(s);
      if (color[u] == 1) {
        cycle = names_[u];
        return true;
      }
      if (color[u] == 0 && dfs(u)) return true;
    }
    color[r] = 2;
    return false;
  };
  for (size_t r = 0; r < n; ++r) {
    if (color[r] == 0 && dfs(r)) {
      return InvalidArgumentError(
          "grammar: rule '" + cycle +
          "' is left-recursive (it can reach itself before any "
          "character; rewrite it with repetition, e.g. x ::= y (\",\" y)*)");
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
