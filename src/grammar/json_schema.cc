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
#include "grammar/json_schema_parts.h"

namespace unmask::grammar {
namespace {

using json = nlohmann::ordered_json;
using namespace schema_parts;  // NOLINT(google-build-using-namespace): this file's helpers

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
// Rules of one compiled schema: the grammar's size (and the compile time) stays bounded whatever
// the schema's size (8 MiB of request body could otherwise be millions of trie rules).
constexpr size_t kMaxRules = 100000;
// Properties of one object schema: the matcher follows every optional property that may come
// next at once, and past a few thousand it refuses the text as too ambiguous.
constexpr size_t kMaxProperties = 2048;
// Bytes of the declared property names of an object that also takes additional properties: the
// additional keys' grammar has a rule per character of them (OtherKey).
constexpr size_t kMaxKeyChars = 20000;
// Bytes of the values of one enum (written as a trie: Alternatives).
constexpr size_t kMaxChoiceBytes = 1 << 20;
// JSON values copied while compiling (keywords beside allOf / anyOf / $ref and type lists are
// applied to copies): bounds the compile time of a schema with large annotations.
constexpr size_t kMaxCopied = 2000000;

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

  // guided_choice: one of `choices`, literally (the same trie as enum values).
  StatusOr<std::string> RunChoices(const std::vector<std::string>& choices) {
    UNMASK_ASSIGN_OR_RETURN(const std::string expr, Alternatives(choices, ""));
    std::string out = "root ::= " + expr + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

  StatusOr<std::string> Run() {
    if (NestingDepth(root_) > kMaxSchemaDepth) {
      return Error("the schema nests deeper than " + std::to_string(kMaxSchemaDepth) +
                       " levels (values of const and enum included)",
                   "");
    }
    UNMASK_ASSIGN_OR_RETURN(const std::string expr, Visit(root_, "root", ""));
    if (too_many_rules_) return TooManyRules("");
    // An optional leading space: SentencePiece vocabularies write one before the first word.
    std::string out = "root ::= \" \"? " + expr + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out + kPrimitives;
  }

 private:
  Status Error(const std::string& what, const std::string& ptr) const {
    return InvalidArgumentError("JSON schema: " + what + " at " + (ptr.empty() ? "/" : ptr) + "");
  }

  // A name not used yet: the hint's, or with the next free "-N" (each base remembers where its
  // count stands, so n rules of one hint cost n look-ups, not n^2).
  std::string NewName(const std::string& hint) {
    const std::string base = Sanitize(hint);
    std::string name = base;
    if (used_.count(name) != 0) {
      int& n = next_suffix_[base];
      if (n < 2) n = 2;
      do {
        name = base + "-" + std::to_string(n++);
      } while (used_.count(name) != 0);
    }
    used_.insert(name);
    return name;
  }

  std::string AddRule(const std::string& hint, const std::string& body) {
    const std::string name = NewName(hint);
    rules_[name] = body;
    if (rules_.size() > kMaxRules) too_many_rules_ = true;
    return name;
  }

  Status TooManyRules(const std::string& ptr) const {
    return Error("the schema compiles to more than " + std::to_string(kMaxRules) +
                     " grammar rules (properties, items and additional-key characters)",
                 ptr);
  }

  // The schema `ref` ("#", "#/$defs/x", percent-encoded, ~0 / ~1 escaped) refers to; *canonical
  // (when given) gets its JSON pointer as Pointer() writes one, the same string for every
  // spelling of one location.
  StatusOr<const json*> Resolve(const std::string& ref, const std::string& ptr,
                                std::string* canonical = nullptr) {
    if (ref.empty() || ref[0] != '#') {
      return Error("$ref '" + ref + "' is not local (only '#...' references are supported)", ptr);
    }
    // A fragment is URI-encoded: decoded first ("%20", "%2F" is a '/'), then a JSON pointer.
    std::string fragment;
    for (size_t k = 1; k < ref.size(); ++k) {
      unsigned v = 0;
      if (ref[k] == '%' && k + 2 < ref.size() &&
          std::from_chars(ref.data() + k + 1, ref.data() + k + 3, v, 16).ptr ==
              ref.data() + k + 3) {
        fragment.push_back(static_cast<char>(v));
        k += 2;
      } else {
        fragment.push_back(ref[k]);
      }
    }
    if (!fragment.empty() && fragment[0] != '/') {
      return Error("$ref '" + ref + "' is not a JSON pointer", ptr);
    }
    const json* node = &root_;
    std::string at;
    for (size_t i = 0; i < fragment.size();) {
      const size_t j = fragment.find('/', i + 1);
      const std::string seg =
          fragment.substr(i + 1, j == std::string::npos ? std::string::npos : j - i - 1);
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
      at = Pointer(at, key);
      if (j == std::string::npos) break;
      i = j;
    }
    if (canonical != nullptr) *canonical = at;
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
    std::vector<std::string> texts;
    for (const json* v : values) texts.push_back(v->dump());
    return Alternatives(texts, ptr);
  }

  // One of `texts`, literally, as a trie of their characters (UTF-8 code points): listed as
  // plain alternatives, thousands of values that share a first character ('"' for strings) would
  // be thousands of parse stacks at once, more than the matcher follows (Matcher::kMaxStacks).
  // A chain without branches is one literal; a node with several continuations is a rule.
  StatusOr<std::string> Alternatives(const std::vector<std::string>& texts,
                                     const std::string& ptr) {
    size_t bytes = 0;
    for (const std::string& t : texts) bytes += t.size();
    if (bytes > kMaxChoiceBytes) {
      return Error("'enum' / 'const' values of more than " + std::to_string(kMaxChoiceBytes) +
                       " bytes in all are not supported",
                   ptr);
    }
    CharTrie chars;
    for (const std::string& t : texts) chars.Add(t, /*json_escapes=*/false);
    const std::vector<CharTrie::Node>& trie = chars.nodes;
    // Children come after their parents: from the last node back, each node's expression.
    std::vector<std::string> expr(trie.size());
    for (size_t n = trie.size(); n-- > 0;) {
      std::vector<std::string> alts;
      for (const auto& [unit, child] : trie[n].next) {
        // A child that only continues one way is folded into one literal with it.
        std::string text = unit;
        size_t c = child;
        while (!trie[c].ends && trie[c].next.size() == 1) {
          text += trie[c].next.begin()->first;
          c = trie[c].next.begin()->second;
        }
        alts.push_back(GbnfLiteral(text) + (expr[c].empty() ? "" : " " + expr[c]));
      }
      if (alts.empty()) continue;  // a leaf: nothing follows
      std::string body;
      for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
      if (n != 0 && !trie[n].ends && alts.size() == 1) {
        expr[n] = body;
      } else {
        const std::string rule = AddRule("choice", body);
        expr[n] = trie[n].ends ? "( " + rule + " )?" : rule;
      }
    }
    const std::string root = expr.empty() ? std::string() : expr[0];
    if (root.empty()) return std::string("\"\"");  // the empty text only
    return "( " + root + " )";
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
    int64_t min = 0, max = -1;
    UNMASK_RETURN_IF_ERROR(Bounds(s, "minLength", "maxLength", "string lengths", ptr, &min, &max));
    if (s.contains("format")) {
      if (!s.at("format").is_string()) return Error("'format' must be a string", ptr);
      const std::string f = s.at("format");
      // The formats generated, with their lengths in characters (time: 9 to 21).
      struct Shape {
        const char* name;
        int64_t min, max;
        const char* gbnf;
      };
      static const Shape kShapes[] = {
          {"date", 10, 10, "( \"\\\"\" json-date \"\\\"\" )"},
          {"time", 9, 21, "( \"\\\"\" json-time \"\\\"\" )"},
          {"date-time", 20, 32, "( \"\\\"\" json-date \"T\" json-time \"\\\"\" )"},
          {"uuid", 36, 36,
           "( \"\\\"\" json-hex{8} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" json-hex{4} \"-\" "
           "json-hex{12} \"\\\"\" )"}};
      for (const Shape& shape : kShapes) {
        if (f != shape.name) continue;
        // Length bounds beside a format: they must hold for every value of it (a grammar of
        // both is not generated).
        if (min > shape.min || (max >= 0 && max < shape.max)) {
          return Error("minLength / maxLength beside format '" + f + "' (its values have " +
                           std::to_string(shape.min) +
                           (shape.min == shape.max ? "" : " to " + std::to_string(shape.max)) +
                           " characters) are not supported",
                       ptr);
        }
        return std::string(shape.gbnf);
      }
      // Other formats are annotations (JSON Schema 2020-12 §7.2): a plain string.
    }
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
    } else if (!s.contains(items_key) &&
               (prefix.empty() || min > static_cast<int64_t>(prefix.size()))) {
      // Any items. After prefix items none are generated unless minItems asks for more (valid:
      // the schema allows more, and a tuple is what a client that lists them wants).
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
  StatusOr<std::string> OtherKey(const std::vector<std::string>& names, const std::string& hint,
                                 const std::string& ptr) {
    size_t chars = 0;
    for (const std::string& name : names) chars += name.size();
    if (chars > kMaxKeyChars) {
      return Error("additional properties beside declared ones whose names have more than " +
                       std::to_string(kMaxKeyChars) +
                       " bytes in all are not supported (each character is a grammar rule)",
                   ptr);
    }
    CharTrie keys;
    for (const std::string& name : names) {
      const std::string d = json(name).dump();
      keys.Add(d.substr(1, d.size() - 2), /*json_escapes=*/true);  // as written, no quotes
    }
    const std::vector<CharTrie::Node>& trie = keys.nodes;
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

  // A part of an allOf, read in place rather than copied: the schema `s`, or only its $ref
  // (ref_only), or its keywords but those in `without` (the keywords beside allOf, anyOf or
  // $ref; `nullable` is then the caller's).
  struct Part {
    Part(const json* schema, std::string pointer, bool only_ref = false,
         std::set<std::string> keys = {})
        : s(schema), ptr(std::move(pointer)), ref_only(only_ref), without(std::move(keys)) {}

    const json* s;
    std::string ptr;
    bool ref_only;
    std::set<std::string> without;

    bool Validates(const std::string& key) const {
      if (ref_only) return key == "$ref";
      if (!without.empty() && (without.count(key) != 0 || key == "nullable")) return false;
      return !IsAnnotation(key);
    }
  };

  // An object schema to compile: its properties in declaration order, each with the schemas its
  // value must satisfy (one, or several when allOf parts declare it), the required names, and
  // what additional keys may have (none, any value, or a schema).
  struct ObjectSpec {
    std::vector<std::string> names;
    std::map<std::string, std::vector<Part>> schemas;
    std::set<std::string> required;
    bool additional_any = false;
    const json* additional = nullptr;
    std::string additional_ptr;
  };

  StatusOr<std::string> Object(const json& s, const std::string& hint, const std::string& ptr) {
    UNMASK_RETURN_IF_ERROR(
        CheckKeys(s, {"type", "properties", "required", "additionalProperties", "nullable"}, ptr));
    ObjectSpec spec;
    if (s.contains("properties")) {
      if (!s.at("properties").is_object()) return Error("'properties' must be an object", ptr);
      for (auto it = s.at("properties").begin(); it != s.at("properties").end(); ++it) {
        spec.names.push_back(it.key());
        spec.schemas[it.key()].push_back(Part{&it.value(), Pointer(ptr + "/properties", it.key())});
      }
    }
    if (s.contains("required")) {
      if (!s.at("required").is_array()) return Error("'required' must be an array of names", ptr);
      for (const json& r : s.at("required")) {
        if (!r.is_string()) return Error("'required' must be an array of names", ptr);
        spec.required.insert(r.get<std::string>());
      }
    }
    if (s.contains("additionalProperties") && s.at("additionalProperties") != false) {
      if (s.at("additionalProperties") == true) {
        spec.additional_any = true;
      } else {
        spec.additional = &s.at("additionalProperties");
        spec.additional_ptr = ptr + "/additionalProperties";
      }
    }
    return ObjectFrom(spec, hint, ptr);
  }

  StatusOr<std::string> ObjectFrom(const ObjectSpec& spec, const std::string& hint,
                                   const std::string& ptr) {
    // '{' comes first: a reference inside is not at the head of the value (Visit).
    ++written_;
    auto r = ObjectBody(spec, hint, ptr);
    --written_;
    return r;
  }

  StatusOr<std::string> ObjectBody(const ObjectSpec& spec, const std::string& hint,
                                   const std::string& ptr) {
    const std::vector<std::string>& names = spec.names;
    if (names.size() > kMaxProperties) {
      return Error("more than " + std::to_string(kMaxProperties) +
                       " properties in one object are not supported",
                   ptr);
    }
    for (const std::string& r : spec.required) {
      if (spec.schemas.count(r) == 0) {
        return Error("required property '" + r + "' is not declared in 'properties'", ptr);
      }
    }
    std::vector<std::pair<std::string, std::string>> props;  // key literal, value expression
    for (const std::string& name : names) {
      const std::vector<Part>& parts = spec.schemas.at(name);
      std::string v;
      if (parts.size() == 1) {
        UNMASK_ASSIGN_OR_RETURN(v, Visit(*parts[0].s, hint + "-" + name, parts[0].ptr));
      } else {
        UNMASK_ASSIGN_OR_RETURN(
            v, AllOfParts(parts, hint + "-" + name, Pointer(ptr + "/properties", name)));
      }
      props.emplace_back(GbnfLiteral(json(name).dump()), v);
    }
    std::string extra;  // the value expression of additional properties, or "" when refused
    if (spec.additional_any) {
      extra = "json-value";
    } else if (spec.additional != nullptr) {
      UNMASK_ASSIGN_OR_RETURN(extra, Visit(*spec.additional, hint + "-extra", spec.additional_ptr));
    }
    const std::set<std::string>& required = spec.required;
    auto kv = [](const std::pair<std::string, std::string>& p) {
      return p.first + " ws \":\" ws " + p.second + " ws";
    };
    // Additional keys are not the declared ones (the value would escape its schema).
    std::string akv;
    if (!extra.empty()) {
      std::string key = "json-string";
      if (!names.empty()) {
        UNMASK_ASSIGN_OR_RETURN(key, OtherKey(names, hint, ptr));
      }
      akv = key + " ws \":\" ws " + extra + " ws";
    }
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
    if (too_many_rules_) return TooManyRules(ptr);
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
    std::string out;
    if (s.contains("$ref")) {
      if (!HasValidating(Part{&s, ptr, false, {"$ref"}})) {
        UNMASK_ASSIGN_OR_RETURN(out, Reference(s, ptr));
      } else {
        UNMASK_ASSIGN_OR_RETURN(out, ReferenceAnd(s, hint, ptr));
      }
    } else if (s.contains("const") || s.contains("enum")) {
      UNMASK_ASSIGN_OR_RETURN(out, Choices(s, ptr));
    } else if (s.contains("anyOf") || s.contains("oneOf")) {
      const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
      if (!s.at(key).is_array() || s.at(key).empty()) {
        return Error(std::string("'") + key + "' must be a non-empty array", ptr);
      }
      // Keywords beside the branches apply to each of them ({"type": "object", "anyOf": [...]}).
      const Part rest{&s, ptr, false, {key}};
      const bool with_rest = HasValidating(rest);
      std::string rest_alone;  // the rest, for branches that accept anything (compiled once)
      out = "( ";
      for (size_t i = 0; i < s.at(key).size(); ++i) {
        const std::string at = Pointer(ptr + "/" + key, std::to_string(i));
        std::string e;
        if (!with_rest) {
          UNMASK_ASSIGN_OR_RETURN(e, Visit(s.at(key).at(i), hint, at));
        } else if (const json& b = s.at(key).at(i);
                   b == true || (b.is_object() && !HasValidating(Part{&b, at}))) {
          if (rest_alone.empty()) {
            UNMASK_ASSIGN_OR_RETURN(rest_alone, AllOfParts({rest}, hint, ptr));
          }
          e = rest_alone;
        } else {
          UNMASK_ASSIGN_OR_RETURN(e, AllOfParts({Part{&s.at(key).at(i), at}, rest}, hint, at));
        }
        out += (i ? " | " : "") + e;
      }
      out += " )";
    } else if (s.contains("allOf")) {
      UNMASK_ASSIGN_OR_RETURN(out, AllOfParts({Part{&s, ptr, false, {"nullable"}}}, hint, ptr));
    } else {
      UNMASK_ASSIGN_OR_RETURN(out, Typed(s, hint, ptr));
    }
    if (!s.contains("nullable")) return out;
    if (!s.at("nullable").is_boolean()) return Error("'nullable' must be a boolean", ptr);
    return s.at("nullable").get<bool>() ? "( " + out + " | json-null )" : out;
  }

  // A {"$ref": ...} (annotations beside it only): the target's rule, compiled once.
  StatusOr<std::string> Reference(const json& s, const std::string& ptr) {
    if (!s.at("$ref").is_string()) return Error("'$ref' must be a string", ptr);
    const std::string ref = s.at("$ref");
    std::string at;
    UNMASK_ASSIGN_OR_RETURN(const json* target, Resolve(ref, ptr, &at));
    const std::string hint = ref == "#" ? "root-ref" : ref.substr(ref.rfind('/') + 1);
    return Once("$ref '" + ref + "'", at, hint, ptr, [&]() { return Visit(*target, hint, at); });
  }

  // A $ref beside keywords that validate (2020-12: they apply together, an allOf of the target
  // and the rest), compiled once per location so that a recursive one ({"$ref": "#", "type":
  // "object"} inside a property) refers to its own rule.
  StatusOr<std::string> ReferenceAnd(const json& s, const std::string& hint,
                                     const std::string& ptr) {
    return Once("the $ref at " + (ptr.empty() ? std::string("/") : ptr), "&" + ptr, hint, ptr,
                [&]() {
                  return AllOfParts({Part{&s, ptr, false, {"nullable"}}}, hint, ptr);
                });
  }

  // The rule of `key` (a location), compiled by `compile` the first time and named then, so that
  // a reference reached again while it is compiled (recursion) uses the name. Reached again with
  // nothing written since it was entered, the rule would be left-recursive (x ::= x ...), which
  // no grammar runs: an error naming `what`.
  template <typename F>
  StatusOr<std::string> Once(const std::string& what, const std::string& key,
                             const std::string& hint, const std::string& ptr, F compile) {
    auto found = refs_.find(key);
    if (found != refs_.end()) {
      auto open = open_refs_.find(key);
      if (open != open_refs_.end() && open->second == written_) {
        return Error(what +
                         " refers back to itself before any character of the value (through "
                         "$ref, anyOf, oneOf or allOf only); recursion is supported inside an "
                         "object or an array",
                     ptr);
      }
      return found->second;
    }
    const std::string name = NewName(hint);
    refs_[key] = name;
    rules_[name] = "json-null";  // placeholder while the target is compiled (recursion)
    open_refs_[key] = written_;
    auto body = compile();
    open_refs_.erase(key);
    if (!body.ok()) return body.status();
    rules_[name] = *std::move(body);
    return name;
  }

  // Whether a part has a keyword that validates.
  static bool HasValidating(const Part& p) {
    if (!p.s->is_object()) return true;
    for (auto it = p.s->begin(); it != p.s->end(); ++it) {
      if (p.Validates(it.key())) return true;
    }
    return false;
  }

  // Parts of an allOf, flattened: nested allOf expanded (its other keywords one more part), a
  // $ref beside other keywords split into the reference and the rest, parts that accept
  // anything dropped; with `resolve`, references replaced by their targets. Errors: a cycle or
  // more than 1,000 parts, a false part, a part that is not a schema.
  Status Flatten(const Part& p, bool resolve, std::vector<Part>* out, int* budget) {
    if (--*budget < 0) {
      return Error("'allOf' and '$ref' expand to more than 1000 parts (a cycle of references?)",
                   p.ptr);
    }
    const json& s = *p.s;
    if (s.is_boolean()) {
      if (!s.get<bool>()) return Error("the schema false admits no value", p.ptr);
      return Status::Ok();
    }
    if (!s.is_object()) return Error("a schema must be an object or a boolean", p.ptr);
    if (p.ref_only) {
      if (!resolve) {
        out->push_back(p);
        return Status::Ok();
      }
      if (!s.at("$ref").is_string()) return Error("'$ref' must be a string", p.ptr);
      std::string at;
      UNMASK_ASSIGN_OR_RETURN(const json* target, Resolve(s.at("$ref"), p.ptr, &at));
      return Flatten(Part{target, at}, resolve, out, budget);
    }
    if (p.Validates("allOf") && s.contains("allOf")) {
      if (!s.at("allOf").is_array() || s.at("allOf").empty()) {
        return Error("'allOf' must be a non-empty array", p.ptr);
      }
      for (size_t i = 0; i < s.at("allOf").size(); ++i) {
        UNMASK_RETURN_IF_ERROR(
            Flatten(Part{&s.at("allOf").at(i), Pointer(p.ptr + "/allOf", std::to_string(i))},
                    resolve, out, budget));
      }
      Part rest = p;
      rest.without.insert("allOf");
      rest.without.insert("nullable");
      return Flatten(rest, resolve, out, budget);
    }
    if (p.Validates("$ref") && s.contains("$ref")) {
      UNMASK_RETURN_IF_ERROR(Flatten(Part{p.s, p.ptr, true, {}}, resolve, out, budget));
      Part rest = p;
      rest.without.insert("$ref");
      rest.without.insert("nullable");
      return Flatten(rest, resolve, out, budget);
    }
    if (HasValidating(p)) out->push_back(p);
    return Status::Ok();
  }

  // allOf: the parts that validate, flattened (Flatten). One part left is that part (a reference
  // stays a reference: compiled once, recursion works); several are merged (Merge).
  StatusOr<std::string> AllOfParts(const std::vector<Part>& parts, const std::string& hint,
                                   const std::string& ptr) {
    std::vector<Part> flat;
    int budget = 1000;
    for (const Part& p : parts) UNMASK_RETURN_IF_ERROR(Flatten(p, false, &flat, &budget));
    if (flat.empty()) return std::string("json-value");
    if (flat.size() == 1) return VisitPart(flat[0], hint);
    std::vector<Part> resolved;
    for (const Part& p : flat) UNMASK_RETURN_IF_ERROR(Flatten(p, true, &resolved, &budget));
    if (resolved.empty()) return std::string("json-value");
    if (resolved.size() == 1) return VisitPart(resolved[0], hint);
    return Merge(resolved, hint, ptr);
  }

  StatusOr<std::string> VisitPart(const Part& p, const std::string& hint) {
    if (p.ref_only) return Reference(*p.s, p.ptr);
    if (p.without.empty()) return Visit(*p.s, hint, p.ptr);
    UNMASK_ASSIGN_OR_RETURN(const json copy, Materialize(p));
    return Visit(copy, hint, p.ptr);
  }

  // A part's validating keywords as a schema of their own (copied: Copy).
  StatusOr<json> Materialize(const Part& p) {
    json out = json::object();
    for (auto it = p.s->begin(); it != p.s->end(); ++it) {
      if (!p.Validates(it.key())) continue;
      UNMASK_ASSIGN_OR_RETURN(out[it.key()], Copy(it.value(), p.ptr));
    }
    return out;
  }

  // A copy of `v`, counted: copies of large schemas (annotations such as 100,000 examples
  // included) would otherwise make one request's compile take minutes within kMaxVisits.
  StatusOr<json> Copy(const json& v, const std::string& ptr) {
    size_t nodes = 0;
    std::vector<const json*> stack = {&v};
    while (!stack.empty()) {
      const json* node = stack.back();
      stack.pop_back();
      if (++nodes + copied_ > kMaxCopied) {
        return Error("the schema expands to more than " + std::to_string(kMaxCopied) +
                         " copied values (keywords beside anyOf, allOf or $ref, or type lists, "
                         "over large sub-schemas)",
                     ptr);
      }
      if (node->is_structured()) {
        for (const json& child : *node) stack.push_back(&child);
      }
    }
    copied_ += nodes;
    return v;
  }

  // Several allOf parts (references resolved) as one schema: object schemas merge (Merge of
  // properties, each the allOf of its schemas; required from every part; an explicit
  // additionalProperties false keeps only that part's properties); schemas of one other type
  // merge when their keywords do not conflict ({"type": "string"} and {"maxLength": 2}).
  StatusOr<std::string> Merge(const std::vector<Part>& parts, const std::string& hint,
                              const std::string& ptr) {
    bool objects = true, plain = true;
    for (const Part& p : parts) {
      for (auto it = p.s->begin(); it != p.s->end(); ++it) {
        const std::string& k = it.key();
        if (!p.Validates(k)) continue;
        if (k == "type") {
          objects &= it.value() == json("object");
          plain &= it.value() != json("object");
        } else if (k == "properties" || k == "required" || k == "additionalProperties") {
          plain = false;
        } else {
          objects = false;
          plain &= k != "anyOf" && k != "oneOf" && k != "enum" && k != "const" && k != "nullable";
        }
      }
    }
    if (objects) return MergeObjects(parts, hint, ptr);
    if (!plain) {
      return Error(
          "'allOf' of several schemas is supported over object schemas, or over schemas of one "
          "type whose keywords do not conflict",
          parts[0].ptr);
    }
    json merged = json::object();
    for (const Part& p : parts) {
      for (auto it = p.s->begin(); it != p.s->end(); ++it) {
        if (!p.Validates(it.key())) continue;
        if (merged.contains(it.key())) {
          if (merged[it.key()] != it.value()) {
            return Error(
                "'allOf' parts give '" + it.key() + "' two values (merging them is not supported)",
                p.ptr);
          }
          continue;
        }
        UNMASK_ASSIGN_OR_RETURN(merged[it.key()], Copy(it.value(), p.ptr));
      }
    }
    return Visit(merged, hint, ptr);
  }

  StatusOr<std::string> MergeObjects(const std::vector<Part>& parts, const std::string& hint,
                                     const std::string& ptr) {
    ObjectSpec spec;
    std::optional<std::set<std::string>> allowed;  // explicit additionalProperties false
    for (const Part& p : parts) {
      std::set<std::string> own;
      bool closed = false;
      for (auto it = p.s->begin(); it != p.s->end(); ++it) {
        if (!p.Validates(it.key())) continue;
        if (it.key() == "properties") {
          if (!it->is_object()) return Error("'properties' must be an object", p.ptr);
          for (auto q = it->begin(); q != it->end(); ++q) {
            if (spec.schemas.count(q.key()) == 0) spec.names.push_back(q.key());
            spec.schemas[q.key()].push_back(
                Part{&q.value(), Pointer(p.ptr + "/properties", q.key())});
            own.insert(q.key());
          }
        } else if (it.key() == "required") {
          if (!it->is_array()) return Error("'required' must be an array of names", p.ptr);
          for (const json& r : *it) {
            if (!r.is_string()) return Error("'required' must be an array of names", p.ptr);
            spec.required.insert(r.get<std::string>());
          }
        } else if (it.key() == "additionalProperties") {
          if (*it != false) {
            return Error("'additionalProperties' other than false inside 'allOf' is not supported",
                         p.ptr);
          }
          closed = true;
        }
      }
      if (closed) {
        if (!allowed) {
          allowed = own;
        } else {
          std::erase_if(*allowed, [&](const std::string& k) { return own.count(k) == 0; });
        }
      }
    }
    if (allowed) {
      // Another part's additionalProperties false: only the properties it declares may appear.
      for (const std::string& r : spec.required) {
        if (allowed->count(r) == 0) {
          return Error("property '" + r +
                           "' is required, but an allOf part with additionalProperties false "
                           "does not declare it: no value satisfies the schema",
                       ptr);
        }
      }
      std::erase_if(spec.names, [&](const std::string& k) { return allowed->count(k) == 0; });
      for (auto it = spec.schemas.begin(); it != spec.schemas.end();) {
        it = allowed->count(it->first) ? std::next(it) : spec.schemas.erase(it);
      }
    }
    return ObjectFrom(spec, hint, ptr);
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
        if (s.contains(k)) {
          UNMASK_ASSIGN_OR_RETURN(one[k], Copy(s.at(k), ptr));
        }
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

  const json& root_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;
  std::map<std::string, int> open_refs_;  // refs being compiled -> written_ when entered
  std::set<std::string> used_;
  std::map<std::string, int> next_suffix_;  // NewName: base -> the next "-N" to try
  bool too_many_rules_ = false;             // more than kMaxRules (checked by Visit and Run)
  size_t copied_ = 0;                       // JSON values copied so far (Copy, kMaxCopied)
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
    if (parsed.status().code() == StatusCode::kResourceExhausted) {
      return InvalidArgumentError("JSON schema: it compiles to a grammar too large (" + m + ")");
    }
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
  size_t bytes = 0;
  for (const std::string& c : choices) bytes += c.size();
  if (bytes > kMaxChoiceBytes) {
    return InvalidArgumentError("guided_choice: choices of more than " +
                                std::to_string(kMaxChoiceBytes) +
                                " bytes in all are not supported");
  }
  const json none;
  return Compiler(none).RunChoices(choices);
}

}  // namespace unmask::grammar
