// Jinja2-subset chat template renderer (see chat_template.h for the supported subset).
// Semantics follow Jinja2 (pallets/jinja: lexer.py, parser.py, runtime.py, filters.py, tests.py) as
// configured by transformers for chat templates. Pipeline: lexer (template -> text and tag
// segments, applying whitespace control) -> parser (segments -> statement tree, tag contents ->
// expression trees) -> evaluator (tree-walking, with a step and output budget).
#include "tokenizer/chat_template.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/unicode_util.h"

namespace unmask {
namespace {

constexpr int kMaxNesting = 128;                 // statement and expression nesting in the parser
constexpr int kMaxHeight = 256;                  // expression tree height
constexpr int kMaxValueDepth = 128;              // nesting of list/dict values built at run time
constexpr size_t kMaxString = size_t{16} << 20;  // bytes per string value
constexpr int64_t kMaxRange = 100000;            // elements produced by range()

std::string At(size_t offset) { return " at offset " + std::to_string(offset); }

Status SyntaxError(std::string_view what, size_t offset) {
  return InvalidArgumentError("chat template: " + std::string(what) + At(offset));
}

Status Unsupported(std::string_view what, size_t offset) {
  return UnimplementedError("chat template: unsupported " + std::string(what) + At(offset));
}

bool IsSpaceNoNewline(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
bool IsSpace(char c) { return IsSpaceNoNewline(c) || c == '\n' || c == '\r'; }

// ------------------------------------------------------------------------------------------------
// Values

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // insertion-ordered

struct Value {
  enum class Type { kUndefined, kNone, kBool, kInt, kString, kList, kDict };
  Type type = Type::kUndefined;
  bool b = false;
  int64_t i = 0;
  std::string s;  // kString; for kUndefined, the name that was undefined (for messages)
  std::shared_ptr<const List> list;
  std::shared_ptr<const Dict> dict;
  int depth = 0;  // list/dict nesting (checked against kMaxValueDepth by the renderer)

  static Value Undefined(std::string name) {
    Value v;
    v.s = std::move(name);
    return v;
  }
  static Value None() {
    Value v;
    v.type = Type::kNone;
    return v;
  }
  static Value Bool(bool x) {
    Value v;
    v.type = Type::kBool;
    v.b = x;
    return v;
  }
  static Value Int(int64_t x) {
    Value v;
    v.type = Type::kInt;
    v.i = x;
    return v;
  }
  static Value Str(std::string x) {
    Value v;
    v.type = Type::kString;
    v.s = std::move(x);
    return v;
  }
  static Value MakeList(List x) {
    Value v;
    v.type = Type::kList;
    for (const Value& item : x) v.depth = std::max(v.depth, item.depth);
    ++v.depth;
    v.list = std::make_shared<const List>(std::move(x));
    return v;
  }
  static Value MakeDict(Dict x) {
    Value v;
    v.type = Type::kDict;
    for (const auto& kv : x) v.depth = std::max(v.depth, kv.second.depth);
    ++v.depth;
    v.dict = std::make_shared<const Dict>(std::move(x));
    return v;
  }

  bool is_undefined() const { return type == Type::kUndefined; }
  bool is_string() const { return type == Type::kString; }
  bool is_list() const { return type == Type::kList; }
  bool is_dict() const { return type == Type::kDict; }
  // Python treats bool as an int.
  bool is_integer() const { return type == Type::kInt || type == Type::kBool; }
  int64_t as_int() const { return type == Type::kBool ? (b ? 1 : 0) : i; }

  const Value* Find(std::string_view key) const {
    if (!is_dict()) return nullptr;
    for (const auto& [k, v] : *dict) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

std::string_view TypeName(const Value& v) {
  switch (v.type) {
    case Value::Type::kUndefined:
      return "undefined";
    case Value::Type::kNone:
      return "NoneType";
    case Value::Type::kBool:
      return "bool";
    case Value::Type::kInt:
      return "int";
    case Value::Type::kString:
      return "str";
    case Value::Type::kList:
      return "list";
    case Value::Type::kDict:
      return "dict";
  }
  return "?";
}

bool Truthy(const Value& v) {
  switch (v.type) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return false;
    case Value::Type::kBool:
      return v.b;
    case Value::Type::kInt:
      return v.i != 0;
    case Value::Type::kString:
      return !v.s.empty();
    case Value::Type::kList:
      return !v.list->empty();
    case Value::Type::kDict:
      return !v.dict->empty();
  }
  return false;
}

bool Equal(const Value& a, const Value& b) {
  if (a.is_integer() && b.is_integer()) return a.as_int() == b.as_int();
  if (a.type != b.type) return false;
  switch (a.type) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return true;
    case Value::Type::kString:
      return a.s == b.s;
    case Value::Type::kList:
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k) {
        if (!Equal((*a.list)[k], (*b.list)[k])) return false;
      }
      return true;
    case Value::Type::kDict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [key, value] : *a.dict) {
        const Value* other = b.Find(key);
        if (other == nullptr || !Equal(value, *other)) return false;
      }
      return true;
    default:
      return false;
  }
}

std::string Repr(const Value& v);

// Python str().
std::string ToString(const Value& v) {
  switch (v.type) {
    case Value::Type::kUndefined:
      return "";
    case Value::Type::kNone:
      return "None";
    case Value::Type::kBool:
      return v.b ? "True" : "False";
    case Value::Type::kInt:
      return std::to_string(v.i);
    case Value::Type::kString:
      return v.s;
    case Value::Type::kList: {
      std::string out = "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k > 0) out += ", ";
        out += Repr((*v.list)[k]);
      }
      return out + "]";
    }
    case Value::Type::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : *v.dict) {
        if (!first) out += ", ";
        first = false;
        out += Repr(Value::Str(key)) + ": " + Repr(value);
      }
      return out + "}";
    }
  }
  return "";
}

// Python repr() (strings quoted and escaped as CPython does for the common cases).
std::string Repr(const Value& v) {
  if (!v.is_string()) return ToString(v);
  const bool has_single = v.s.find('\'') != std::string::npos;
  const bool has_double = v.s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : v.s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out + quote;
}

// Code points of a UTF-8 string (invalid bytes become U+FFFD), as Python str indexing sees it.
std::vector<std::string> SplitCodePoints(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = unicode::DecodeOne(s, &pos);
    if (cp == unicode::kReplacementChar && pos - start == 1) {
      std::string r;
      unicode::AppendUtf8(cp, &r);
      out.push_back(std::move(r));
    } else {
      out.emplace_back(s.substr(start, pos - start));
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Lexer: template -> segments

enum class SegmentKind { kText, kOutput, kStatement };

struct Segment {
  SegmentKind kind;
  std::string text;  // literal text, or the tag content
  size_t offset;     // of the text, or of the tag content
};

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

// ------------------------------------------------------------------------------------------------
// Expression tokens

enum class TokKind { kName, kString, kInt, kOp, kEnd };

struct Tok {
  TokKind kind;
  std::string text;  // name, decoded string, operator
  int64_t value = 0;
  size_t offset;
};

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
      if (j < s.size() && (s[j] == '.' || s[j] == 'e' || s[j] == 'E') && j + 1 < s.size() &&
          std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        return Unsupported("float literal", at);
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

// ------------------------------------------------------------------------------------------------
// Syntax tree

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kList,       // args
    kDict,       // keys (args[2k]) and values (args[2k+1])
    kName,       // name
    kAttr,       // args[0].name
    kIndex,      // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (null parts allowed)
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs)
    kTest,       // args[0] is [not] name(args[1..])
    kUnary,      // name in {"-", "+", "not"}: args[0]
    kBinary,     // args[0] name args[1]: + - * / // % ** ~ and or
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ...
    kCondition,  // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind;
  size_t offset;
  int height = 1;  // 1 + the largest child height (bounded, so evaluation recursion is too)
  Value value;
  std::string name;
  bool negated = false;
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> kwargs;
  std::vector<std::string> ops;
};
using ExprPtr = std::unique_ptr<Expr>;

ExprPtr MakeExpr(Expr::Kind kind, size_t offset) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->offset = offset;
  return e;
}

struct Node {
  enum class Kind { kText, kOutput, kIf, kFor, kSet, kBreak, kContinue };
  Kind kind;
  size_t offset;
  std::string text;                  // kText
  ExprPtr expr;                      // kOutput, kSet value, kFor iterable
  ExprPtr filter;                    // kFor `if` condition
  std::vector<std::string> targets;  // kFor / kSet names
  std::vector<std::pair<ExprPtr, std::vector<Node>>> branches;  // kIf (null condition: else)
  std::vector<Node> body;                                       // kFor
  std::vector<Node> else_body;                                  // kFor
};

Node MakeNode(Node::Kind kind, size_t offset) {
  Node node;
  node.kind = kind;
  node.offset = offset;
  return node;
}

// Expression parser over one tag's tokens (grammar and precedence of jinja2/parser.py).
class ExprParser {
 public:
  explicit ExprParser(std::vector<Tok> toks) : toks_(std::move(toks)) {}

  const Tok& Peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  bool AtEnd() const { return Peek().kind == TokKind::kEnd; }
  bool IsOp(std::string_view op, size_t ahead = 0) const {
    return Peek(ahead).kind == TokKind::kOp && Peek(ahead).text == op;
  }
  bool IsName(std::string_view name, size_t ahead = 0) const {
    return Peek(ahead).kind == TokKind::kName && Peek(ahead).text == name;
  }
  const Tok& Next() {
    const Tok& t = Peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  Status Expect(std::string_view op) {
    if (!IsOp(op)) return SyntaxError("expected '" + std::string(op) + "'", Peek().offset);
    Next();
    return Status::Ok();
  }
  StatusOr<std::string> ExpectName() {
    if (Peek().kind != TokKind::kName) return SyntaxError("expected a name", Peek().offset);
    return Next().text;
  }
  Status ExpectEnd() {
    if (!AtEnd()) return SyntaxError("unexpected '" + Peek().text + "'", Peek().offset);
    return Status::Ok();
  }

  StatusOr<ExprPtr> ParseExpression(bool with_condition = true) {
    if (++depth_ > kMaxNesting) return SyntaxError("expression nested too deeply", Peek().offset);
    StatusOr<ExprPtr> result = ParseExpressionInner(with_condition);
    --depth_;
    return result;
  }

 private:
  StatusOr<ExprPtr> ParseExpressionInner(bool with_condition) {
    UNMASK_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
    while (with_condition && IsName("if")) {
      const size_t at = Next().offset;
      auto cond = MakeExpr(Expr::Kind::kCondition, at);
      UNMASK_ASSIGN_OR_RETURN(ExprPtr test, ParseOr());
      ExprPtr otherwise;
      if (IsName("else")) {
        Next();
        UNMASK_ASSIGN_OR_RETURN(otherwise, ParseExpression(true));
      }
      cond->args.push_back(std::move(test));
      cond->args.push_back(std::move(expr));
      cond->args.push_back(std::move(otherwise));
      UNMASK_RETURN_IF_ERROR(Seal(cond.get()));
      expr = std::move(cond);
    }
    return expr;
  }

  // Sets e->height from its children; InvalidArgument past kMaxHeight (long operator, filter or
  // subscript chains build tall trees without recursion in the parser).
  static Status Seal(Expr* e) {
    int height = 0;
    for (const auto& a : e->args) {
      if (a) height = std::max(height, a->height);
    }
    for (const auto& kv : e->kwargs) height = std::max(height, kv.second->height);
    e->height = height + 1;
    if (e->height > kMaxHeight) return SyntaxError("expression nested too deeply", e->offset);
    return Status::Ok();
  }

  static StatusOr<ExprPtr> Binary(std::string op, size_t at, ExprPtr a, ExprPtr b) {
    auto e = MakeExpr(Expr::Kind::kBinary, at);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    UNMASK_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }

  StatusOr<ExprPtr> ParseOr() {
    UNMASK_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (IsName("or")) {
      const size_t at = Next().offset;
      UNMASK_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      UNMASK_ASSIGN_OR_RETURN(left, Binary("or", at, std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseAnd() {
    UNMASK_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (IsName("and")) {
      const size_t at = Next().offset;
      UNMASK_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      UNMASK_ASSIGN_OR_RETURN(left, Binary("and", at, std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseNot() {
    if (IsName("not")) {
      const size_t at = Next().offset;
      if (++depth_ > kMaxNesting) return SyntaxError("expression nested too deeply", at);
      StatusOr<ExprPtr> operand = ParseNot();
      --depth_;
      if (!operand.ok()) return operand.status();
      auto e = MakeExpr(Expr::Kind::kUnary, at);
      e->name = "not";
      e->args.push_back(std::move(operand).value());
      UNMASK_RETURN_IF_ERROR(Seal(e.get()));
      return e;
    }
    return ParseCompare();
  }

  StatusOr<ExprPtr> ParseCompare() {
    UNMASK_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
    ExprPtr cmp;
    while (true) {
      std::string op;
      const Tok& t = Peek();
      if (t.kind == TokKind::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                     t.text == ">" || t.text == "<=" || t.text == ">=")) {
        op = t.text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && IsName("in", 1)) {
        op = "not in";
        Next();
        Next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = MakeExpr(Expr::Kind::kCompare, t.offset);
        cmp->args.push_back(std::move(first));
      }
      UNMASK_ASSIGN_OR_RETURN(ExprPtr operand, ParseMath1());
      cmp->ops.push_back(std::move(op));
      cmp->args.push_back(std::move(operand));
      UNMASK_RETURN_IF_ERROR(Seal(cmp.get()));
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  StatusOr<ExprPtr> ParseMath1() {
    UNMASK_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      const Tok& t = Next();
      UNMASK_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
      UNMASK_ASSIGN_OR_RETURN(left, Binary(t.text, t.offset, std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseConcat() {
    UNMASK_ASSIGN_OR_RETURN(ExprPtr left, ParseMath2());
    while (IsOp("~")) {
      const size_t at = Next().offset;
      UNMASK_ASSIGN_OR_RETURN(ExprPtr right, ParseMath2());
      UNMASK_ASSIGN_OR_RETURN(left, Binary("~", at, std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseMath2() {
    UNMASK_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Tok& t = Next();
      UNMASK_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
      UNMASK_ASSIGN_OR_RETURN(left, Binary(t.text, t.offset, std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParsePow() {
    UNMASK_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
    while (IsOp("**")) {
      const size_t at = Next().offset;
      UNMASK_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
      UNMASK_ASSIGN_OR_RETURN(left, Binary("**", at, std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseUnary(bool with_filter) {
    if (++depth_ > kMaxNesting) return SyntaxError("expression nested too deeply", Peek().offset);
    StatusOr<ExprPtr> result = ParseUnaryInner(with_filter);
    --depth_;
    return result;
  }

  StatusOr<ExprPtr> ParseUnaryInner(bool with_filter) {
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      const Tok& t = Next();
      UNMASK_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      node = MakeExpr(Expr::Kind::kUnary, t.offset);
      node->name = t.text;
      node->args.push_back(std::move(operand));
      UNMASK_RETURN_IF_ERROR(Seal(node.get()));
    } else {
      UNMASK_ASSIGN_OR_RETURN(node, ParsePrimary());
    }
    UNMASK_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    if (with_filter) {
      UNMASK_ASSIGN_OR_RETURN(node, ParseFilters(std::move(node)));
    }
    return node;
  }

  StatusOr<ExprPtr> ParsePrimary() {
    const Tok& t = Peek();
    switch (t.kind) {
      case TokKind::kName: {
        Next();
        auto e = MakeExpr(Expr::Kind::kLiteral, t.offset);
        if (t.text == "true" || t.text == "True") {
          e->value = Value::Bool(true);
        } else if (t.text == "false" || t.text == "False") {
          e->value = Value::Bool(false);
        } else if (t.text == "none" || t.text == "None") {
          e->value = Value::None();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      }
      case TokKind::kString: {
        auto e = MakeExpr(Expr::Kind::kLiteral, t.offset);
        std::string s;
        while (Peek().kind == TokKind::kString) s += Next().text;  // adjacent literals concatenate
        e->value = Value::Str(std::move(s));
        return e;
      }
      case TokKind::kInt: {
        Next();
        auto e = MakeExpr(Expr::Kind::kLiteral, t.offset);
        e->value = Value::Int(t.value);
        return e;
      }
      case TokKind::kOp:
        if (t.text == "(") {
          Next();
          UNMASK_ASSIGN_OR_RETURN(ExprPtr inner, ParseExpression());
          if (IsOp(",")) {  // a tuple: treated as a list
            auto list = MakeExpr(Expr::Kind::kList, t.offset);
            list->args.push_back(std::move(inner));
            while (IsOp(",")) {
              Next();
              if (IsOp(")")) break;
              UNMASK_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
              list->args.push_back(std::move(item));
            }
            UNMASK_RETURN_IF_ERROR(Seal(list.get()));
            inner = std::move(list);
          }
          UNMASK_RETURN_IF_ERROR(Expect(")"));
          return inner;
        }
        if (t.text == "[") {
          Next();
          auto list = MakeExpr(Expr::Kind::kList, t.offset);
          while (!IsOp("]")) {
            UNMASK_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
            list->args.push_back(std::move(item));
            if (!IsOp(",")) break;
            Next();
          }
          UNMASK_RETURN_IF_ERROR(Expect("]"));
          UNMASK_RETURN_IF_ERROR(Seal(list.get()));
          return list;
        }
        if (t.text == "{") {
          Next();
          auto dict = MakeExpr(Expr::Kind::kDict, t.offset);
          while (!IsOp("}")) {
            UNMASK_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
            UNMASK_RETURN_IF_ERROR(Expect(":"));
            UNMASK_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
            dict->args.push_back(std::move(key));
            dict->args.push_back(std::move(value));
            if (!IsOp(",")) break;
            Next();
          }
          UNMASK_RETURN_IF_ERROR(Expect("}"));
          UNMASK_RETURN_IF_ERROR(Seal(dict.get()));
          return dict;
        }
        break;
      case TokKind::kEnd:
        return SyntaxError("expected an expression", t.offset);
    }
    return SyntaxError("unexpected '" + t.text + "'", t.offset);
  }

  // Call arguments after '(' up to and including ')'.
  Status ParseCallArgs(Expr* call) {
    UNMASK_RETURN_IF_ERROR(Expect("("));
    while (!IsOp(")")) {
      if (IsOp("*") || IsOp("**")) return Unsupported("*args / **kwargs", Peek().offset);
      if (Peek().kind == TokKind::kName && IsOp("=", 1)) {
        std::string key = Next().text;
        Next();
        UNMASK_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        call->kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!call->kwargs.empty()) {
          return SyntaxError("positional argument after keyword argument", Peek().offset);
        }
        UNMASK_ASSIGN_OR_RETURN(ExprPtr arg, ParseExpression());
        call->args.push_back(std::move(arg));
      }
      if (!IsOp(",")) break;
      Next();
    }
    return Expect(")");
  }

  StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOp(".")) {
        const size_t at = Next().offset;
        if (Peek().kind == TokKind::kInt) {  // a.0 is a[0]
          auto index = MakeExpr(Expr::Kind::kIndex, at);
          auto key = MakeExpr(Expr::Kind::kLiteral, Peek().offset);
          key->value = Value::Int(Next().value);
          index->args.push_back(std::move(node));
          index->args.push_back(std::move(key));
          UNMASK_RETURN_IF_ERROR(Seal(index.get()));
          node = std::move(index);
          continue;
        }
        UNMASK_ASSIGN_OR_RETURN(std::string name, ExpectName());
        auto attr = MakeExpr(Expr::Kind::kAttr, at);
        attr->name = std::move(name);
        attr->args.push_back(std::move(node));
        UNMASK_RETURN_IF_ERROR(Seal(attr.get()));
        node = std::move(attr);
      } else if (IsOp("[")) {
        const size_t at = Next().offset;
        ExprPtr parts[3];
        int part = 0;
        bool is_slice = false;
        while (true) {
          if (IsOp(":")) {
            Next();
            is_slice = true;
            if (++part > 2) return SyntaxError("too many ':' in a slice", at);
            continue;
          }
          if (IsOp("]")) break;
          if (parts[part]) return SyntaxError("expected ']'", Peek().offset);
          UNMASK_ASSIGN_OR_RETURN(parts[part], ParseExpression());
        }
        Next();  // ']'
        if (!is_slice) {
          if (!parts[0]) return SyntaxError("empty subscript", at);
          auto index = MakeExpr(Expr::Kind::kIndex, at);
          index->args.push_back(std::move(node));
          index->args.push_back(std::move(parts[0]));
          UNMASK_RETURN_IF_ERROR(Seal(index.get()));
          node = std::move(index);
        } else {
          auto slice = MakeExpr(Expr::Kind::kSlice, at);
          slice->args.push_back(std::move(node));
          for (auto& p : parts) slice->args.push_back(std::move(p));
          UNMASK_RETURN_IF_ERROR(Seal(slice.get()));
          node = std::move(slice);
        }
      } else if (IsOp("(")) {
        auto call = MakeExpr(Expr::Kind::kCall, Peek().offset);
        call->args.push_back(std::move(node));
        UNMASK_RETURN_IF_ERROR(ParseCallArgs(call.get()));
        UNMASK_RETURN_IF_ERROR(Seal(call.get()));
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  StatusOr<ExprPtr> ParseFilters(ExprPtr node) {
    while (true) {
      if (IsOp("|")) {
        const size_t at = Next().offset;
        UNMASK_ASSIGN_OR_RETURN(std::string name, ExpectName());
        while (IsOp(".")) {  // dotted filter names
          Next();
          UNMASK_ASSIGN_OR_RETURN(std::string part, ExpectName());
          name += "." + part;
        }
        auto filter = MakeExpr(Expr::Kind::kFilter, at);
        filter->name = std::move(name);
        filter->args.push_back(std::move(node));
        if (IsOp("(")) UNMASK_RETURN_IF_ERROR(ParseCallArgs(filter.get()));
        UNMASK_RETURN_IF_ERROR(Seal(filter.get()));
        node = std::move(filter);
      } else if (IsName("is")) {
        const size_t at = Next().offset;
        auto test = MakeExpr(Expr::Kind::kTest, at);
        if (IsName("not")) {
          Next();
          test->negated = true;
        }
        UNMASK_ASSIGN_OR_RETURN(test->name, ExpectName());
        test->args.push_back(std::move(node));
        const Tok& t = Peek();
        if (IsOp("(")) {
          UNMASK_RETURN_IF_ERROR(ParseCallArgs(test.get()));
        } else if ((t.kind == TokKind::kName || t.kind == TokKind::kString ||
                    t.kind == TokKind::kInt || IsOp("[") || IsOp("{")) &&
                   !IsName("else") && !IsName("or") && !IsName("and")) {
          if (IsName("is")) return SyntaxError("cannot chain tests with 'is'", t.offset);
          UNMASK_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
          UNMASK_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
          test->args.push_back(std::move(arg));
        }
        UNMASK_RETURN_IF_ERROR(Seal(test.get()));
        node = std::move(test);
      } else if (IsOp("(")) {
        auto call = MakeExpr(Expr::Kind::kCall, Peek().offset);
        call->args.push_back(std::move(node));
        UNMASK_RETURN_IF_ERROR(ParseCallArgs(call.get()));
        UNMASK_RETURN_IF_ERROR(Seal(call.get()));
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  std::vector<Tok> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// Statement parser over the lexed segments.
class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Segment> segments) : segments_(std::move(segments)) {}

  StatusOr<std::vector<Node>> ParseAll() {
    std::string end;
    UNMASK_ASSIGN_OR_RETURN(std::vector<Node> nodes, ParseBody({}, &end, nullptr));
    return nodes;
  }

 private:
  // Parses nodes until a statement whose keyword is in `enders` (returned in *ender with its
  // parser positioned after the keyword in *rest) or the end of the template.
  StatusOr<std::vector<Node>> ParseBody(const std::vector<std::string_view>& enders,
                                        std::string* ender, std::unique_ptr<ExprParser>* rest) {
    if (++depth_ > kMaxNesting) {
      return SyntaxError("blocks nested too deeply",
                         index_ < segments_.size() ? segments_[index_].offset : 0);
    }
    std::vector<Node> nodes;
    ender->clear();
    while (index_ < segments_.size()) {
      const Segment& seg = segments_[index_++];
      if (seg.kind == SegmentKind::kText) {
        Node node = MakeNode(Node::Kind::kText, seg.offset);
        node.text = seg.text;
        nodes.push_back(std::move(node));
        continue;
      }
      UNMASK_ASSIGN_OR_RETURN(std::vector<Tok> toks, Tokenize(seg.text, seg.offset));
      auto parser = std::make_unique<ExprParser>(std::move(toks));
      if (seg.kind == SegmentKind::kOutput) {
        Node node = MakeNode(Node::Kind::kOutput, seg.offset);
        UNMASK_ASSIGN_OR_RETURN(node.expr, parser->ParseExpression());
        UNMASK_RETURN_IF_ERROR(parser->ExpectEnd());
        nodes.push_back(std::move(node));
        continue;
      }
      if (parser->Peek().kind != TokKind::kName) {
        return SyntaxError("expected a statement keyword", parser->Peek().offset);
      }
      const Tok keyword = parser->Next();
      if (std::find(enders.begin(), enders.end(), keyword.text) != enders.end()) {
        *ender = keyword.text;
        *rest = std::move(parser);
        --depth_;
        return nodes;
      }
      UNMASK_ASSIGN_OR_RETURN(Node node, ParseStatement(keyword, parser.get()));
      nodes.push_back(std::move(node));
    }
    if (!enders.empty()) {
      std::string expected;
      for (std::string_view e : enders) expected += (expected.empty() ? "" : "/") + std::string(e);
      return SyntaxError("missing {% " + expected + " %} before the end of the template",
                         segments_.empty() ? 0 : segments_.back().offset);
    }
    --depth_;
    return nodes;
  }

  StatusOr<Node> ParseStatement(const Tok& keyword, ExprParser* p) {
    const std::string& k = keyword.text;
    if (k == "if") return ParseIf(keyword, p);
    if (k == "for") return ParseFor(keyword, p);
    if (k == "set") return ParseSet(keyword, p);
    if (k == "break" || k == "continue") {
      UNMASK_RETURN_IF_ERROR(p->ExpectEnd());
      return MakeNode(k == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, keyword.offset);
    }
    static constexpr std::string_view kKnownUnsupported[] = {
        "macro", "call",       "filter", "block", "extends", "include",    "import",   "from",
        "with",  "autoescape", "raw",    "do",    "trans",   "generation", "namespace"};
    for (std::string_view u : kKnownUnsupported) {
      if (k == u) return Unsupported("statement '" + k + "'", keyword.offset);
    }
    return SyntaxError("unknown or misplaced statement '" + k + "'", keyword.offset);
  }

  StatusOr<Node> ParseIf(const Tok& keyword, ExprParser* p) {
    Node node = MakeNode(Node::Kind::kIf, keyword.offset);
    ExprParser* cond_parser = p;
    std::unique_ptr<ExprParser> rest;
    while (true) {
      ExprPtr cond;
      if (cond_parser != nullptr) {
        UNMASK_ASSIGN_OR_RETURN(cond, cond_parser->ParseExpression());
        UNMASK_RETURN_IF_ERROR(cond_parser->ExpectEnd());
      }
      std::string ender;
      std::unique_ptr<ExprParser> next;
      const bool is_else = cond_parser == nullptr;
      UNMASK_ASSIGN_OR_RETURN(
          std::vector<Node> body,
          ParseBody(is_else ? std::vector<std::string_view>{"endif"}
                            : std::vector<std::string_view>{"elif", "else", "endif"},
                    &ender, &next));
      node.branches.emplace_back(std::move(cond), std::move(body));
      rest = std::move(next);
      if (ender == "endif") {
        UNMASK_RETURN_IF_ERROR(rest->ExpectEnd());
        return node;
      }
      if (ender == "else") {
        UNMASK_RETURN_IF_ERROR(rest->ExpectEnd());
        cond_parser = nullptr;
      } else {
        cond_parser = rest.get();
        keep_alive_.push_back(std::move(rest));
      }
    }
  }

  StatusOr<std::vector<std::string>> ParseTargets(ExprParser* p) {
    std::vector<std::string> targets;
    const bool paren = p->IsOp("(");
    if (paren) p->Next();
    while (true) {
      UNMASK_ASSIGN_OR_RETURN(std::string name, p->ExpectName());
      if (p->IsOp(".")) return Unsupported("attribute assignment (namespace)", p->Peek().offset);
      if (p->IsOp("[")) return Unsupported("subscript assignment", p->Peek().offset);
      targets.push_back(std::move(name));
      if (!p->IsOp(",")) break;
      p->Next();
    }
    if (paren) UNMASK_RETURN_IF_ERROR(p->Expect(")"));
    return targets;
  }

  StatusOr<Node> ParseFor(const Tok& keyword, ExprParser* p) {
    Node node = MakeNode(Node::Kind::kFor, keyword.offset);
    UNMASK_ASSIGN_OR_RETURN(node.targets, ParseTargets(p));
    if (!p->IsName("in")) return SyntaxError("expected 'in'", p->Peek().offset);
    p->Next();
    UNMASK_ASSIGN_OR_RETURN(node.expr, p->ParseExpression(/*with_condition=*/false));
    if (p->IsName("if")) {
      p->Next();
      UNMASK_ASSIGN_OR_RETURN(node.filter, p->ParseExpression());
    }
    if (p->IsName("recursive")) return Unsupported("recursive loops", p->Peek().offset);
    UNMASK_RETURN_IF_ERROR(p->ExpectEnd());
    std::string ender;
    std::unique_ptr<ExprParser> rest;
    UNMASK_ASSIGN_OR_RETURN(node.body, ParseBody({"else", "endfor"}, &ender, &rest));
    UNMASK_RETURN_IF_ERROR(rest->ExpectEnd());
    if (ender == "else") {
      UNMASK_ASSIGN_OR_RETURN(node.else_body, ParseBody({"endfor"}, &ender, &rest));
      UNMASK_RETURN_IF_ERROR(rest->ExpectEnd());
    }
    return node;
  }

  StatusOr<Node> ParseSet(const Tok& keyword, ExprParser* p) {
    Node node = MakeNode(Node::Kind::kSet, keyword.offset);
    UNMASK_ASSIGN_OR_RETURN(node.targets, ParseTargets(p));
    if (!p->IsOp("=")) {
      if (p->AtEnd()) return Unsupported("block assignment {% set x %}", keyword.offset);
      return SyntaxError("expected '='", p->Peek().offset);
    }
    p->Next();
    UNMASK_ASSIGN_OR_RETURN(node.expr, p->ParseExpression());
    if (p->IsOp(",")) return Unsupported("tuple on the right of set", p->Peek().offset);
    UNMASK_RETURN_IF_ERROR(p->ExpectEnd());
    return node;
  }

  std::vector<Segment> segments_;
  size_t index_ = 0;
  int depth_ = 0;
  std::vector<std::unique_ptr<ExprParser>> keep_alive_;
};

// ------------------------------------------------------------------------------------------------
// Evaluator

enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  explicit Renderer(const ChatTemplateInputs& inputs)
      : max_steps_(inputs.max_steps), max_output_(inputs.max_output_bytes) {
    List messages;
    messages.reserve(inputs.messages.size());
    for (const ChatMessage& m : inputs.messages) {
      messages.push_back(
          Value::MakeDict({{"role", Value::Str(m.role)}, {"content", Value::Str(m.content)}}));
    }
    scopes_.emplace_back();
    auto& globals = scopes_.back();
    globals["messages"] = Value::MakeList(std::move(messages));
    globals["add_generation_prompt"] = Value::Bool(inputs.add_generation_prompt);
    globals["bos_token"] = Value::Str(inputs.bos_token);
    globals["eos_token"] = Value::Str(inputs.eos_token);
  }

  StatusOr<std::string> Run(const std::vector<Node>& nodes) {
    UNMASK_ASSIGN_OR_RETURN(Flow flow, Exec(nodes));
    (void)flow;  // break/continue outside a loop are ignored, as in Jinja's loopcontrols
    return std::move(out_);
  }

 private:
  Status Step(size_t offset) {
    if (++steps_ > max_steps_) {
      return ResourceExhaustedError("chat template: evaluation budget exceeded" + At(offset));
    }
    return Status::Ok();
  }

  Status Emit(std::string_view s, size_t offset) {
    if (out_.size() + s.size() > max_output_) {
      return ResourceExhaustedError("chat template: output larger than " +
                                    std::to_string(max_output_) + " bytes" + At(offset));
    }
    out_.append(s);
    return Status::Ok();
  }

  StatusOr<Flow> Exec(const std::vector<Node>& nodes) {
    for (const Node& node : nodes) {
      UNMASK_RETURN_IF_ERROR(Step(node.offset));
      switch (node.kind) {
        case Node::Kind::kText:
          UNMASK_RETURN_IF_ERROR(Emit(node.text, node.offset));
          break;
        case Node::Kind::kOutput: {
          UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*node.expr));
          UNMASK_RETURN_IF_ERROR(Emit(ToString(v), node.offset));
          break;
        }
        case Node::Kind::kSet: {
          UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*node.expr));
          UNMASK_RETURN_IF_ERROR(Assign(node.targets, std::move(v), node.offset));
          break;
        }
        case Node::Kind::kIf:
          for (const auto& [cond, body] : node.branches) {
            bool take = true;
            if (cond) {
              UNMASK_ASSIGN_OR_RETURN(Value c, Eval(*cond));
              take = Truthy(c);
            }
            if (take) {
              UNMASK_ASSIGN_OR_RETURN(Flow flow, Exec(body));
              if (flow != Flow::kNormal) return flow;
              break;
            }
          }
          break;
        case Node::Kind::kFor:
          UNMASK_RETURN_IF_ERROR(ExecFor(node));
          break;
        case Node::Kind::kBreak:
          return Flow::kBreak;
        case Node::Kind::kContinue:
          return Flow::kContinue;
      }
    }
    return Flow::kNormal;
  }

  Status Assign(const std::vector<std::string>& targets, Value v, size_t offset) {
    auto& scope = scopes_.back();
    if (targets.size() == 1) {
      scope[targets[0]] = std::move(v);
      return Status::Ok();
    }
    if (!v.is_list() || v.list->size() != targets.size()) {
      return InvalidArgumentError("chat template: cannot unpack " + std::string(TypeName(v)) +
                                  " into " + std::to_string(targets.size()) + " names" +
                                  At(offset));
    }
    for (size_t k = 0; k < targets.size(); ++k) scope[targets[k]] = (*v.list)[k];
    return Status::Ok();
  }

  StatusOr<List> Iterate(const Value& v, size_t offset) {
    switch (v.type) {
      case Value::Type::kUndefined:
        return List{};
      case Value::Type::kList:
        return *v.list;
      case Value::Type::kDict: {
        List keys;
        for (const auto& kv : *v.dict) keys.push_back(Value::Str(kv.first));
        return keys;
      }
      case Value::Type::kString: {
        List chars;
        for (std::string& c : SplitCodePoints(v.s)) chars.push_back(Value::Str(std::move(c)));
        return chars;
      }
      default:
        return InvalidArgumentError("chat template: '" + std::string(TypeName(v)) +
                                    "' object is not iterable" + At(offset));
    }
  }

  Status ExecFor(const Node& node) {
    UNMASK_ASSIGN_OR_RETURN(Value iterable, Eval(*node.expr));
    UNMASK_ASSIGN_OR_RETURN(List items, Iterate(iterable, node.expr->offset));
    scopes_.emplace_back();
    struct PopScope {
      std::vector<std::unordered_map<std::string, Value>>* scopes;
      ~PopScope() { scopes->pop_back(); }
    } pop{&scopes_};
    if (node.filter) {
      List kept;
      for (Value& item : items) {
        UNMASK_RETURN_IF_ERROR(Step(node.offset));
        UNMASK_RETURN_IF_ERROR(Assign(node.targets, item, node.offset));
        UNMASK_ASSIGN_OR_RETURN(Value keep, Eval(*node.filter));
        if (Truthy(keep)) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    const auto length = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < length; ++k) {
      UNMASK_RETURN_IF_ERROR(Step(node.offset));
      Dict loop = {
          {"index0", Value::Int(k)},
          {"index", Value::Int(k + 1)},
          {"revindex0", Value::Int(length - k - 1)},
          {"revindex", Value::Int(length - k)},
          {"first", Value::Bool(k == 0)},
          {"last", Value::Bool(k == length - 1)},
          {"length", Value::Int(length)},
          {"previtem", k > 0 ? items[k - 1] : Value::Undefined("loop.previtem")},
          {"nextitem", k + 1 < length ? items[k + 1] : Value::Undefined("loop.nextitem")},
      };
      scopes_.back()["loop"] = Value::MakeDict(std::move(loop));
      UNMASK_RETURN_IF_ERROR(Assign(node.targets, items[k], node.offset));
      UNMASK_ASSIGN_OR_RETURN(Flow flow, Exec(node.body));
      if (flow == Flow::kBreak) break;
    }
    if (length == 0 && !node.else_body.empty()) {
      UNMASK_ASSIGN_OR_RETURN(Flow flow, Exec(node.else_body));
      (void)flow;
    }
    return Status::Ok();
  }

  Value Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      const auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return Value::Undefined(name);
  }

  static Status UndefinedError(const Value& v, size_t offset) {
    return InvalidArgumentError("chat template: '" + v.s + "' is undefined" + At(offset));
  }

  static Status TypeError(std::string_view what, size_t offset) {
    return InvalidArgumentError("chat template: " + std::string(what) + At(offset));
  }

  // Jinja getattr/getitem: missing keys and bad indices give Undefined, not errors.
  static StatusOr<Value> GetItem(const Value& obj, const Value& key, std::string_view label,
                                 size_t offset) {
    if (obj.is_undefined()) return UndefinedError(obj, offset);
    const std::string name = std::string(label);
    if (obj.is_dict()) {
      if (key.is_string()) {
        if (const Value* v = obj.Find(key.s)) return *v;
      }
      return Value::Undefined(name);
    }
    if ((obj.is_list() || obj.is_string()) && key.is_integer()) {
      std::vector<std::string> chars;
      if (obj.is_string()) chars = SplitCodePoints(obj.s);
      const auto size = static_cast<int64_t>(obj.is_list() ? obj.list->size() : chars.size());
      int64_t k = key.as_int();
      if (k < 0) k += size;
      if (k < 0 || k >= size) return Value::Undefined(name);
      if (obj.is_list()) return (*obj.list)[k];
      return Value::Str(chars[k]);
    }
    return Value::Undefined(name);
  }

  static std::string Label(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kName:
        return e.name;
      case Expr::Kind::kAttr:
        return Label(*e.args[0]) + "." + e.name;
      case Expr::Kind::kIndex:
        return Label(*e.args[0]) + "[...]";
      default:
        return "value";
    }
  }

  StatusOr<Value> Eval(const Expr& e) {
    UNMASK_ASSIGN_OR_RETURN(Value v, EvalNode(e));
    if (v.depth > kMaxValueDepth) {
      return InvalidArgumentError("chat template: value nested too deeply" + At(e.offset));
    }
    return v;
  }

  StatusOr<Value> EvalNode(const Expr& e) {
    UNMASK_RETURN_IF_ERROR(Step(e.offset));
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kList: {
        List items;
        for (const auto& a : e.args) {
          UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*a));
          items.push_back(std::move(v));
        }
        return Value::MakeList(std::move(items));
      }
      case Expr::Kind::kDict: {
        Dict items;
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          UNMASK_ASSIGN_OR_RETURN(Value key, Eval(*e.args[k]));
          if (!key.is_string()) return TypeError("dict keys must be strings", e.args[k]->offset);
          UNMASK_ASSIGN_OR_RETURN(Value value, Eval(*e.args[k + 1]));
          auto it = std::find_if(items.begin(), items.end(),
                                 [&](const auto& kv) { return kv.first == key.s; });
          if (it != items.end()) {
            it->second = std::move(value);
          } else {
            items.emplace_back(key.s, std::move(value));
          }
        }
        return Value::MakeDict(std::move(items));
      }
      case Expr::Kind::kName:
        return Lookup(e.name);
      case Expr::Kind::kAttr: {
        UNMASK_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
        return GetItem(obj, Value::Str(e.name), Label(e), e.offset);
      }
      case Expr::Kind::kIndex: {
        UNMASK_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
        UNMASK_ASSIGN_OR_RETURN(Value key, Eval(*e.args[1]));
        return GetItem(obj, key, Label(e), e.offset);
      }
      case Expr::Kind::kSlice:
        return EvalSlice(e);
      case Expr::Kind::kCall:
        return EvalCall(e);
      case Expr::Kind::kFilter:
        return EvalFilter(e);
      case Expr::Kind::kTest: {
        UNMASK_ASSIGN_OR_RETURN(bool result, EvalTest(e));
        return Value::Bool(result != e.negated);
      }
      case Expr::Kind::kUnary: {
        UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0]));
        if (e.name == "not") return Value::Bool(!Truthy(v));
        if (v.is_undefined()) return UndefinedError(v, e.offset);
        if (!v.is_integer()) {
          return TypeError(
              "bad operand type for unary " + e.name + ": '" + std::string(TypeName(v)) + "'",
              e.offset);
        }
        if (e.name == "+") return Value::Int(v.as_int());
        if (v.as_int() == std::numeric_limits<int64_t>::min()) {
          return TypeError("integer overflow", e.offset);
        }
        return Value::Int(-v.as_int());
      }
      case Expr::Kind::kBinary:
        return EvalBinary(e);
      case Expr::Kind::kCompare:
        return EvalCompare(e);
      case Expr::Kind::kCondition: {
        UNMASK_ASSIGN_OR_RETURN(Value c, Eval(*e.args[0]));
        if (Truthy(c)) return Eval(*e.args[1]);
        if (e.args[2]) return Eval(*e.args[2]);
        return Value::Undefined("conditional expression");
      }
    }
    return InternalError("chat template: bad expression node");
  }

  StatusOr<Value> EvalSlice(const Expr& e) {
    UNMASK_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0]));
    if (obj.is_undefined()) return UndefinedError(obj, e.offset);
    if (!obj.is_list() && !obj.is_string()) {
      return TypeError("cannot slice '" + std::string(TypeName(obj)) + "'", e.offset);
    }
    std::optional<int64_t> bounds[3];
    for (int k = 0; k < 3; ++k) {
      if (!e.args[k + 1]) continue;
      UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*e.args[k + 1]));
      if (v.type == Value::Type::kNone) continue;
      if (!v.is_integer()) return TypeError("slice indices must be integers", e.offset);
      bounds[k] = v.as_int();
    }
    std::vector<std::string> chars;
    if (obj.is_string()) chars = SplitCodePoints(obj.s);
    const auto size = static_cast<int64_t>(obj.is_list() ? obj.list->size() : chars.size());
    const int64_t step = bounds[2].value_or(1);
    if (step == 0) return TypeError("slice step cannot be zero", e.offset);
    // Python slice.indices().
    const auto clamp = [&](std::optional<int64_t> b, int64_t def) {
      if (!b) return def;
      int64_t v = *b;
      if (v < 0) v = std::max<int64_t>(v + size, step < 0 ? -1 : 0);
      if (v >= size) v = step < 0 ? size - 1 : size;
      return v;
    };
    const int64_t start = clamp(bounds[0], step < 0 ? size - 1 : 0);
    const int64_t stop = clamp(bounds[1], step < 0 ? -1 : size);
    List items;
    std::string s;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
      if (obj.is_list()) {
        items.push_back((*obj.list)[k]);
      } else {
        s += chars[k];
      }
    }
    if (obj.is_list()) return Value::MakeList(std::move(items));
    return Value::Str(std::move(s));
  }

  StatusOr<std::vector<Value>> EvalArgs(const Expr& e, size_t first) {
    std::vector<Value> args;
    for (size_t k = first; k < e.args.size(); ++k) {
      UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*e.args[k]));
      args.push_back(std::move(v));
    }
    return args;
  }

  // Positional-or-keyword argument `index`/`name`; `fallback` when absent.
  StatusOr<Value> Arg(const Expr& e, const std::vector<Value>& args, size_t index,
                      std::string_view name, Value fallback) {
    if (index < args.size()) return args[index];
    for (const auto& [key, expr] : e.kwargs) {
      if (key == name) return Eval(*expr);
    }
    return fallback;
  }

  Status CheckArgCount(const Expr& e, const std::vector<Value>& args, size_t max,
                       std::string_view what) {
    if (args.size() + e.kwargs.size() > max) {
      return TypeError(std::string(what) + " takes at most " + std::to_string(max) + " arguments",
                       e.offset);
    }
    return Status::Ok();
  }

  StatusOr<Value> EvalCall(const Expr& e) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::kName && Lookup(callee.name).is_undefined()) {
      UNMASK_ASSIGN_OR_RETURN(std::vector<Value> args, EvalArgs(e, 1));
      if (callee.name == "raise_exception") {
        const std::string message = args.empty() ? "" : ToString(args[0]);
        return InvalidArgumentError(message);
      }
      if (callee.name == "range") {
        if (!e.kwargs.empty() || args.empty() || args.size() > 3) {
          return TypeError("range expects 1 to 3 integer arguments", e.offset);
        }
        for (const Value& a : args) {
          if (!a.is_integer()) return TypeError("range arguments must be integers", e.offset);
        }
        const int64_t start = args.size() >= 2 ? args[0].as_int() : 0;
        const int64_t stop = args.size() >= 2 ? args[1].as_int() : args[0].as_int();
        const int64_t step = args.size() == 3 ? args[2].as_int() : 1;
        if (step == 0) return TypeError("range step cannot be zero", e.offset);
        // Length first (unsigned arithmetic: the bounds may be 2^64 apart), then the values.
        uint64_t count = 0;
        if ((step > 0 && stop > start) || (step < 0 && stop < start)) {
          const uint64_t distance =
              step > 0 ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                       : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
          const uint64_t stride =
              step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
          count = (distance - 1) / stride + 1;
        }
        if (count > static_cast<uint64_t>(kMaxRange)) {
          return ResourceExhaustedError("chat template: range() longer than " +
                                        std::to_string(kMaxRange) + At(e.offset));
        }
        List items;
        items.reserve(count);
        int64_t value = start;
        for (uint64_t k = 0; k < count; ++k) {
          items.push_back(Value::Int(value));
          if (k + 1 < count) value += step;  // stays between start and stop
        }
        return Value::MakeList(std::move(items));
      }
      return Unsupported("function '" + callee.name + "'", callee.offset);
    }
    if (callee.kind == Expr::Kind::kAttr) {
      UNMASK_ASSIGN_OR_RETURN(Value obj, Eval(*callee.args[0]));
      UNMASK_ASSIGN_OR_RETURN(std::vector<Value> args, EvalArgs(e, 1));
      return CallMethod(e, obj, callee.name, args, callee.offset);
    }
    return Unsupported("call of a " + std::string(callee.kind == Expr::Kind::kName
                                                      ? "variable '" + callee.name + "'"
                                                      : "computed value"),
                       e.offset);
  }

  static std::string Strip(std::string_view s, std::optional<std::string> chars, bool left,
                           bool right) {
    const auto drop = [&](char c) {
      return chars ? chars->find(c) != std::string::npos : IsSpace(c);
    };
    size_t b = 0;
    size_t end = s.size();
    if (left) {
      while (b < end && drop(s[b])) ++b;
    }
    if (right) {
      while (end > b && drop(s[end - 1])) --end;
    }
    return std::string(s.substr(b, end - b));
  }

  static std::string Upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }
  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  static std::string Capitalize(std::string s) {
    s = Lower(std::move(s));
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return s;
  }
  static std::string Title(std::string s) {
    bool start = true;
    for (char& c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (std::isalpha(u)) {
        c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
        start = false;
      } else {
        start = true;
      }
    }
    return s;
  }

  StatusOr<std::string> Replace(const std::string& s, const Value& old_v, const Value& new_v,
                                const Value& count_v, size_t offset) {
    if (!old_v.is_string() || !new_v.is_string()) {
      return TypeError("replace expects string arguments", offset);
    }
    int64_t count = count_v.is_integer() ? count_v.as_int() : -1;
    std::string out;
    size_t pos = 0;
    if (old_v.s.empty()) return s;  // (Python inserts between characters; not needed here)
    while (count != 0) {
      const size_t hit = s.find(old_v.s, pos);
      if (hit == std::string::npos) break;
      out.append(s, pos, hit - pos).append(new_v.s);
      if (out.size() > kMaxString) return ResourceExhaustedError("chat template: string too long");
      pos = hit + old_v.s.size();
      if (count > 0) --count;
    }
    out.append(s, pos, std::string::npos);
    return out;
  }

  StatusOr<Value> CallMethod(const Expr& e, const Value& obj, const std::string& method,
                             const std::vector<Value>& args, size_t offset) {
    if (obj.is_undefined()) return UndefinedError(obj, offset);
    if (obj.is_string()) {
      const std::string& s = obj.s;
      if (method == "strip" || method == "lstrip" || method == "rstrip") {
        UNMASK_RETURN_IF_ERROR(CheckArgCount(e, args, 1, method));
        std::optional<std::string> chars;
        if (!args.empty() && args[0].is_string()) chars = args[0].s;
        return Value::Str(Strip(s, chars, method != "rstrip", method != "lstrip"));
      }
      if (method == "upper") return Value::Str(Upper(s));
      if (method == "lower") return Value::Str(Lower(s));
      if (method == "title") return Value::Str(Title(s));
      if (method == "capitalize") return Value::Str(Capitalize(s));
      if (method == "startswith" || method == "endswith") {
        if (args.size() != 1) return TypeError(method + " expects one argument", offset);
        std::vector<std::string> candidates;
        if (args[0].is_string()) {
          candidates.push_back(args[0].s);
        } else if (args[0].is_list()) {
          for (const Value& v : *args[0].list) {
            if (!v.is_string()) return TypeError(method + " expects strings", offset);
            candidates.push_back(v.s);
          }
        } else {
          return TypeError(method + " expects a string", offset);
        }
        for (const std::string& c : candidates) {
          const bool hit =
              method == "startswith"
                  ? s.compare(0, c.size(), c) == 0 && s.size() >= c.size()
                  : s.size() >= c.size() && s.compare(s.size() - c.size(), c.size(), c) == 0;
          if (hit) return Value::Bool(true);
        }
        return Value::Bool(false);
      }
      if (method == "split") {
        List parts;
        const bool by_space = args.empty() || args[0].type == Value::Type::kNone;
        if (!by_space && (!args[0].is_string() || args[0].s.empty())) {
          return TypeError("split expects a non-empty string separator", offset);
        }
        int64_t max_split = args.size() > 1 && args[1].is_integer() ? args[1].as_int() : -1;
        if (by_space) {  // Python str.split(None, maxsplit)
          size_t k = 0;
          while (true) {
            while (k < s.size() && IsSpace(s[k])) ++k;
            if (k >= s.size()) break;
            if (max_split == 0) {
              parts.push_back(Value::Str(s.substr(k)));
              break;
            }
            size_t j = k;
            while (j < s.size() && !IsSpace(s[j])) ++j;
            parts.push_back(Value::Str(s.substr(k, j - k)));
            if (max_split > 0) --max_split;
            k = j;
          }
        } else {
          size_t pos = 0;
          while (true) {
            const size_t hit = max_split == 0 ? std::string::npos : s.find(args[0].s, pos);
            if (hit == std::string::npos) {
              parts.push_back(Value::Str(s.substr(pos)));
              break;
            }
            parts.push_back(Value::Str(s.substr(pos, hit - pos)));
            pos = hit + args[0].s.size();
            if (max_split > 0) --max_split;
          }
        }
        return Value::MakeList(std::move(parts));
      }
      if (method == "replace") {
        if (args.size() < 2 || args.size() > 3)
          return TypeError("replace expects 2-3 args", offset);
        UNMASK_ASSIGN_OR_RETURN(
            std::string r,
            Replace(s, args[0], args[1], args.size() > 2 ? args[2] : Value(), offset));
        return Value::Str(std::move(r));
      }
      if (method == "join") {
        if (args.size() != 1) return TypeError("join expects one argument", offset);
        UNMASK_ASSIGN_OR_RETURN(List items, Iterate(args[0], offset));
        std::string out;
        for (size_t k = 0; k < items.size(); ++k) {
          if (!items[k].is_string()) return TypeError("join expects strings", offset);
          if (k > 0) out += s;
          out += items[k].s;
          if (out.size() > kMaxString) return ResourceExhaustedError("chat template: too long");
        }
        return Value::Str(std::move(out));
      }
    } else if (obj.is_dict()) {
      if (method == "get") {
        if (args.empty() || args.size() > 2) return TypeError("get expects 1-2 arguments", offset);
        if (args[0].is_string()) {
          if (const Value* v = obj.Find(args[0].s)) return *v;
        }
        return args.size() > 1 ? args[1] : Value::None();
      }
      if (method == "items" || method == "keys" || method == "values") {
        List items;
        for (const auto& [k, v] : *obj.dict) {
          if (method == "items") {
            items.push_back(Value::MakeList({Value::Str(k), v}));
          } else {
            items.push_back(method == "keys" ? Value::Str(k) : v);
          }
        }
        return Value::MakeList(std::move(items));
      }
    }
    return Unsupported("method '" + method + "' of " + std::string(TypeName(obj)), offset);
  }

  StatusOr<Value> EvalFilter(const Expr& e) {
    UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0]));
    UNMASK_ASSIGN_OR_RETURN(std::vector<Value> args, EvalArgs(e, 1));
    const std::string& f = e.name;
    const size_t at = e.offset;
    if (f == "trim") {
      UNMASK_ASSIGN_OR_RETURN(Value chars, Arg(e, args, 0, "chars", Value::None()));
      std::optional<std::string> set;
      if (chars.is_string()) set = chars.s;
      return Value::Str(Strip(ToString(v), set, true, true));
    }
    if (f == "length" || f == "count") {
      switch (v.type) {
        case Value::Type::kUndefined:
          return Value::Int(0);
        case Value::Type::kString:
          return Value::Int(static_cast<int64_t>(SplitCodePoints(v.s).size()));
        case Value::Type::kList:
          return Value::Int(static_cast<int64_t>(v.list->size()));
        case Value::Type::kDict:
          return Value::Int(static_cast<int64_t>(v.dict->size()));
        default:
          return TypeError("object of type '" + std::string(TypeName(v)) + "' has no len()", at);
      }
    }
    if (f == "upper") return Value::Str(Upper(ToString(v)));
    if (f == "lower") return Value::Str(Lower(ToString(v)));
    if (f == "capitalize") return Value::Str(Capitalize(ToString(v)));
    if (f == "title") return Value::Str(Title(ToString(v)));
    if (f == "string") return Value::Str(ToString(v));
    if (f == "safe") return v;
    if (f == "first" || f == "last") {
      UNMASK_ASSIGN_OR_RETURN(List items, Iterate(v, at));
      if (items.empty()) return Value::Undefined(f);
      return f == "first" ? items.front() : items.back();
    }
    if (f == "list") {
      UNMASK_ASSIGN_OR_RETURN(List items, Iterate(v, at));
      return Value::MakeList(std::move(items));
    }
    if (f == "reverse") {
      if (v.is_string()) {
        std::vector<std::string> chars = SplitCodePoints(v.s);
        std::string out;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
        return Value::Str(std::move(out));
      }
      UNMASK_ASSIGN_OR_RETURN(List items, Iterate(v, at));
      std::reverse(items.begin(), items.end());
      return Value::MakeList(std::move(items));
    }
    if (f == "join") {
      UNMASK_ASSIGN_OR_RETURN(Value sep, Arg(e, args, 0, "d", Value::Str("")));
      UNMASK_ASSIGN_OR_RETURN(List items, Iterate(v, at));
      std::string out;
      for (size_t k = 0; k < items.size(); ++k) {
        if (k > 0) out += ToString(sep);
        out += ToString(items[k]);
        if (out.size() > kMaxString) return ResourceExhaustedError("chat template: too long");
      }
      return Value::Str(std::move(out));
    }
    if (f == "default" || f == "d") {
      UNMASK_ASSIGN_OR_RETURN(Value fallback, Arg(e, args, 0, "default_value", Value::Str("")));
      UNMASK_ASSIGN_OR_RETURN(Value boolean, Arg(e, args, 1, "boolean", Value::Bool(false)));
      const bool use_fallback = v.is_undefined() || (Truthy(boolean) && !Truthy(v));
      return use_fallback ? fallback : v;
    }
    if (f == "items") {
      if (v.is_undefined()) return Value::MakeList({});
      if (!v.is_dict()) return TypeError("items expects a mapping", at);
      List items;
      for (const auto& [k, val] : *v.dict) items.push_back(Value::MakeList({Value::Str(k), val}));
      return Value::MakeList(std::move(items));
    }
    if (f == "replace") {
      if (args.size() < 2) return TypeError("replace expects 2-3 arguments", at);
      UNMASK_ASSIGN_OR_RETURN(std::string r, Replace(ToString(v), args[0], args[1],
                                                     args.size() > 2 ? args[2] : Value(), at));
      return Value::Str(std::move(r));
    }
    return Unsupported("filter '" + f + "'", at);
  }

  StatusOr<bool> EvalTest(const Expr& e) {
    UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0]));
    UNMASK_ASSIGN_OR_RETURN(std::vector<Value> args, EvalArgs(e, 1));
    const std::string& t = e.name;
    if (t == "defined") return !v.is_undefined();
    if (t == "undefined") return v.is_undefined();
    if (t == "none") return v.type == Value::Type::kNone;
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_integer() && v.type != Value::Type::kBool;
    if (t == "integer") return v.type == Value::Type::kInt;
    if (t == "boolean") return v.type == Value::Type::kBool;
    if (t == "true") return v.type == Value::Type::kBool && v.b;
    if (t == "false") return v.type == Value::Type::kBool && !v.b;
    if (t == "mapping") return v.is_dict();
    if (t == "iterable") return v.is_list() || v.is_dict() || v.is_string();
    if (t == "sequence") return v.is_list() || v.is_dict() || v.is_string();
    if (t == "even" || t == "odd" || t == "divisibleby") {
      if (!v.is_integer()) return TypeError("test '" + t + "' expects an integer", e.offset);
      int64_t divisor = 2;
      if (t == "divisibleby") {
        if (args.size() != 1 || !args[0].is_integer() || args[0].as_int() == 0) {
          return TypeError("divisibleby expects a non-zero integer", e.offset);
        }
        divisor = args[0].as_int();
      }
      const bool divisible = divisor == -1 || v.as_int() % divisor == 0;
      return t == "odd" ? !divisible : divisible;
    }
    if (t == "eq" || t == "equalto" || t == "sameas" || t == "ne") {
      if (args.size() != 1) return TypeError("test '" + t + "' expects one argument", e.offset);
      return (t == "ne") != Equal(v, args[0]);
    }
    return Unsupported("test '" + t + "'", e.offset);
  }

  StatusOr<Value> EvalBinary(const Expr& e) {
    const std::string& op = e.name;
    UNMASK_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0]));
    if (op == "and") return Truthy(a) ? Eval(*e.args[1]) : a;
    if (op == "or") return Truthy(a) ? a : Eval(*e.args[1]);
    UNMASK_ASSIGN_OR_RETURN(Value b, Eval(*e.args[1]));
    if (op == "~") {
      std::string s = ToString(a) + ToString(b);
      if (s.size() > kMaxString) return ResourceExhaustedError("chat template: string too long");
      return Value::Str(std::move(s));
    }
    if (a.is_undefined()) return UndefinedError(a, e.args[0]->offset);
    if (b.is_undefined()) return UndefinedError(b, e.args[1]->offset);
    const auto type_error = [&]() {
      return TypeError("unsupported operand types for " + op + ": '" + std::string(TypeName(a)) +
                           "' and '" + std::string(TypeName(b)) + "'",
                       e.offset);
    };
    if (op == "/") return Unsupported("operator '/' (float division)", e.offset);
    if (a.is_integer() && b.is_integer()) {
      const int64_t x = a.as_int();
      const int64_t y = b.as_int();
      int64_t r = 0;
      bool overflow = false;
      if (op == "+") {
        overflow = __builtin_add_overflow(x, y, &r);
      } else if (op == "-") {
        overflow = __builtin_sub_overflow(x, y, &r);
      } else if (op == "*") {
        overflow = __builtin_mul_overflow(x, y, &r);
      } else if (op == "//" || op == "%") {
        if (y == 0) return TypeError("integer division or modulo by zero", e.offset);
        if (x == std::numeric_limits<int64_t>::min() && y == -1) {
          overflow = op == "//";
          r = 0;
        } else {
          int64_t q = x / y;
          int64_t m = x % y;
          if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors
            --q;
            m += y;
          }
          r = op == "//" ? q : m;
        }
      } else if (op == "**") {
        if (y < 0) return Unsupported("negative exponent (float result)", e.offset);
        r = 1;
        for (int64_t k = 0; k < y && !overflow; ++k) {
          overflow = __builtin_mul_overflow(r, x, &r);
          if (r == 0 || r == 1) break;  // 0**k, 1**k
        }
        if (x == -1) r = (y % 2 == 0) ? 1 : -1;
      } else {
        return type_error();
      }
      if (overflow) return TypeError("integer overflow", e.offset);
      return Value::Int(r);
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        if (a.s.size() + b.s.size() > kMaxString) {
          return ResourceExhaustedError("chat template: string too long" + At(e.offset));
        }
        return Value::Str(a.s + b.s);
      }
      if (a.is_list() && b.is_list()) {
        List items = *a.list;
        items.insert(items.end(), b.list->begin(), b.list->end());
        return Value::MakeList(std::move(items));
      }
      return type_error();
    }
    if (op == "*" && (a.is_string() || a.is_list()) != (b.is_string() || b.is_list()) &&
        (a.is_integer() || b.is_integer())) {
      const Value& seq = a.is_integer() ? b : a;
      const int64_t times = std::max<int64_t>(0, a.is_integer() ? a.as_int() : b.as_int());
      const size_t unit = seq.is_string() ? seq.s.size() : seq.list->size();
      if (unit != 0 && static_cast<uint64_t>(times) > kMaxString / unit) {
        return ResourceExhaustedError("chat template: repetition too long" + At(e.offset));
      }
      if (seq.is_string()) {
        std::string s;
        for (int64_t k = 0; k < times; ++k) s += seq.s;
        return Value::Str(std::move(s));
      }
      List items;
      for (int64_t k = 0; k < times; ++k)
        items.insert(items.end(), seq.list->begin(), seq.list->end());
      return Value::MakeList(std::move(items));
    }
    return type_error();
  }

  StatusOr<bool> CompareOne(const std::string& op, const Value& a, const Value& b, size_t offset) {
    if (op == "==") return Equal(a, b);
    if (op == "!=") return !Equal(a, b);
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.is_string()) {
        if (!a.is_string()) {
          return TypeError(
              "'in <string>' requires string as left operand, not " + std::string(TypeName(a)),
              offset);
        }
        found = b.s.find(a.s) != std::string::npos;
      } else if (b.is_list()) {
        found = std::any_of(b.list->begin(), b.list->end(),
                            [&](const Value& x) { return Equal(a, x); });
      } else if (b.is_dict()) {
        found = a.is_string() && b.Find(a.s) != nullptr;
      } else if (b.is_undefined()) {
        found = false;
      } else {
        return TypeError("argument of type '" + std::string(TypeName(b)) + "' is not iterable",
                         offset);
      }
      return op == "in" ? found : !found;
    }
    int cmp = 0;
    if (a.is_integer() && b.is_integer()) {
      cmp = a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    } else if (a.is_string() && b.is_string()) {
      cmp = a.s.compare(b.s);  // UTF-8 byte order is code point order
    } else {
      if (a.is_undefined()) return UndefinedError(a, offset);
      if (b.is_undefined()) return UndefinedError(b, offset);
      return TypeError("'" + op + "' not supported between '" + std::string(TypeName(a)) +
                           "' and '" + std::string(TypeName(b)) + "'",
                       offset);
    }
    if (op == "<") return cmp < 0;
    if (op == ">") return cmp > 0;
    if (op == "<=") return cmp <= 0;
    return cmp >= 0;
  }

  StatusOr<Value> EvalCompare(const Expr& e) {
    UNMASK_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0]));
    for (size_t k = 0; k < e.ops.size(); ++k) {
      UNMASK_ASSIGN_OR_RETURN(Value right, Eval(*e.args[k + 1]));
      UNMASK_ASSIGN_OR_RETURN(bool ok, CompareOne(e.ops[k], left, right, e.offset));
      if (!ok) return Value::Bool(false);
      left = std::move(right);
    }
    return Value::Bool(true);
  }

  const int64_t max_steps_;
  const size_t max_output_;
  std::vector<std::unordered_map<std::string, Value>> scopes_;
  std::string out_;
  int64_t steps_ = 0;
};

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

}  // namespace

struct ChatTemplate::Impl {
  std::vector<Node> nodes;
};

ChatTemplate::ChatTemplate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

StatusOr<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  const std::string normalized = NormalizeSource(source);
  UNMASK_ASSIGN_OR_RETURN(std::vector<Segment> segments, Lex(normalized));
  TemplateParser parser(std::move(segments));
  auto impl = std::make_unique<Impl>();
  UNMASK_ASSIGN_OR_RETURN(impl->nodes, parser.ParseAll());
  return ChatTemplate(std::move(impl));
}

StatusOr<std::string> ChatTemplate::Render(const ChatTemplateInputs& inputs) const {
  Renderer renderer(inputs);
  return renderer.Run(impl_->nodes);
}

StatusOr<std::string> RenderChatTemplate(std::string_view source,
                                         const ChatTemplateInputs& inputs) {
  UNMASK_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::Parse(source));
  return tmpl.Render(inputs);
}

}  // namespace unmask
