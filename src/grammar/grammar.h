// A context-free grammar over Unicode code points, in the form the matcher walks: each rule is a
// list of alternatives, each alternative a sequence of elements (a character class or a reference
// to a rule) stored contiguously in `elems` and ended by a kEnd element. Repetitions, groups and
// optional parts of the text form (GBNF, gbnf_parser.h) are lowered to auxiliary rules, so the
// matcher sees only classes, references and ends (the representation of llama.cpp's
// llama-grammar.cpp; the parsing algorithm is a nondeterministic pushdown automaton whose stacks
// hold positions in these sequences).
//
// A grammar is valid (Validate) when every referenced rule is defined, the root exists and no rule
// is left-recursive (directly or through nullable prefixes): left recursion would make the
// expansion of a stack loop forever.
#ifndef UNMASK_GRAMMAR_GRAMMAR_H_
#define UNMASK_GRAMMAR_GRAMMAR_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace unmask::grammar {

// A set of code points: the union of inclusive `ranges`, complemented when `negated`.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // [first, last], first <= last
  bool negated = false;

  bool Matches(uint32_t cp) const;
  // True when some code point of [lo, hi] is in the set (for a partial UTF-8 sequence, whose
  // completions are such an interval).
  bool Intersects(uint32_t lo, uint32_t hi) const;
  // The ASCII members (code points 0-127) as a bitmap, computed by Finish().
  std::array<uint64_t, 2> ascii{};
  void Finish();
};

enum class ElemType : uint8_t { kEnd, kChar, kRule };

struct Elem {
  ElemType type = ElemType::kEnd;
  int32_t value = 0;  // kChar: index into Grammar::classes; kRule: rule id
};

struct Grammar {
  std::vector<Elem> elems;  // every alternative's sequence, each ended by kEnd
  std::vector<std::vector<int32_t>>
      rule_alts;                        // per rule: start index in `elems` of each alternative
  std::vector<std::string> rule_names;  // per rule
  std::vector<CharClass> classes;       // referenced by kChar elements
  int32_t root = -1;

  int32_t FindRule(const std::string& name) const;  // -1 when absent
  int64_t num_rules() const { return static_cast<int64_t>(rule_alts.size()); }
};

// The words of Build's error for a rule the root reaches that no finite text completes ("rule 'x'
// can never end ..."): a caller that generated the grammar (the JSON schema compiler) tells it
// apart from its own bugs by them.
inline constexpr std::string_view kNeverEndsPhrase = "can never end";

// Builds a Grammar: rules are declared by name (forward references allowed) and each alternative
// is appended as a sequence of elements.
class GrammarBuilder {
 public:
  // The id of the rule named `name`, declared now if it was not (defined later by AddAlternative).
  int32_t Rule(const std::string& name);
  // A fresh auxiliary rule named `<base>~<n>` ('~' cannot appear in a GBNF name, so it never
  // collides with a rule the text defines).
  int32_t NewRule(const std::string& base);
  int32_t AddClass(CharClass c);
  const std::string& name(int32_t rule) const { return names_[static_cast<size_t>(rule)]; }
  // Appends the alternative `seq` (classes and references; no kEnd) to rule `rule`.
  void AddAlternative(int32_t rule, const std::vector<Elem>& seq);
  // Elements added so far (alternatives' lengths + 1 each): the parser's size budget.
  size_t num_elements() const { return num_elements_; }
  // The grammar rooted at the rule named `root`. Errors: InvalidArgument naming an undefined rule
  // ("rule 'x' is used but never defined"), a missing root, a reachable rule that can never end
  // (kNeverEndsPhrase), or a left-recursive rule.
  StatusOr<Grammar> Build(const std::string& root);

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> ids_;   // names_ index
  std::unordered_map<std::string, int> next_aux_;  // NewRule: the next <base>~<n> to try
  size_t num_elements_ = 0;
  std::vector<std::vector<std::vector<Elem>>> alts_;
  std::vector<bool> defined_;
  std::vector<CharClass> classes_;
};

}  // namespace unmask::grammar

#endif  // UNMASK_GRAMMAR_GRAMMAR_H_
