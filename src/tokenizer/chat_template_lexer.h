// Chat template internals (src/tokenizer/ only): the lexer. A template is cut into text, output
// ({{ }}) and statement ({% %}) segments with Jinja's whitespace control applied, and the content
// of a tag is cut into expression tokens.
#ifndef UNMASK_TOKENIZER_CHAT_TEMPLATE_LEXER_H_
#define UNMASK_TOKENIZER_CHAT_TEMPLATE_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace unmask::chat_template_internal {

// Jinja normalises all newlines to "\n" and drops one trailing newline (keep_trailing_newline).
std::string NormalizeSource(std::string_view source);

// What a segment holds: literal text, the content of a {{ }} tag or of a {% %} tag.
enum class SegmentKind { kText, kOutput, kStatement };

// One piece of the template. Comments ({# #}) produce no segment.
struct Segment {
  SegmentKind kind;
  std::string text;  // literal text, or the tag content
  size_t offset;     // of the text, or of the tag content
};

// Jinja lexer with trim_blocks and lstrip_blocks on. `source` is already newline-normalised.
// InvalidArgument for an unterminated tag or string literal.
StatusOr<std::vector<Segment>> Lex(const std::string& source);

// Kind of an expression token; kEnd closes every token list.
enum class TokKind { kName, kString, kInt, kFloat, kOp, kEnd };

// One expression token.
struct Tok {
  TokKind kind;
  std::string text;  // name, decoded string, operator
  int64_t value = 0;
  size_t offset;
  double number = 0;  // kFloat
};

// Tokens of a tag's content `s`, whose first byte is at template offset `base`; ends with a kEnd
// token. InvalidArgument for bad characters, escapes or literals.
StatusOr<std::vector<Tok>> Tokenize(std::string_view s, size_t base);

}  // namespace unmask::chat_template_internal

#endif  // UNMASK_TOKENIZER_CHAT_TEMPLATE_LEXER_H_
