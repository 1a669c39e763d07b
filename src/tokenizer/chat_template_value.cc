// Python semantics of chat template values: type names, truthiness, equality, str() and repr().
#include "tokenizer/chat_template_value.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/unicode_util.h"

namespace unmask::chat_template_internal {

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

}  // namespace unmask::chat_template_internal
