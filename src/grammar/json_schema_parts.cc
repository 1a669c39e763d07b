// Helpers of the JSON schema compiler (json_schema.cc): keyword tables, decimal ranges as GBNF,
// JSON value tests, rule names and JSON pointers.
#include "grammar/json_schema_parts.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

namespace unmask::grammar::schema_parts {

using json = nlohmann::ordered_json;

namespace {

bool AllChar(const std::string& s, char c) {
  return std::all_of(s.begin(), s.end(), [c](char x) { return x == c; });
}

std::string DigitClass(char a, char b) {
  if (a == b) return std::string("\"") + a + "\"";
  return std::string("[") + a + "-" + b + "]";
}

std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? " [0-9]" : " [0-9]{" + std::to_string(n) + "}";
}

// Decimal strings of equal length from a to b (a <= b), leading zeros allowed (inner digits).
std::string SameLength(const std::string& a, const std::string& b) {
  if (a == b) return "\"" + a + "\"";
  size_t i = 0;
  while (a[i] == b[i]) ++i;
  const std::string p = a.substr(0, i);
  const std::string ra = a.substr(i + 1), rb = b.substr(i + 1);
  const size_t r = ra.size();
  const std::string prefix = p.empty() ? "" : "\"" + p + "\" ";
  char lo = a[i], hi = b[i];
  std::vector<std::string> parts;
  std::string top;
  if (!AllChar(ra, '0')) {
    parts.push_back(prefix + "\"" + lo + "\" ( " + SameLength(ra, std::string(r, '9')) + " )");
    ++lo;
  }
  if (!AllChar(rb, '9')) {
    top = prefix + "\"" + hi + "\" ( " + SameLength(std::string(r, '0'), rb) + " )";
    --hi;
  }
  if (lo <= hi) parts.push_back(prefix + DigitClass(lo, hi) + AnyDigits(r));
  if (!top.empty()) parts.push_back(top);
  if (parts.size() == 1) return parts[0];
  std::string out = "( ";
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? " | " : "") + parts[k];
  return out + " )";
}

}  // namespace

const std::set<std::string>& Annotations() {
  static const std::set<std::string> k = {
      "title",           "description",      "default",      "examples",
      "example",         "$schema",          "$id",          "$comment",
      "deprecated",      "readOnly",         "writeOnly",    "$defs",
      "definitions",     "$anchor",          "$vocabulary",  "discriminator",
      "contentEncoding", "contentMediaType", "externalDocs", "xml"};
  return k;
}

// Keywords that only describe (2020-12's annotations, OpenAPI's discriminator, example, xml and
// externalDocs, and the "x-" extension keys of OpenAPI and tool schemas): ignored.
bool IsAnnotation(const std::string& key) {
  return Annotations().count(key) != 0 || key.rfind("x-", 0) == 0;
}

// The keywords of each type's validation (those of a type list are split per type). format is an
// annotation except on strings (date, time, date-time, uuid).
const std::map<std::string, std::set<std::string>>& KeywordsOfType() {
  static const std::map<std::string, std::set<std::string>> k = {
      {"object", {"properties", "required", "additionalProperties"}},
      {"array", {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"}},
      {"string", {"minLength", "maxLength", "format"}},
      {"integer", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "format"}},
      {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "format"}},
      {"boolean", {"format"}},
      {"null", {}}};
  return k;
}

// Non-negative integers in [lo, hi] without leading zeros.
std::string NonNegative(int64_t lo, int64_t hi) {
  const std::string slo = std::to_string(lo), shi = std::to_string(hi);
  std::vector<std::string> parts;
  for (size_t len = slo.size(); len <= shi.size(); ++len) {
    const std::string a = len == slo.size() ? slo : "1" + std::string(len - 1, '0');
    const std::string b = len == shi.size() ? shi : std::string(len, '9');
    parts.push_back(SameLength(a, b));
  }
  if (parts.size() == 1) return parts[0];
  std::string out = "( ";
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? " | " : "") + parts[k];
  return out + " )";
}

// Deepest nesting of arrays and objects in v (1 for a scalar), without recursion: nlohmann's
// dump() and copies recurse per level, so a schema must be checked before they run.
int NestingDepth(const json& v) {
  int deepest = 0;
  std::vector<std::pair<const json*, int>> stack = {{&v, 1}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    deepest = std::max(deepest, depth);
    if (node->is_structured()) {
      for (const json& child : *node) stack.emplace_back(&child, depth + 1);
    }
  }
  return deepest;
}

// An integer-valued number (5 and 5.0 alike, JSON Schema counts both) as int64, saturated at the
// int64 range; nullopt for anything else.
std::optional<int64_t> AsInteger(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return static_cast<int64_t>(std::min<uint64_t>(u, uint64_t{INT64_MAX}));
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (x != std::floor(x)) return std::nullopt;
    if (x >= 9.2e18) return INT64_MAX;
    if (x <= -9.2e18) return INT64_MIN;
    return static_cast<int64_t>(x);
  }
  return std::nullopt;
}

// Whether a value has JSON Schema type t.
bool HasType(const json& v, const std::string& t) {
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") return AsInteger(v).has_value();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  return false;
}

// A JSON pointer's array index: decimal digits only, no sign; false when it does not fit.
bool ArrayIndex(const std::string& key, size_t* index) {
  if (key.empty() ||
      !std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const auto r = std::from_chars(key.data(), key.data() + key.size(), *index);
  return r.ec == std::errc() && r.ptr == key.data() + key.size();
}

std::string Sanitize(const std::string& hint) {
  std::string out;
  for (char c : hint) {
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      out.push_back(c);
    } else if (c >= 'A' && c <= 'Z') {
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  // Short: a rule's name grows with the path of properties, and NewName numbers collisions.
  if (out.size() > 48) out.resize(48);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "item" : out;
}

std::string Pointer(const std::string& base, const std::string& key) {
  std::string k;
  for (char c : key) {
    if (c == '~') {
      k += "~0";
    } else if (c == '/') {
      k += "~1";
    } else {
      k.push_back(c);
    }
  }
  return base + "/" + k;
}

void CharTrie::Add(const std::string& text, bool json_escapes) {
  size_t node = 0;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (json_escapes && c == '\\') len = i + 1 < text.size() && text[i + 1] == 'u' ? 6 : 2;
    len = std::min(len, text.size() - i);
    const std::string unit = text.substr(i, len);
    i += len;
    auto it = nodes[node].next.find(unit);
    if (it == nodes[node].next.end()) {
      nodes.emplace_back();
      it = nodes[node].next.emplace(unit, nodes.size() - 1).first;
    }
    node = it->second;
  }
  nodes[node].ends = true;
}

}  // namespace unmask::grammar::schema_parts
