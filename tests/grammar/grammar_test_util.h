// Helpers for the grammar tests: run text through a Matcher.
#ifndef UNMASK_TESTS_GRAMMAR_GRAMMAR_TEST_UTIL_H_
#define UNMASK_TESTS_GRAMMAR_GRAMMAR_TEST_UTIL_H_

#include <memory>
#include <string>
#include <string_view>

#include "grammar/gbnf_parser.h"
#include "grammar/matcher.h"

namespace unmask::grammar::testing {

// Whether `text` is a prefix of the language / a whole sentence of it.
struct Verdict {
  bool prefix = false;
  bool sentence = false;
};

inline Verdict Check(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  Utf8Partial u;
  const StateId s = m.AdvanceBytes(m.initial(), text, &u);
  return Verdict{s != kDead, s != kDead && u.need == 0 && m.CanEnd(s)};
}

inline std::shared_ptr<const Grammar> MustParse(std::string_view gbnf) {
  auto g = ParseGbnf(gbnf);
  if (!g.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(g).value());
}

}  // namespace unmask::grammar::testing

#endif  // UNMASK_TESTS_GRAMMAR_GRAMMAR_TEST_UTIL_H_
