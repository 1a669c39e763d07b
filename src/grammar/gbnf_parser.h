// GBNF, llama.cpp's grammar text format (grammars/README.md in llama.cpp), parsed into a Grammar:
//
//   root  ::= "{" ws pair ("," ws pair)* "}"     # a rule; comments run to the end of the line
//   pair  ::= [a-z]+ ":" ws ([0-9] | "-" [0-9]+)
//   ws    ::= [ \t\n]{0,8}
//
// Terms: "literal" (escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH), [class] and [^class]
// with ranges a-z, `.` (any code point), a rule name ([A-Za-z0-9_-]+), ( group ) with `|`
// alternatives. Postfixes: * + ? {m} {m,} {m,n} (applied to the whole preceding term, a literal
// included). A rule ends at a newline outside parentheses unless the next line starts with `|`.
// The root rule is `root`.
#ifndef UNMASK_GRAMMAR_GBNF_PARSER_H_
#define UNMASK_GRAMMAR_GBNF_PARSER_H_

#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace unmask::grammar {

// Most repetitions one {m,n} may spell out (each optional copy is a rule).
inline constexpr int kMaxRepetition = 4096;
// Most elements (classes and references, over all alternatives and rules) a grammar may have once
// its repetitions are spelled out: nested counts multiply ("(x{4096}){4096}" would be 16M), and a
// grammar arrives in a request (fuzz/grammar_fuzz.cc found one that took seconds to build).
inline constexpr size_t kMaxGrammarElements = size_t{1} << 20;
// Deepest nesting of parenthesized groups (the parser recurses per group).
inline constexpr int kMaxGroupDepth = 256;

// Errors: InvalidArgument with the line and column ("grammar: line 3, column 7: expected '::='"),
// for syntax errors, invalid escapes or UTF-8, a repetition over kMaxRepetition or m > n, groups
// nested deeper than kMaxGroupDepth, and the GrammarBuilder::Build errors (undefined rule, no
// root, a rule that can never end, left recursion); ResourceExhausted, with the same location,
// for a grammar over kMaxGrammarElements once expanded. Cost: linear in the expanded size.
StatusOr<Grammar> ParseGbnf(std::string_view text);

}  // namespace unmask::grammar

#endif  // UNMASK_GRAMMAR_GBNF_PARSER_H_
