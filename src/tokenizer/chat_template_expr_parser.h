// Chat template internals (src/tokenizer/ only): the expression parser, over the tokens of one tag
// (grammar and precedence of jinja2/parser.py). The statement parser drives it: it reads keywords
// and assignment targets with the token accessors and parses each expression with ParseExpression.
#ifndef UNMASK_TOKENIZER_CHAT_TEMPLATE_EXPR_PARSER_H_
#define UNMASK_TOKENIZER_CHAT_TEMPLATE_EXPR_PARSER_H_

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template_ast.h"
#include "tokenizer/chat_template_lexer.h"

namespace unmask::chat_template_internal {

// Expression parser over one tag's tokens (grammar and precedence of jinja2/parser.py).
class ExprParser {
 public:
  // Parses `toks` (from Tokenize: non-empty, ending with a kEnd token).
  explicit ExprParser(std::vector<Tok> toks) : toks_(std::move(toks)) {}

  // The token `ahead` positions past the current one (the final kEnd token past the end).
  const Tok& Peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  // Whether every token before kEnd has been consumed.
  bool AtEnd() const { return Peek().kind == TokKind::kEnd; }
  // Whether the token `ahead` positions on is the operator `op`.
  bool IsOp(std::string_view op, size_t ahead = 0) const {
    return Peek(ahead).kind == TokKind::kOp && Peek(ahead).text == op;
  }
  // Whether the token `ahead` positions on is the name `name`.
  bool IsName(std::string_view name, size_t ahead = 0) const {
    return Peek(ahead).kind == TokKind::kName && Peek(ahead).text == name;
  }
  // Returns the current token and moves past it (never past kEnd).
  const Tok& Next() {
    const Tok& t = Peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  // Consumes the operator `op`; InvalidArgument when the current token is anything else.
  Status Expect(std::string_view op);
  // Consumes and returns a name; InvalidArgument when the current token is not one.
  StatusOr<std::string> ExpectName();
  // InvalidArgument unless every token has been consumed.
  Status ExpectEnd();

  // Parses one expression. with_condition=false stops before an `if` (the filter of a for loop)
  // instead of reading a conditional expression `a if c else b`.
  StatusOr<ExprPtr> ParseExpression(bool with_condition = true);

 private:
  // ParseExpression without the nesting check.
  StatusOr<ExprPtr> ParseExpressionInner(bool with_condition);
  // `a or b or ...`.
  StatusOr<ExprPtr> ParseOr();
  // `a and b and ...`.
  StatusOr<ExprPtr> ParseAnd();
  // `not a` (nested, bounded by kMaxNesting) or a comparison.
  StatusOr<ExprPtr> ParseNot();
  // A comparison chain: ==, !=, <, >, <=, >=, in, not in.
  StatusOr<ExprPtr> ParseCompare();
  // `+` and `-`.
  StatusOr<ExprPtr> ParseMath1();
  // `~` (string concatenation).
  StatusOr<ExprPtr> ParseConcat();
  // `*`, `/`, `//` and `%`.
  StatusOr<ExprPtr> ParseMath2();
  // `**`.
  StatusOr<ExprPtr> ParsePow();
  // Unary `-` / `+`, then postfix operators and, if `with_filter`, filters and tests.
  StatusOr<ExprPtr> ParseUnary(bool with_filter);
  // ParseUnary(true), as a member usable by ParseLeftAssociative.
  StatusOr<ExprPtr> ParseFilteredUnary();
  // `next (op next)*` folded to the left, for the operators `ops` (keywords such as "or" when
  // `keywords`, else operator tokens).
  StatusOr<ExprPtr> ParseLeftAssociative(std::initializer_list<std::string_view> ops, bool keywords,
                                         StatusOr<ExprPtr> (ExprParser::*next)());
  // ParseUnary without the nesting check.
  StatusOr<ExprPtr> ParseUnaryInner(bool with_filter);
  // A literal, a name, a parenthesised expression or tuple, a [list] or a {dict}.
  StatusOr<ExprPtr> ParsePrimary();
  // Call arguments from '(' up to and including ')', into call->args and call->kwargs.
  Status ParseCallArgs(Expr* call);
  // The `.name`, `.0`, `[index]`, `[slice]` and `(call)` suffixes of `node`.
  StatusOr<ExprPtr> ParsePostfix(ExprPtr node);
  // The `| filter(...)`, `is [not] test ...` and `(call)` suffixes of `node`.
  StatusOr<ExprPtr> ParseFilters(ExprPtr node);

  std::vector<Tok> toks_;
  size_t pos_ = 0;
  int depth_ = 0;  // recursion depth of ParseExpression / ParseNot / ParseUnary
};

}  // namespace unmask::chat_template_internal

#endif  // UNMASK_TOKENIZER_CHAT_TEMPLATE_EXPR_PARSER_H_
