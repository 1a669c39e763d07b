// Chat template lexer: newline normalisation, segmentation with whitespace control (Jinja
// lexer.py with trim_blocks and lstrip_blocks) and expression tokenizing.
#include "tokenizer/chat_template_lexer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/chat_template_util.h"
#include "tokenizer/unicode_util.h"

namespace unmask::chat_template_internal {

// Jinja normalises all newlines to "\n" and drops one trailing newline (keep_trailing_newline).
std::string NormalizeSource(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t k = 0; k < source.size(); ++k) {
    if (source[k] == '\r') {
      out += '\n';
      if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
    } else {
      out += source[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Jinja lexer with trim_blocks and lstrip_blocks on. `source` is already newline-normalised.
StatusOr<std::vector<Segment>> Lex(const std::string& source) {
  std::vector<Segment> segments;
  size_t pos = 0;
  bool line_starting = true;  // the pending text starts a line (template start or after "\n")
  const size_t n = source.size();
  while (pos <= n) {
    // Next tag opener.
    size_t open = std::string::npos;
    for (size_t k = source.find('{', pos); k != std::string::npos && k + 1 < n;
         k = source.find('{', k + 1)) {
      const char c = source[k + 1];
      if (c == '{' || c == '%' || c == '#') {
        open = k;
        break;
      }
    }
    std::string text = source.substr(pos, open == std::string::npos ? n - pos : open - pos);
    if (open == std::string::npos) {
      if (!text.empty()) segments.push_back({SegmentKind::kText, std::move(text), pos});
      break;
    }
    const char opener = source[open + 1];
    const bool is_block = opener == '%' || opener == '#';
    size_t content_begin = open + 2;
    char left_mod = 0;
    if (content_begin < n &&
        (source[content_begin] == '-' || (is_block && source[content_begin] == '+'))) {
      left_mod = source[content_begin];
      ++content_begin;
    }
    if (left_mod == '-') {
      while (!text.empty() && IsSpace(text.back())) text.pop_back();
    } else if (is_block && left_mod != '+') {
      // lstrip_blocks: drop spaces/tabs between the start of the line and the tag.
      const size_t line_begin = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
      if (line_begin > 0 || line_starting) {
        bool blank = line_begin < text.size();
        for (size_t k = line_begin; k < text.size(); ++k)
          blank = blank && IsSpaceNoNewline(text[k]);
        if (blank) text.resize(line_begin);
      }
    }
    if (!text.empty()) segments.push_back({SegmentKind::kText, std::move(text), pos});

    // Tag end: scan, skipping string literals in {{ }} and {% %}.
    const std::string_view closer = opener == '{' ? "}}" : (opener == '%' ? "%}" : "#}");
    size_t close = std::string::npos;
    if (opener == '#') {
      close = source.find(closer, content_begin);
    } else {
      for (size_t k = content_begin; k + 1 < n; ++k) {
        const char c = source[k];
        if (c == '\'' || c == '"') {
          size_t j = k + 1;
          while (j < n && source[j] != c) j += source[j] == '\\' ? 2 : 1;
          if (j >= n) return SyntaxError("unterminated string literal", k);
          k = j;
          continue;
        }
        if (c == closer[0] && source[k + 1] == closer[1]) {
          close = k;
          break;
        }
      }
    }
    if (close == std::string::npos) {
      return SyntaxError("unterminated '{" + std::string(1, opener) + "'", open);
    }
    size_t content_end = close;
    char right_mod = 0;
    if (content_end > content_begin &&
        (source[content_end - 1] == '-' || (is_block && source[content_end - 1] == '+'))) {
      right_mod = source[content_end - 1];
      --content_end;
    }
    if (opener != '#') {
      segments.push_back({opener == '{' ? SegmentKind::kOutput : SegmentKind::kStatement,
                          source.substr(content_begin, content_end - content_begin),
                          content_begin});
    }
    pos = close + 2;
    line_starting = false;
    if (right_mod == '-') {
      while (pos < n && IsSpace(source[pos])) {
        line_starting = source[pos] == '\n';
        ++pos;
      }
    } else if (is_block && right_mod != '+' && pos < n && source[pos] == '\n') {
      ++pos;  // trim_blocks
      line_starting = true;
    }
    if (pos >= n) break;
  }
  return segments;
}

StatusOr<std::vector<Tok>> Tokenize(std::string_view s, size_t base) {
  std::vector<Tok> toks;
  size_t k = 0;
  while (k < s.size()) {
    const char c = s[k];
    if (IsSpace(c)) {
      ++k;
      continue;
    }
    const size_t at = base + k;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = k;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      toks.push_back({TokKind::kName, std::string(s.substr(k, j - k)), 0, at});
      k = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = k;
      int64_t value = 0;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) {
        if (s[j] != '_') {
          const int digit = s[j] - '0';
          if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
            return SyntaxError("integer literal too large", at);
          }
          value = value * 10 + digit;
        }
        ++j;
      }
      // A float literal: digits '.' digits [e[+-]digits] or digits e[+-]digits.
      const auto digit_at = [&](size_t p) {
        return p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]));
      };
      const auto exponent_at = [&](size_t p) {
        return p < s.size() && (s[p] == 'e' || s[p] == 'E') &&
               (digit_at(p + 1) ||
                (p + 1 < s.size() && (s[p + 1] == '+' || s[p + 1] == '-') && digit_at(p + 2)));
      };
      if ((j < s.size() && s[j] == '.' && digit_at(j + 1)) || exponent_at(j)) {
        if (s[j] == '.') {
          ++j;
          while (digit_at(j) || (j < s.size() && s[j] == '_')) ++j;
        }
        if (exponent_at(j)) {
          j += 2;
          while (digit_at(j)) ++j;
        }
        std::string text;
        for (size_t p = k; p < j; ++p) {
          if (s[p] != '_') text += s[p];
        }
        double x = 0;
        const auto r = std::from_chars(text.data(), text.data() + text.size(), x);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
          return SyntaxError("bad float literal", at);
        }
        toks.push_back({TokKind::kFloat, std::move(text), 0, at, x});
        k = j;
        continue;
      }
      toks.push_back({TokKind::kInt, std::string(s.substr(k, j - k)), value, at});
      k = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string out;
      size_t j = k + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          out += s[j];
          continue;
        }
        const char e = s[++j];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case '0':
            out += '\0';
            break;
          case '\\':
          case '\'':
          case '"':
            out += e;
            break;
          case '\n':
            break;  // line continuation
          case 'x':
          case 'u':
          case 'U': {
            const size_t digits = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
            uint32_t cp = 0;
            bool ok = j + digits < s.size();
            for (size_t d = 1; ok && d <= digits; ++d) {
              const char h = s[j + d];
              const int v = std::isdigit(static_cast<unsigned char>(h))
                                ? h - '0'
                                : (std::isxdigit(static_cast<unsigned char>(h))
                                       ? std::tolower(static_cast<unsigned char>(h)) - 'a' + 10
                                       : -1);
              ok = v >= 0;
              cp = cp * 16 + static_cast<uint32_t>(std::max(v, 0));
            }
            if (!ok || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
              return SyntaxError("bad \\" + std::string(1, e) + " escape", base + j);
            }
            unicode::AppendUtf8(cp, &out);
            j += digits;
            break;
          }
          default:  // unknown escapes keep the backslash (Python)
            out += '\\';
            out += e;
        }
      }
      if (j >= s.size()) return SyntaxError("unterminated string literal", at);
      toks.push_back({TokKind::kString, std::move(out), 0, at});
      k = j + 1;
      continue;
    }
    static constexpr std::string_view kOps2[] = {"//", "**", "==", "!=", "<=", ">="};
    bool matched = false;
    for (std::string_view op : kOps2) {
      if (s.substr(k, 2) == op) {
        toks.push_back({TokKind::kOp, std::string(op), 0, at});
        k += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    static constexpr std::string_view kOps1 = "+-*/%~<>()[]{}.,:|=";
    if (kOps1.find(c) != std::string_view::npos) {
      toks.push_back({TokKind::kOp, std::string(1, c), 0, at});
      ++k;
      continue;
    }
    return SyntaxError("unexpected character '" + std::string(1, c) + "'", at);
  }
  toks.push_back({TokKind::kEnd, "", 0, base + s.size()});
  return toks;
}

}  // namespace unmask::chat_template_internal
