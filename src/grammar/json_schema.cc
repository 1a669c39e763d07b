#include "grammar/json_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "grammar/gbnf_parser.h"

namespace unmask::grammar {
namespace {

using json = nlohmann::ordered_json;

// Integers generated for a schema have at most this many digits.
constexpr int64_t kMaxInt = 9999999999999999;  // 16 nines
constexpr int64_t kMaxItems = 4096;
// Deepest nesting of a schema, values of const and enum included (a request body has at most 64).
constexpr int kMaxSchemaDepth = 128;
// Deepest chain of sub-schemas compiled inside one another, references followed (pydantic's
// Optional[Model] is three: anyOf, $ref, the object; the compiler recurses per level).
constexpr int kMaxVisitDepth = 256;
// Sub-schemas compiled: allOf merges copy what they refer to, so a 2 KB schema can double the
// work per level; this bounds the compile time (well under a second) of any schema.
constexpr int kMaxVisits = 10000;

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

// true, {} or a schema of annotations only: every value.
bool AcceptsAnything(const json& s) {
  if (s.is_boolean()) return s.get<bool>();
  if (!s.is_object()) return false;
  return std::all_of(s.items().begin(), s.items().end(),
                     [](const auto& kv) { return IsAnnotation(kv.key()); });
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

// The fixed rules every grammar may use.
const char* kPrimitives = R"(ws ::= ( " " | "\n" [ \t]{0,20} )?
json-char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-string ::= "\"" json-char* "\""
json-string-rest ::= json-char* "\""
json-integral ::= "0" | [1-9] [0-9]{0,15}
json-number ::= "-"? json-integral ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-member ::= json-string ws ":" ws json-value ws
json-object ::= "{" ws ( json-member ( "," ws json-member )* )? "}"
json-array ::= "[" ws ( json-value ws ( "," ws json-value ws )* )? "]"
json-hex ::= [0-9a-fA-F]
json-date ::= [0-9]{4} "-" json-month-day | json-leap-year "-02-29"
json-month-day ::= ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] )
json-leap-year ::= [0-9]{2} ( "0" [48] | [2468] [048] | [13579] [26] ) | ( "0" [48] | [2468] [048] | [13579] [26] ) "00" | "0000"
json-time ::= ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )
)";

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

class Compiler {
 public:
  explicit Compiler(const json& root) : root_(root) {
    for (const char* n :
         {"ws", "json-char", "json-string", "json-integral", "json-number", "json-boolean",
          "json-null", "json-value", "json-member", "json-object", "json-string-rest", "json-array",
          "json-hex", "json-date", "json-time", "root"}) {
      used_.insert(n);
    }
  }

  StatusOr<std::string> Run() {
    if (NestingDepth(root_) > kMaxSchemaDepth) {
      return Error("the schema nests deeper than " + std::to_string(kMaxSchemaDepth) +
                       " levels (values of const and enum included)",
                   "");
    }
    UNMASK_ASSIGN_OR_RETURN(const std::string expr, Visit(root_, "root", ""));
    // An optional leading space: SentencePiece vocabularies write one before the first word.
    std::string out = "root ::= \" \"? " + expr + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out + kPrimitives;
  }

 private:
  Status Error(const std::string& what, const std::string& ptr) const {
    return InvalidArgumentError("JSON schema: " + what + " at " + (ptr.empty() ? "/" : ptr) + "");
  }

  std::string NewName(const std::string& hint) {
    std::string base = Sanitize(hint);
    std::string name = base;
    for (int n = 2; used_.count(name) != 0; ++n) name = base + "-" + std::to_string(n);
    used_.insert(name);
    return name;
  }

  std::string AddRule(const std::string& hint, const std::string& body) {
    const std::string name = NewName(hint);
    rules_[name] = body;
    return name;
  }

  StatusOr<const json*> Resolve(const std::string& ref, const std::string& ptr) {
    if (ref.empty() || ref[0] != '#') {
      return Error("$ref '" + ref + "' is not local (only '#...' references are supported)", ptr);
    }
    const json* node = &root_;
    size_t i = 1;
    if (i < ref.size() && ref[i] != '/')
      return Error("$ref '" + ref + "' is not a JSON pointer", ptr);
    while (i < ref.size()) {
      const size_t j = ref.find('/', i + 1);
      std::string seg = ref.substr(i + 1, j == std::string::npos ? std::string::npos : j - i - 1);
      // A fragment is URI-encoded first ("#/$defs/My%20Model"), then a JSON pointer (~0, ~1).
      std::string decoded;
      for (size_t k = 0; k < seg.size(); ++k) {
        int hex = -1;
        if (seg[k] == '%' && k + 2 < seg.size()) {
          unsigned v = 0;
          const auto r = std::from_chars(seg.data() + k + 1, seg.data() + k + 3, v, 16);
          if (r.ec == std::errc() && r.ptr == seg.data() + k + 3) hex = static_cast<int>(v);
        }
        if (hex >= 0) {
          decoded.push_back(static_cast<char>(hex));
          k += 2;
        } else {
          decoded.push_back(seg[k]);
        }
      }
      seg = std::move(decoded);
      std::string key;
      for (size_t k = 0; k < seg.size(); ++k) {
        if (seg[k] == '~' && k + 1 < seg.size()) {
          key.push_back(seg[k + 1] == '1' ? '/' : '~');
          ++k;
        } else {
          key.push_back(seg[k]);
        }
      }
      if (node->is_object() && node->contains(key)) {
        node = &node->at(key);
      } else if (size_t index = 0;
                 node->is_array() && ArrayIndex(key, &index) && index < node->size()) {
        node = &node->at(index);
      } else {
        return Error("$ref '" + ref + "' does not resolve", ptr);
      }
      if (j == std::string::npos) break;
      i = j;
    }
    return node;
  }

  Status CheckKeys(const json& s, const std::set<std::string>& allowed, const std::string& ptr) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (allowed.count(it.key()) == 0 && !IsAnnotation(it.key())) {
        return Error(
            "keyword '" + it.key() + "' is not supported" +
                (it.key() == "pattern" ? " (regular expressions are not compiled yet)" : ""),
            ptr);
      }
    }
    return Status::Ok();
  }

  StatusOr<std::string> Literal(const json& v) { return GbnfLiteral(v.dump()); }

  // const / enum: the listed values, those of the schema's `type` when it has one (a value of
  // another type cannot validate). Other keywords beside them are refused by name: a value is
  // written as listed, so nothing else (pattern, minLength, anyOf...) would be enforced.
  StatusOr<std::string> Choices(const json& s, const std::string& ptr) {
    UNMASK_RETURN_IF_ERROR(CheckKeys(s, {"const", "enum", "type", "nullable"}, ptr));
    const char* key = s.contains("const") ? "const" : "enum";
    std::vector<const json*> values;
    if (s.contains("const")) {
      values.push_back(&s.at("const"));
      if (s.contains("enum")) {
        if (!s.at("enum").is_array()) return Error("'enum' must be a non-empty array", ptr);
        bool listed = false;
        for (const json& e : s.at("enum")) listed |= e == s.at("const");
        if (!listed) return Error("the 'const' value is not in 'enum': no value is valid", ptr);
      }
    } else {
      if (!s.at("enum").is_array() || s.at("enum").empty()) {
        return Error("'enum' must be a non-empty array", ptr);
      }
      for (const json& e : s.at("enum")) values.push_back(&e);
    }
    if (s.contains("type")) {
      std::vector<std::string> types;
      const json& t = s.at("type");
      if (t.is_string()) {
        types.push_back(t);
      } else if (t.is_array() && !t.empty() &&
                 std::all_of(t.begin(), t.end(), [](const json& x) { return x.is_string(); })) {
        for (const json& x : t) types.push_back(x);
      } else {
        return Error("'type' must be a name or a list of names", ptr);
      }
      const bool nullable = s.contains("nullable") && s.at("nullable") == true;
      std::erase_if(values, [&](const json* v) {
        if (nullable && v->is_null()) return false;
        return std::none_of(types.begin(), types.end(),
                            [&](const std::string& name) { return HasType(*v, name); });
      });
      if (values.empty()) {
        return Error(std::string("no value of '") + key + "' has the schema's 'type'", ptr);
      }
    }
    std::string out = "( ";
    for (size_t i = 0; i < values.size(); ++i) {
      UNMASK_ASSIGN_OR_RETURN(std::string lit, Literal(*values[i]));
      out += (i ? " | " : "") + lit;
    }
    return out + " )";
  }

  StatusOr<std::optional<int64_t>> Bound(const json& s, const char* key, bool lower, bool exclusive,
                                         const std::string& ptr) {
    if (!s.contains(key)) return std::optional<int64_t>();
    const json& v = s.at(key);
    if (v.is_boolean()) {
      return Error(std::string("'") + key + "' as a boolean (draft 4) is not supported", ptr);
    }
    if (!v.is_number()) return Error(std::string("'") + key + "' must be a number", ptr);
    const double x = v.get<double>();
    // Generated integers have at most 16 digits: a lower bound above that range (or an upper
    // one below it) leaves nothing to generate; one beyond it on the other side bounds nothing.
    constexpr double kLimit = 1e16;  // kMaxInt + 1, exact in double
    if ((lower && x >= kLimit) || (!lower && x <= -kLimit)) {
      return Error(std::string("'") + key + "' beyond 16 digits is not supported (integers are " +
                       "generated with at most 16 digits)",
                   ptr);
    }
    double b = lower ? (exclusive ? std::floor(x) + 1 : std::ceil(x))
                     : (exclusive ? std::ceil(x) - 1 : std::floor(x));
    b = std::clamp(b, -kLimit, kLimit);
    return std::optional<int64_t>(std::clamp(static_cast<int64_t>(b), -kMaxInt, kMaxInt));
  }

  StatusOr<std::string> Integer(const json& s, const std::string& ptr) {
    UNMASK_RETURN_IF_ERROR(CheckKeys(s,
                                     {"type", "minimum", "maximum", "exclusiveMinimum",
                                      "exclusiveMaximum", "nullable", "format"},
                                     ptr));  // format (int32, int64): an annotation
    std::optional<int64_t> lo, hi;
    for (const auto& [key, lower, excl] :
         {std::tuple{"minimum", true, false}, std::tuple{"exclusiveMinimum", true, true},
          std::tuple{"maximum", false, false}, std::tuple{"exclusiveMaximum", false, true}}) {
      UNMASK_ASSIGN_OR_RETURN(std::optional<int64_t> b, Bound(s, key, lower, excl, ptr));
      if (!b) continue;
      if (lower) {
        lo = lo ? std::max(*lo, *b) : *b;
      } else {
        hi = hi ? std::min(*hi, *b) : *b;
      }
    }
    if (!lo && !hi) return std::string("( \"-\"? json-integral )");
    const int64_t a = lo.value_or(-kMaxInt), b = hi.value_or(kMaxInt);
    if (a > b) return Error("no integer satisfies the bounds", ptr);
    std::vector<std::string> parts;
    if (a < 0) parts.push_back("\"-\" " + NonNegative(b < 0 ? -b : 1, -a));
    if (b >= 0) parts.push_back(NonNegative(std::max<int64_t>(a, 0), b));
    if (parts.size() == 1) return "( " + parts[0] + " )";
    return "( " + parts[0] + " | " + parts[1] + " )";
  }

  // A pair of non-negative integer bounds (minLength/maxLength, minItems/maxItems) into *min
  // (default 0) and *max (-1: none), each at most kMaxItems, max >= min.
  Status Bounds(const json& s, const char* min_key, const char* max_key, const char* what,
                const std::string& ptr, int64_t* min, int64_t* max) const {
    for (const char* key : {min_key, max_key}) {
      if (!s.contains(key)) continue;
      const std::optional<int64_t> v = AsInteger(s.at(key));
      if (!v || *v < 0) {
        return Error(std::string("'") + key + "' must be a non-negative integer", ptr);
      }
      (key == min_key ? *min : *max) = *v;
    }
    if (*min > kMaxItems || *max > kMaxItems) {
      return Error(std::string(what) + " over " + std::to_string(kMaxItems) + " are not supported",
                   ptr);
    }
    if (*max >= 0 && *max < *min) {
      return Error(std::string(max_key) + " is below " + min_key, ptr);
    }
    return Status::Ok();
  }

  StatusOr<std::string> String(const json& s, const std::string& ptr) {
    UNMASK_RETURN_IF_ERROR(
        CheckKeys(s, {"type", "minLength", "maxLength", "format", "nullable"}, ptr));
    if (s.contains("format")) {
      if (!s.at("format").is_string()) return Error("'format' must be a string", ptr);
      const std::string f = s.at("format");
      if (f == "date") return std::string("( \"\\\"\" json-date \"\\\"\" )");
      if (f == "time") return std::string("( \"\\\"\" json-time \"\\\"\" )");
      if (f == "date-time") return std::string("( \"\\\"\" json-date \"T\" json-time \"\\\"\" )");
      if (f == "uuid") {
        return std::string(
            "( \"\\\"\" json-hex{8} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" "
            "json-hex{12} \"\\\"\" )");
      }
      // Other formats are annotations (JSON Schema 2020-12 §7.2): a plain string.
    }
    int64_t min = 0, max = -1;
    UNMASK_RETURN_IF_ERROR(Bounds(s, "minLength", "maxLength", "string lengths", ptr, &min, &max));
    if (min == 0 && max < 0) return std::string("json-string");
    std::string rep = "{" + std::to_string(min) + "," + (max >= 0 ? std::to_string(max) : "") + "}";
    return "( \"\\\"\" json-char" + rep + " \"\\\"\" )";
  }

  StatusOr<std::string> Array(const json& s, const std::string& hint, const std::string& ptr) {
    UNMASK_RETURN_IF_ERROR(CheckKeys(s,
                                     {"type", "items", "prefixItems", "additionalItems", "minItems",
                                      "maxItems", "uniqueItems", "nullable"},
                                     ptr));
    // Draft 7 and earlier: an array of schemas in 'items' is 2020-12's prefixItems, and
    // 'additionalItems' (default: any value) its 'items'.
    const bool tuple = s.contains("items") && s.at("items").is_array();
    if (tuple && s.contains("prefixItems")) {
      return Error("'items' as an array (draft 7) and 'prefixItems' together", ptr);
    }
    if (!tuple && s.contains("additionalItems")) {
      return Error("'additionalItems' without an array of 'items' (draft 7)", ptr);
    }
    const char* prefix_key = tuple ? "items" : "prefixItems";
    const char* items_key = tuple ? "additionalItems" : "items";
    if (s.contains("uniqueItems") && s.at("uniqueItems") != false) {
      return Error("'uniqueItems': true is not supported (a grammar cannot exclude repeats)", ptr);
    }
    int64_t min = 0, max = -1;
    UNMASK_RETURN_IF_ERROR(Bounds(s, "minItems", "maxItems", "array sizes", ptr, &min, &max));
    std::vector<std::string> prefix;
    if (s.contains(prefix_key)) {
      const json& list = s.at(prefix_key);
      if (!list.is_array()) return Error("'prefixItems' must be an array", ptr);
      for (size_t i = 0; i < list.size(); ++i) {
        UNMASK_ASSIGN_OR_RETURN(std::string e,
                                Visit(list.at(i), hint + "-" + std::to_string(i),
                                      Pointer(ptr + "/" + prefix_key, std::to_string(i))));
        prefix.push_back(e);
      }
    }
    std::string item;
    if (s.contains(items_key) && s.at(items_key) != false) {
      UNMASK_ASSIGN_OR_RETURN(item, Visit(s.at(items_key), hint + "-item", ptr + "/" + items_key));
    } else if (!s.contains(items_key) && prefix.empty()) {
      // Any items. After prefix items none are generated (valid: the schema allows more, and a
      // tuple is what a client that lists them wants).
      item = "json-value";
    }
    // The prefix items in order (the first minItems of them required, the array may stop after
    // any later one), then, once all of them are written, the extra items.
    const int64_t np = max >= 0 ? std::min<int64_t>(max, static_cast<int64_t>(prefix.size()))
                                : static_cast<int64_t>(prefix.size());
    if (item.empty() && np < min) {
      return Error("minItems exceeds the items the schema allows", ptr);
    }
    std::string tail;  // what may follow the last prefix item
    if (!item.empty()) {
      const int64_t emin = std::max<int64_t>(0, min - np);
      const int64_t emax = max >= 0 ? max - np : -1;
      if (emax != 0) {
        const std::string one = item + " ws";
        const std::string more = "\",\" ws " + one;
        if (np > 0) {
          tail = "( " + more + " ){" + std::to_string(emin) + "," +
                 (emax >= 0 ? std::to_string(emax) : "") + "}";
        } else if (emin >= 1) {
          tail = one + " ( " + more + " ){" + std::to_string(emin - 1) + "," +
                 (emax >= 0 ? std::to_string(emax - 1) : "") + "}";
        } else {
          tail = "( " + one + " ( " + more + " ){0," + (emax >= 0 ? std::to_string(emax - 1) : "") +
                 "} )?";
        }
      }
    }
    // Built from the last prefix item back: item i, then the rest, optional from minItems on.
    std::string body = tail;
    for (int64_t i = np; i-- > 0;) {
      const std::string one = (i ? "\",\" ws " : "") + prefix[static_cast<size_t>(i)] + " ws" +
                              (body.empty() ? "" : " " + body);
      // A rule per optional level: nested groups would reach the parser's depth bound.
      body = i < min ? one : "( " + AddRule(hint + "-tail", one) + " )?";
    }
    return AddRule(hint, "\"[\" ws " + body + " \"]\"");
  }

  // A JSON string (quotes included) that is none of `names` as they are written (nlohmann's
  // dump(), the form Object() writes them in): the keys of additionalProperties, which must not
  // repeat a declared property with the other schema. A trie over the names' characters (an
  // escape sequence is one character); at each node the string may end unless a name ends
  // there, go on along the trie, or take any other character and then anything. The same name
  // spelled with other escapes ("\u0061" for "a") is not excluded, and a \u escape where a name
  // has one is not offered (the trie would have to split the four hex digits).
  std::string OtherKey(const std::vector<std::string>& names, const std::string& hint) {
    struct Node {
      bool ends = false;
      std::map<std::string, size_t> next;  // character (UTF-8 or escape) -> node
    };
    std::vector<Node> trie(1);
    for (const std::string& name : names) {
      const std::string d = json(name).dump();
      const std::string text = d.substr(1, d.size() - 2);
      size_t node = 0;
      for (size_t i = 0; i < text.size();) {
        size_t len = 1;
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\\') {
          len = i + 1 < text.size() && text[i + 1] == 'u' ? 6 : 2;
        } else if (c >= 0xF0) {
          len = 4;
        } else if (c >= 0xE0) {
          len = 3;
        } else if (c >= 0xC0) {
          len = 2;
        }
        len = std::min(len, text.size() - i);
        const std::string unit = text.substr(i, len);
        i += len;
        auto it = trie[node].next.find(unit);
        if (it == trie[node].next.end()) {
          trie.emplace_back();
          it = trie[node].next.emplace(unit, trie.size() - 1).first;
        }
        node = it->second;
      }
      trie[node].ends = true;
    }
    // Rules bottom-up: children are created after their parents, so the last node comes first.
    std::vector<std::string> rule(trie.size());
    for (size_t n = trie.size(); n-- > 0;) {
      std::string body = trie[n].ends ? "" : "\"\\\"\"";  // the closing quote
      std::string excluded;  // characters of the class of "any other character"
      std::string escapes = "\"\\/bfnrtu";
      for (const auto& [unit, child] : trie[n].next) {
        body += (body.empty() ? "" : " | ") + GbnfLiteral(unit) + " " + rule[child];
        if (unit[0] == '\\') {
          escapes.erase(std::remove(escapes.begin(), escapes.end(), unit[1]), escapes.end());
        } else {
          // The character as a \U escape (any code point, no class syntax to escape).
          uint32_t cp = static_cast<unsigned char>(unit[0]);
          if (unit.size() > 1) {
            cp &= 0xFFu >> (unit.size() + 1);
            for (size_t k = 1; k < unit.size(); ++k) {
              cp = (cp << 6) | (static_cast<unsigned char>(unit[k]) & 0x3Fu);
            }
          }
          char buf[16];
          std::snprintf(buf, sizeof buf, "\\U%08X", cp);
          excluded += buf;
        }
      }
      body += (body.empty() ? "" : " | ") + std::string("[^\"\\\\\\x00-\\x1F") + excluded +
              "] json-string-rest";
      std::string letters, u;
      for (char e : escapes) {
        if (e == 'u') {
          u = "\"u\" json-hex{4}";
        } else {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(e));
          letters += buf;
        }
      }
      if (!letters.empty() || !u.empty()) {
        body += " | \"\\\\\" ( " + (letters.empty() ? "" : "[" + letters + "]") +
                (letters.empty() || u.empty() ? "" : " | ") + u + " ) json-string-rest";
      }
      rule[n] = AddRule(hint + "-key", body);
    }
    return "( \"\\\"\" " + rule[0] + " )";
  }

  StatusOr<std::string> Object(const json& s, const std::string& hint, const std::string& ptr) {
    UNMASK_RETURN_IF_ERROR(
        CheckKeys(s, {"type", "properties", "required", "additionalProperties", "nullable"}, ptr));
    std::vector<std::pair<std::string, std::string>> props;  // key literal, value expression
    std::vector<std::string> names;
    if (s.contains("properties")) {
      if (!s.at("properties").is_object()) return Error("'properties' must be an object", ptr);
      for (auto it = s.at("properties").begin(); it != s.at("properties").end(); ++it) {
        UNMASK_ASSIGN_OR_RETURN(std::string v, Visit(it.value(), hint + "-" + it.key(),
                                                     Pointer(ptr + "/properties", it.key())));
        props.emplace_back(GbnfLiteral(json(it.key()).dump()), v);
        names.push_back(it.key());
      }
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s.at("required").is_array()) return Error("'required' must be an array of names", ptr);
      for (const json& r : s.at("required")) {
        if (!r.is_string()) return Error("'required' must be an array of names", ptr);
        required.insert(r.get<std::string>());
      }
    }
    std::string extra;  // the value expression of additional properties, or "" when refused
    if (s.contains("additionalProperties") && s.at("additionalProperties") != false) {
      if (s.at("additionalProperties") == true) {
        extra = "json-value";
      } else {
        UNMASK_ASSIGN_OR_RETURN(extra, Visit(s.at("additionalProperties"), hint + "-extra",
                                             ptr + "/additionalProperties"));
      }
    }
    for (const std::string& r : required) {
      if (std::find(names.begin(), names.end(), r) == names.end()) {
        return Error("required property '" + r + "' is not declared in 'properties'", ptr);
      }
    }
    auto kv = [](const std::pair<std::string, std::string>& p) {
      return p.first + " ws \":\" ws " + p.second + " ws";
    };
    // Additional keys are not the declared ones (the value would escape its schema).
    const std::string akv =
        extra.empty() ? ""
                      : (names.empty() ? std::string("json-string") : OtherKey(names, hint)) +
                            " ws \":\" ws " + extra + " ws";
    const std::string akv_tail = extra.empty() ? "" : " ( \",\" ws " + akv + " )*";
    // Declaration order. B(i): the rest from property i once a property was written (each is
    // preceded by a comma); A(i): the rest from i before any was written (an optional property
    // may be skipped; the first one written takes no comma).
    const size_t n = names.size();
    std::vector<std::string> b(n + 1), a(n + 1);  // GBNF expressions ("" = the empty string)
    b[n] = akv_tail.empty() ? "" : AddRule(hint + "-rest", akv_tail.substr(1));
    for (size_t i = n; i-- > 0;) {
      const std::string item = "\",\" ws " + kv(props[i]);
      const std::string body = (required.count(names[i]) ? item : "( " + item + " )?") +
                               (b[i + 1].empty() ? "" : " " + b[i + 1]);
      b[i] = AddRule(hint + "-rest", body);
    }
    a[n] = akv.empty() ? "" : "( " + akv + akv_tail + " )?";
    for (size_t i = n; i-- > 0;) {
      const std::string first = kv(props[i]) + (b[i + 1].empty() ? "" : " " + b[i + 1]);
      a[i] = required.count(names[i])
                 ? first
                 : AddRule(hint + "-from-" + names[i], first + " | " + a[i + 1]);
    }
    const std::string body = a[0];
    return AddRule(hint, "\"{\" ws " + body + " \"}\"");
  }

  StatusOr<std::string> Visit(const json& s, const std::string& hint, const std::string& ptr) {
    if (++depth_ > kMaxVisitDepth) {
      --depth_;
      return Error("the schema's sub-schemas and references nest deeper than " +
                       std::to_string(kMaxVisitDepth) + " levels",
                   ptr);
    }
    if (++visits_ > kMaxVisits) {
      return Error("the schema expands to more than " + std::to_string(kMaxVisits) +
                       " sub-schemas (each allOf copies what it refers to)",
                   ptr);
    }
    // Every schema but a reference, a choice or an allOf (which may be one of its parts) writes a
    // character ('{', '[', '"', a digit...) before any of its sub-schemas, so a reference inside
    // it is not at the head of the value.
    const bool at_head = s.is_object() && (s.contains("$ref") || s.contains("anyOf") ||
                                           s.contains("oneOf") || s.contains("allOf"));
    if (!at_head) ++written_;
    auto r = VisitInner(s, hint, ptr);
    if (!at_head) --written_;
    --depth_;
    return r;
  }

  StatusOr<std::string> VisitInner(const json& s, const std::string& hint, const std::string& ptr) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::string("json-value");
      return Error("the schema false admits no value", ptr);
    }
    if (!s.is_object()) return Error("a schema must be an object or a boolean", ptr);
    if (s.contains("$ref")) {
      // Beside other keywords (2020-12), a reference applies together with them: allOf.
      const json rest = Siblings(s, "$ref");
      if (!rest.empty()) {
        json both = {{"allOf", json::array({json{{"$ref", s.at("$ref")}}, rest})}};
        if (s.contains("nullable")) both["nullable"] = s.at("nullable");
        return VisitInner(both, hint, ptr);
      }
      UNMASK_ASSIGN_OR_RETURN(std::string out, Reference(s, ptr));
      return Nullable(s, out, ptr);
    }
    std::string out;
    if (s.contains("const") || s.contains("enum")) {
      UNMASK_ASSIGN_OR_RETURN(out, Choices(s, ptr));
    } else if (s.contains("anyOf") || s.contains("oneOf")) {
      const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
      if (!s.at(key).is_array() || s.at(key).empty()) {
        return Error(std::string("'") + key + "' must be a non-empty array", ptr);
      }
      // Keywords beside the branches apply to each of them ({"type": "object", "anyOf": [...]}).
      const json rest = Siblings(s, key);
      out = "( ";
      for (size_t i = 0; i < s.at(key).size(); ++i) {
        const std::string at = Pointer(ptr + "/" + key, std::to_string(i));
        std::string e;
        if (rest.empty()) {
          UNMASK_ASSIGN_OR_RETURN(e, Visit(s.at(key).at(i), hint, at));
        } else {
          const json both = {{"allOf", json::array({s.at(key).at(i), rest})}};
          UNMASK_ASSIGN_OR_RETURN(e, Visit(both, hint, at));
        }
        out += (i ? " | " : "") + e;
      }
      out += " )";
    } else if (s.contains("allOf")) {
      UNMASK_ASSIGN_OR_RETURN(out, AllOf(s, hint, ptr));
    } else {
      UNMASK_ASSIGN_OR_RETURN(out, Typed(s, hint, ptr));
    }
    return Nullable(s, out, ptr);
  }

  // The keywords of `s` beside `key` that validate (not annotations, not nullable), as a schema.
  static json Siblings(const json& s, const std::string& key) {
    json rest = json::object();
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() != key && it.key() != "nullable" && !IsAnnotation(it.key())) {
        rest[it.key()] = it.value();
      }
    }
    return rest;
  }

  StatusOr<std::string> Nullable(const json& s, const std::string& out, const std::string& ptr) {
    if (!s.contains("nullable")) return out;
    if (!s.at("nullable").is_boolean()) return Error("'nullable' must be a boolean", ptr);
    return s.at("nullable").get<bool>() ? "( " + out + " | json-null )" : out;
  }

  // A {"$ref": ...} (annotations beside it only).
  StatusOr<std::string> Reference(const json& s, const std::string& ptr) {
    if (!s.at("$ref").is_string()) return Error("'$ref' must be a string", ptr);
    const std::string ref = s.at("$ref");
    auto found = refs_.find(ref);
    if (found != refs_.end()) {
      // Reached again while its own target is being compiled, with nothing written since it
      // was entered: the rule would be left-recursive (x ::= x ...), which no grammar runs.
      auto open = open_refs_.find(ref);
      if (open != open_refs_.end() && open->second == written_) {
        return Error("$ref '" + ref +
                         "' refers back to itself before any character of the value (through "
                         "$ref, anyOf, oneOf or allOf only); recursion is supported inside an "
                         "object "
                         "or an array",
                     ptr);
      }
      return found->second;
    }
    UNMASK_ASSIGN_OR_RETURN(const json* target, Resolve(ref, ptr));
    const std::string name = NewName(ref == "#" ? "root-ref" : ref.substr(ref.rfind('/') + 1));
    refs_[ref] = name;
    rules_[name] = "json-null";  // placeholder while the target is compiled (recursion)
    open_refs_[ref] = written_;
    auto body = Visit(*target, name, ref.substr(1));
    open_refs_.erase(ref);
    if (!body.ok()) return body.status();
    rules_[name] = *std::move(body);
    return name;
  }

  // allOf, with the keywords beside it as one more part: parts that accept anything
  // (annotations only, as pydantic writes {"allOf": [{"$ref": ...}], "description": ...}) drop
  // out; one part left is that part (a reference stays a reference: no copy, recursion works);
  // more are merged into one object schema (MergeAllOf).
  StatusOr<std::string> AllOf(const json& s, const std::string& hint, const std::string& ptr) {
    if (!s.at("allOf").is_array() || s.at("allOf").empty()) {
      return Error("'allOf' must be a non-empty array", ptr);
    }
    const json rest = Siblings(s, "allOf");
    std::vector<std::pair<const json*, std::string>> parts;  // schema, its pointer
    for (size_t i = 0; i < s.at("allOf").size(); ++i) {
      const json& p = s.at("allOf").at(i);
      if (p.is_boolean() && !p.get<bool>()) return Error("the schema false admits no value", ptr);
      if (!AcceptsAnything(p)) parts.emplace_back(&p, Pointer(ptr + "/allOf", std::to_string(i)));
    }
    if (!rest.empty()) parts.emplace_back(&rest, ptr);
    if (parts.empty()) return std::string("json-value");
    if (parts.size() == 1) return Visit(*parts[0].first, hint, parts[0].second);
    UNMASK_ASSIGN_OR_RETURN(json merged, MergeAllOf(parts));
    return Visit(merged, hint, ptr);
  }

  // A schema of types (named, or implied by its keywords). A list of several types is one
  // alternative per type, each with the keywords of that type (KeywordsOfType).
  StatusOr<std::string> Typed(const json& s, const std::string& hint, const std::string& ptr) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      if (s.at("type").is_string()) {
        types.push_back(s.at("type"));
      } else if (s.at("type").is_array() && !s.at("type").empty()) {
        for (const json& t : s.at("type")) {
          if (!t.is_string()) return Error("'type' must be a name or a list of names", ptr);
          if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
        }
      } else {
        return Error("'type' must be a name or a list of names", ptr);
      }
    } else if (s.contains("properties") || s.contains("required") ||
               s.contains("additionalProperties")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("prefixItems")) {
      types.push_back("array");
    } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("format")) {
      types.push_back("string");
    } else {
      UNMASK_RETURN_IF_ERROR(CheckKeys(s, {"nullable"}, ptr));
      return std::string("json-value");
    }
    for (const std::string& t : types) {
      if (KeywordsOfType().count(t) == 0) return Error("unknown type '" + t + "'", ptr);
    }
    if (types.size() == 1) return OfType(s, types[0], hint, ptr);
    // ["object", "null"] with properties: the properties are the object's. A keyword of none of
    // the listed types is refused by name (unknown ones as unsupported).
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "type" || k == "nullable" || IsAnnotation(k)) continue;
      bool applies = false, known = false;
      for (const auto& [t, keys] : KeywordsOfType()) {
        if (keys.count(k) == 0) continue;
        known = true;
        applies |= std::find(types.begin(), types.end(), t) != types.end();
      }
      if (!known) UNMASK_RETURN_IF_ERROR(CheckKeys(json{{k, it.value()}}, {}, ptr));
      if (!applies) {
        std::string list;
        for (const std::string& t : types) list += (list.empty() ? "" : ", ") + t;
        return Error("keyword '" + k + "' applies to none of the types in 'type' (" + list + ")",
                     ptr);
      }
    }
    std::string out = "( ";
    for (size_t i = 0; i < types.size(); ++i) {
      json one = {{"type", types[i]}};
      for (const std::string& k : KeywordsOfType().at(types[i])) {
        if (s.contains(k)) one[k] = s.at(k);
      }
      UNMASK_ASSIGN_OR_RETURN(std::string e, OfType(one, types[i], hint, ptr));
      out += (i ? " | " : "") + e;
    }
    return out + " )";
  }

  StatusOr<std::string> OfType(const json& s, const std::string& t, const std::string& hint,
                               const std::string& ptr) {
    if (t == "object") return Object(s, hint, ptr);
    if (t == "array") return Array(s, hint, ptr);
    if (t == "string") return String(s, ptr);
    if (t == "integer") return Integer(s, ptr);
    if (t == "number") {
      UNMASK_RETURN_IF_ERROR(CheckKeys(s, {"type", "nullable", "format"}, ptr));
      return std::string("json-number");
    }
    if (t == "boolean") {
      UNMASK_RETURN_IF_ERROR(CheckKeys(s, {"type", "nullable", "format"}, ptr));
      return std::string("json-boolean");
    }
    UNMASK_RETURN_IF_ERROR(CheckKeys(s, {"type", "nullable"}, ptr));
    return std::string("json-null");
  }

  // Object schemas (references followed) merged into one: properties from every part (one
  // declared in several parts takes the allOf of its schemas, or the one that is not mere
  // annotations), required from every part.
  StatusOr<json> MergeAllOf(const std::vector<std::pair<const json*, std::string>>& parts) {
    json merged = json::object();
    merged["type"] = "object";
    merged["properties"] = json::object();
    merged["required"] = json::array();
    for (auto [p, at] : parts) {
      for (int hops = 0; p->is_object() && p->contains("$ref"); ++hops) {
        if (!p->at("$ref").is_string()) return Error("'$ref' must be a string", at);
        if (hops == 64) return Error("'$ref' inside 'allOf' does not end (a cycle)", at);
        UNMASK_ASSIGN_OR_RETURN(p, Resolve(p->at("$ref").get<std::string>(), at));
      }
      bool typed_object = true;
      if (p->is_object() && p->contains("type")) typed_object = p->at("type") == json("object");
      const bool object_like = p->is_object() && typed_object && !p->contains("anyOf") &&
                               !p->contains("oneOf") && !p->contains("allOf") &&
                               !p->contains("enum") && !p->contains("const");
      if (!object_like) {
        return Error(p->is_object() && p->contains("allOf")
                         ? "'allOf' inside 'allOf' (or a cycle through one) is not supported"
                         : "'allOf' of several schemas is supported only over object schemas "
                           "(merged into one)",
                     at);
      }
      for (auto it = p->begin(); it != p->end(); ++it) {
        if (it.key() == "properties") {
          if (!it->is_object()) return Error("'properties' must be an object", at);
          json& props = merged["properties"];
          for (auto q = it->begin(); q != it->end(); ++q) {
            if (!props.contains(q.key()) || AcceptsAnything(props[q.key()])) {
              props[q.key()] = q.value();
            } else if (!AcceptsAnything(q.value()) && props[q.key()] != q.value()) {
              // Declared in two parts: the value satisfies both.
              props[q.key()] = json{{"allOf", json::array({props[q.key()], q.value()})}};
            }
          }
        } else if (it.key() == "required") {
          if (!it->is_array()) return Error("'required' must be an array of names", at);
          for (const json& r : *it) merged["required"].push_back(r);
        } else if (it.key() == "additionalProperties") {
          if (*it != false) {
            return Error("'additionalProperties' inside 'allOf' is not supported", at);
          }
        } else if (it.key() != "type" && !IsAnnotation(it.key())) {
          return Error("keyword '" + it.key() + "' inside 'allOf' is not supported", at);
        }
      }
    }
    return merged;
  }

  const json& root_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;
  std::map<std::string, int> open_refs_;  // refs being compiled -> written_ when entered
  std::set<std::string> used_;
  int depth_ = 0;
  int visits_ = 0;   // sub-schemas compiled so far (kMaxVisits)
  int written_ = 0;  // schemas entered on the current path that write a character first
};

}  // namespace

std::string GbnfLiteral(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

StatusOr<CompiledSchema> CompileJsonSchema(const nlohmann::ordered_json& schema) {
  UNMASK_ASSIGN_OR_RETURN(std::string gbnf, Compiler(schema).Run());
  // Parsed as every caller would parse it: a schema that no finite value satisfies (a required
  // property or every item referring back to the schema) compiles to a rule that can never end,
  // which is refused here in the schema's terms.
  auto parsed = ParseGbnf(gbnf);
  if (!parsed.ok()) {
    const std::string m = parsed.status().message();  // a copy: status() returns by value
    if (m.find(kNeverEndsPhrase) != std::string::npos) {
      return InvalidArgumentError(
          "JSON schema: no finite value satisfies it (a required property or every item refers "
          "back to a schema that contains it, with no way to stop; " +
          m + ")");
    }
    return InternalError("JSON schema: compiled to a grammar that does not parse (a bug): " + m);
  }
  return CompiledSchema{std::move(gbnf), std::move(parsed).value()};
}

StatusOr<CompiledSchema> CompileJsonSchemaText(std::string_view text) {
  const json schema = json::parse(text, nullptr, false);
  if (schema.is_discarded()) return InvalidArgumentError("JSON schema: the text is not valid JSON");
  return CompileJsonSchema(schema);
}

StatusOr<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema) {
  UNMASK_ASSIGN_OR_RETURN(CompiledSchema c, CompileJsonSchema(schema));
  return std::move(c.gbnf);
}

StatusOr<std::string> JsonSchemaTextToGbnf(std::string_view text) {
  UNMASK_ASSIGN_OR_RETURN(CompiledSchema c, CompileJsonSchemaText(text));
  return std::move(c.gbnf);
}

std::string JsonObjectGbnf() { return std::string("root ::= \" \"? json-object\n") + kPrimitives; }

StatusOr<std::string> ChoiceGbnf(const std::vector<std::string>& choices) {
  if (choices.empty()) return InvalidArgumentError("guided_choice must list at least one choice");
  std::string out = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) out += (i ? " | " : "") + GbnfLiteral(choices[i]);
  return out + "\n";
}

}  // namespace unmask::grammar
