#include "format/json_scan.h"

#include <algorithm>

namespace unmask::format {

JsonBrackets ScanJsonBrackets(std::string_view text, size_t from) {
  JsonBrackets out;
  int depth = 0;
  bool in_string = false;
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      out.deepest = std::max(out.deepest, ++depth);
    } else if (c == ']' || c == '}') {
      if (--depth == 0 && out.first_value_end == std::string_view::npos) {
        out.first_value_end = i + 1;
      }
    }
  }
  return out;
}

}  // namespace unmask::format
