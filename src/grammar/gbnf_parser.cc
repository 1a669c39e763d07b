#include "grammar/gbnf_parser.h"

#include <optional>
#include <string>
#include <vector>

namespace unmask::grammar {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  StatusOr<Grammar> Run() {
    SkipSpace(true);
    while (pos_ < s_.size()) {
      const size_t start = pos_;
      const std::string name = Name();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace(false);
      if (s_.substr(pos_, 3) != "::=") {
        pos_ = start + name.size();
        return Error("expected '::=' after rule name '" + name + "'");
      }
      pos_ += 3;
      const int32_t rule = b_.Rule(name);
      if (seen_.size() <= static_cast<size_t>(rule)) seen_.resize(static_cast<size_t>(rule) + 1);
      if (seen_[static_cast<size_t>(rule)]) {
        pos_ = start;
        return Error("rule '" + name + "' is defined twice");
      }
      seen_[static_cast<size_t>(rule)] = true;
      UNMASK_RETURN_IF_ERROR(Alternatives(rule, false));
      SkipSpace(true);
    }
    return b_.Build("root");
  }

 private:
  // ResourceExhausted: over a budget, not malformed (the JSON schema compiler reports it in the
  // schema's terms).
  Status TooLarge() const {
    return ResourceExhaustedError(
        Error("the grammar is too large once its repetitions are spelled out (over " +
              std::to_string(kMaxGrammarElements) + " elements)")
            .message());
  }
  Status Error(const std::string& what) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidArgumentError("grammar: line " + std::to_string(line) + ", column " +
                                std::to_string(col) + ": " + what);
  }

  // Spaces, tabs and comments; newlines too when `newlines`.
  void SkipSpace(bool newlines) {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string Name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && IsNameChar(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  // One UTF-8 code point of the grammar text.
  StatusOr<uint32_t> CodePoint() {
    const auto c = static_cast<unsigned char>(s_[pos_]);
    int n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++pos_;
      return c;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return Error("invalid UTF-8 in the grammar text");
    }
    if (pos_ + static_cast<size_t>(n) >= s_.size()) {
      return Error("truncated UTF-8 in the grammar text");
    }
    for (int i = 1; i <= n; ++i) {
      const auto d = static_cast<unsigned char>(s_[pos_ + static_cast<size_t>(i)]);
      if ((d & 0xC0) != 0x80) return Error("invalid UTF-8 in the grammar text");
      cp = (cp << 6) | (d & 0x3F);
    }
    pos_ += static_cast<size_t>(n) + 1;
    return cp;
  }

  StatusOr<uint32_t> Hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (pos_ >= s_.size()) return Error("truncated escape");
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        --pos_;
        return Error("expected a hex digit in the escape");
      }
    }
    if (v > 0x10FFFF) return Error("escape beyond U+10FFFF");
    return v;
  }

  // A character of a literal or class, escapes resolved.
  StatusOr<uint32_t> Char() {
    if (pos_ >= s_.size()) return Error("unexpected end of the grammar");
    if (s_[pos_] != '\\') return CodePoint();
    ++pos_;
    if (pos_ >= s_.size()) return Error("unexpected end after '\\'");
    const char c = s_[pos_++];
    switch (c) {
      case 'n':
        return uint32_t{'\n'};
      case 'r':
        return uint32_t{'\r'};
      case 't':
        return uint32_t{'\t'};
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
        return static_cast<uint32_t>(c);
      case 'x':
        return Hex(2);
      case 'u':
        return Hex(4);
      case 'U':
        return Hex(8);
      default:
        --pos_;
        return Error(std::string("unknown escape '\\") + c + "'");
    }
  }

  int32_t Class(uint32_t lo, uint32_t hi, bool negated = false) {
    CharClass c;
    c.ranges.emplace_back(lo, hi);
    c.negated = negated;
    return b_.AddClass(std::move(c));
  }

  std::optional<int> Number() {
    const size_t start = pos_;
    long v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9' && v <= 100000) {
      v = v * 10 + (s_[pos_++] - '0');
    }
    if (pos_ == start) return std::nullopt;
    return static_cast<int>(v);
  }

  // `seq` repeated between `min` and `max` times (max -1: unbounded), lowered to rules.
  std::vector<Elem> Repeat(const std::vector<Elem>& seq, int min, int max,
                           const std::string& base) {
    // What this repetition adds: min copies inline, one per optional copy in its rules.
    const size_t copies = static_cast<size_t>(min) + static_cast<size_t>(max > min ? max - min : 1);
    if (copies * (seq.size() + 1) + b_.num_elements() > kMaxGrammarElements) {
      too_large_ = true;
      return {};
    }
    std::vector<Elem> out;
    for (int i = 0; i < min; ++i) out.insert(out.end(), seq.begin(), seq.end());
    if (max < 0) {
      const int32_t r = b_.NewRule(base);
      std::vector<Elem> alt = seq;
      alt.push_back(Elem{ElemType::kRule, r});
      b_.AddAlternative(r, alt);
      b_.AddAlternative(r, {});
      out.push_back(Elem{ElemType::kRule, r});
    } else if (max > min) {
      // R_1 ::= seq | ; R_k ::= seq R_{k-1} | .
      int32_t prev = -1;
      for (int k = 1; k <= max - min; ++k) {
        const int32_t r = b_.NewRule(base);
        std::vector<Elem> alt = seq;
        if (prev >= 0) alt.push_back(Elem{ElemType::kRule, prev});
        b_.AddAlternative(r, alt);
        b_.AddAlternative(r, {});
        prev = r;
      }
      out.push_back(Elem{ElemType::kRule, prev});
    }
    return out;
  }

  Status Sequence(int32_t rule, bool nested, std::vector<Elem>* out) {
    const std::string base = b_.name(rule);
    for (;;) {
      SkipSpace(nested);
      if (pos_ >= s_.size()) return Status::Ok();
      const char c = s_[pos_];
      std::vector<Elem> term;
      if (c == '"') {
        ++pos_;
        while (pos_ < s_.size() && s_[pos_] != '"') {
          if (s_[pos_] == '\n') return Error("newline inside a literal (write \\n)");
          UNMASK_ASSIGN_OR_RETURN(const uint32_t cp, Char());
          term.push_back(Elem{ElemType::kChar, Class(cp, cp)});
        }
        if (pos_ >= s_.size()) return Error("unterminated literal");
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        CharClass cls;
        if (pos_ < s_.size() && s_[pos_] == '^') {
          cls.negated = true;
          ++pos_;
        }
        while (pos_ < s_.size() && s_[pos_] != ']') {
          if (s_[pos_] == '\n') return Error("unterminated character class");
          UNMASK_ASSIGN_OR_RETURN(const uint32_t lo, Char());
          uint32_t hi = lo;
          if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
            ++pos_;
            if (s_[pos_] == '\n') return Error("unterminated character class");
            UNMASK_ASSIGN_OR_RETURN(hi, Char());
            if (hi < lo) return Error("character range with its end before its start");
          }
          cls.ranges.emplace_back(lo, hi);
        }
        if (pos_ >= s_.size()) return Error("unterminated character class");
        ++pos_;
        term.push_back(Elem{ElemType::kChar, b_.AddClass(std::move(cls))});
      } else if (c == '.') {
        ++pos_;
        CharClass any;
        any.negated = true;
        term.push_back(Elem{ElemType::kChar, b_.AddClass(std::move(any))});
      } else if (c == '(') {
        // Groups recurse: their depth is bounded (a request's grammar of thousands of '('
        // overflowed the stack: fuzz/regressions/openai_request_fuzz/nested-groups-stack-overflow).
        if (depth_ >= kMaxGroupDepth) {
          return Error("groups nested deeper than " + std::to_string(kMaxGroupDepth));
        }
        ++pos_;
        const int32_t sub = b_.NewRule(base);
        ++depth_;
        const Status inner = Alternatives(sub, true);
        --depth_;
        UNMASK_RETURN_IF_ERROR(inner);
        SkipSpace(true);
        if (pos_ >= s_.size() || s_[pos_] != ')') return Error("expected ')'");
        ++pos_;
        term.push_back(Elem{ElemType::kRule, sub});
      } else if (IsNameChar(c)) {
        // A rule reference, unless it starts the next rule's definition.
        const size_t start = pos_;
        const std::string name = Name();
        SkipSpace(false);
        if (s_.substr(pos_, 3) == "::=") {
          pos_ = start;
          return nested ? Error("expected ')' before the rule '" + name + "'") : Status::Ok();
        }
        pos_ = start + name.size();
        term.push_back(Elem{ElemType::kRule, b_.Rule(name)});
      } else {
        return Status::Ok();  // '|', ')', newline, or something the caller reports
      }
      // Postfix.
      SkipSpace(false);
      if (pos_ < s_.size()) {
        const char p = s_[pos_];
        int min = 1, max = 1;
        if (p == '*') {
          min = 0, max = -1;
        } else if (p == '+') {
          min = 1, max = -1;
        } else if (p == '?') {
          min = 0, max = 1;
        }
        if (p == '*' || p == '+' || p == '?') {
          ++pos_;
          term = Repeat(term, min, max, base);
          if (too_large_) return TooLarge();
        } else if (p == '{') {
          ++pos_;
          SkipSpace(false);
          const std::optional<int> m = Number();
          if (!m) return Error("expected a count after '{'");
          min = max = *m;
          SkipSpace(false);
          if (pos_ < s_.size() && s_[pos_] == ',') {
            ++pos_;
            SkipSpace(false);
            const std::optional<int> n = Number();
            max = n ? *n : -1;
            SkipSpace(false);
          }
          if (pos_ >= s_.size() || s_[pos_] != '}') return Error("expected '}'");
          ++pos_;
          if (min > kMaxRepetition || max > kMaxRepetition) {
            return Error("repetition count over " + std::to_string(kMaxRepetition));
          }
          if (max >= 0 && max < min) return Error("repetition {m,n} with n < m");
          term = Repeat(term, min, max, base);
          if (too_large_) return TooLarge();
        }
      }
      if (out->size() + term.size() + b_.num_elements() > kMaxGrammarElements) return TooLarge();
      out->insert(out->end(), term.begin(), term.end());
    }
  }

  Status Alternatives(int32_t rule, bool nested) {
    for (;;) {
      std::vector<Elem> seq;
      UNMASK_RETURN_IF_ERROR(Sequence(rule, nested, &seq));
      b_.AddAlternative(rule, seq);
      const size_t save = pos_;
      SkipSpace(true);
      if (pos_ < s_.size() && s_[pos_] == '|') {
        ++pos_;
        continue;
      }
      if (nested) {
        if (pos_ < s_.size() && s_[pos_] == ')') return Status::Ok();
        return pos_ < s_.size() ? Error(std::string("unexpected '") + s_[pos_] + "'")
                                : Error("expected ')'");
      }
      // At the top level the rule ends at a newline or at the next rule's name.
      if (pos_ < s_.size() && !IsNameChar(s_[pos_])) {
        return Error(std::string("unexpected '") + s_[pos_] + "'");
      }
      if (save == pos_ && pos_ < s_.size()) {
        return Error("expected a newline before the next rule");
      }
      return Status::Ok();
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  GrammarBuilder b_;
  std::vector<bool> seen_;
  bool too_large_ = false;  // a Repeat went over kMaxGrammarElements
  int depth_ = 0;           // groups open around the current position
};

}  // namespace

StatusOr<Grammar> ParseGbnf(std::string_view text) { return Parser(text).Run(); }

}  // namespace unmask::grammar
