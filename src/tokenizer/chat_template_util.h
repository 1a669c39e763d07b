// Chat template internals (src/tokenizer/ only): limits, error constructors and character classes
// shared by the lexer, the parsers and the renderer.
#ifndef UNMASK_TOKENIZER_CHAT_TEMPLATE_UTIL_H_
#define UNMASK_TOKENIZER_CHAT_TEMPLATE_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace unmask::chat_template_internal {

inline constexpr int kMaxNesting = 128;     // statement and expression nesting in the parser
inline constexpr int kMaxHeight = 256;      // expression tree height
inline constexpr int kMaxValueDepth = 128;  // nesting of list/dict values built at run time
inline constexpr size_t kMaxString = size_t{16} << 20;  // bytes per string value
inline constexpr int64_t kMaxRange = 100000;            // elements produced by range()

// " at offset N": the suffix of every error message.
std::string At(size_t offset);

// InvalidArgument "chat template: <what> at offset N" (malformed template syntax).
Status SyntaxError(std::string_view what, size_t offset);

// Unimplemented "chat template: unsupported <what> at offset N" (outside the supported subset).
Status Unsupported(std::string_view what, size_t offset);

// Space, tab, form feed or vertical tab.
inline bool IsSpaceNoNewline(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }

// IsSpaceNoNewline or a line break ('\n', '\r').
inline bool IsSpace(char c) { return IsSpaceNoNewline(c) || c == '\n' || c == '\r'; }

}  // namespace unmask::chat_template_internal

#endif  // UNMASK_TOKENIZER_CHAT_TEMPLATE_UTIL_H_
