// Python semantics of chat template values: type names, truthiness, equality, str() and repr().
#include "tokenizer/chat_template_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
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
    case Value::Type::kFloat:
      return "float";
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
    case Value::Type::kFloat:
      return v.f != 0;
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
  if (a.is_number() && b.is_number()) return a.as_double() == b.as_double();
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

std::string FloatRepr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form: [-]d[.ddd]e[+-]XX.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  const size_t e = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t k = negative ? 1 : 0; k < e; ++k) {
    if (sci[k] != '.') digits += sci[k];
  }
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent) + 1) + "." +
             digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const int mag = exponent < 0 ? -exponent : exponent;
  out += exponent < 0 ? "e-" : "e+";
  if (mag < 10) out += '0';
  return out + std::to_string(mag);
}

namespace {

void JsonString(std::string_view s, std::string* out) {
  *out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (u < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          *out += "\\u00";
          *out += kHex[u >> 4];
          *out += kHex[u & 15];
        } else {
          *out += c;
        }
    }
  }
  *out += '"';
}

void NewLine(int indent, int level, std::string* out) {
  *out += '\n';
  out->append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
}

}  // namespace

bool ToJson(const Value& v, int indent, bool sort_keys, std::string* out, int level) {
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.type) {
    case Value::Type::kUndefined:
      return false;
    case Value::Type::kNone:
      *out += "null";
      return true;
    case Value::Type::kBool:
      *out += v.b ? "true" : "false";
      return true;
    case Value::Type::kInt:
      *out += std::to_string(v.i);
      return true;
    case Value::Type::kFloat:
      if (std::isnan(v.f)) {
        *out += "NaN";
      } else if (std::isinf(v.f)) {
        *out += v.f < 0 ? "-Infinity" : "Infinity";
      } else {
        *out += FloatRepr(v.f);
      }
      return true;
    case Value::Type::kString:
      JsonString(v.s, out);
      return true;
    case Value::Type::kList: {
      if (v.list->empty()) {
        *out += "[]";
        return true;
      }
      *out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k > 0) *out += item_sep;
        if (indent >= 0) NewLine(indent, level + 1, out);
        if (!ToJson((*v.list)[k], indent, sort_keys, out, level + 1)) return false;
      }
      if (indent >= 0) NewLine(indent, level, out);
      *out += ']';
      return true;
    }
    case Value::Type::kDict: {
      if (v.dict->empty()) {
        *out += "{}";
        return true;
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& kv : *v.dict) entries.push_back(&kv);
      if (sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      *out += '{';
      for (size_t k = 0; k < entries.size(); ++k) {
        if (k > 0) *out += item_sep;
        if (indent >= 0) NewLine(indent, level + 1, out);
        JsonString(entries[k]->first, out);
        *out += ": ";
        if (!ToJson(entries[k]->second, indent, sort_keys, out, level + 1)) return false;
      }
      if (indent >= 0) NewLine(indent, level, out);
      *out += '}';
      return true;
    }
  }
  return false;
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
    case Value::Type::kFloat:
      return FloatRepr(v.f);
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
