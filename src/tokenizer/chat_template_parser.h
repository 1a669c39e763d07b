// Chat template internals (src/tokenizer/ only): the statement parser, from lexed segments to the
// statement tree (if/elif/else, for/else, set, break, continue, output and text).
#ifndef UNMASK_TOKENIZER_CHAT_TEMPLATE_PARSER_H_
#define UNMASK_TOKENIZER_CHAT_TEMPLATE_PARSER_H_

#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template_ast.h"
#include "tokenizer/chat_template_lexer.h"

namespace unmask::chat_template_internal {

// Parses the segments of a whole template (from Lex) into its top-level statements.
// InvalidArgument for malformed syntax, Unimplemented for constructs outside the subset (both
// with the byte offset).
StatusOr<std::vector<Node>> ParseTemplate(std::vector<Segment> segments);

}  // namespace unmask::chat_template_internal

#endif  // UNMASK_TOKENIZER_CHAT_TEMPLATE_PARSER_H_
