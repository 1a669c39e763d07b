// A quick scan of JSON text's brackets (strings and their escapes skipped; not a validation): how
// deep it nests and where its first bracketed value ends. For limits checked before a full parse
// (request bodies) and for finding the end of a JSON object inside other text (tool calls).
#ifndef UNMASK_FORMAT_JSON_SCAN_H_
#define UNMASK_FORMAT_JSON_SCAN_H_

#include <cstddef>
#include <string_view>

namespace unmask::format {

struct JsonBrackets {
  int deepest = 0;  // the deepest nesting of [ and { reached
  // One past the bracket that closes the first one opened (std::string_view::npos: it never
  // closes).
  size_t first_value_end = std::string_view::npos;
};

// Scans `text` from byte `from` to its end.
JsonBrackets ScanJsonBrackets(std::string_view text, size_t from = 0);

}  // namespace unmask::format

#endif  // UNMASK_FORMAT_JSON_SCAN_H_
