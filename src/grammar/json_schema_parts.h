// Internal to the JSON schema compiler (json_schema.cc): keyword tables, decimal ranges as GBNF,
// JSON value tests, rule names and JSON pointers. Not a public API.
#ifndef UNMASK_GRAMMAR_JSON_SCHEMA_PARTS_H_
#define UNMASK_GRAMMAR_JSON_SCHEMA_PARTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace unmask::grammar::schema_parts {

// The annotation keywords (title, description, default, examples, $defs, ...).
const std::set<std::string>& Annotations();
// Keywords that only describe (Annotations() and the "x-" extension keys): ignored.
bool IsAnnotation(const std::string& key);
// The validation keywords of each type name (object, array, string, integer, number, boolean,
// null): a type list's keywords are split per type.
const std::map<std::string, std::set<std::string>>& KeywordsOfType();

// GBNF for the decimal integers in [lo, hi] (0 <= lo <= hi), without leading zeros.
std::string NonNegative(int64_t lo, int64_t hi);

// Deepest nesting of arrays and objects in v (1 for a scalar), without recursion.
int NestingDepth(const nlohmann::ordered_json& v);
// An integer-valued number (5 and 5.0 alike) as int64, saturated at the int64 range; nullopt for
// anything else.
std::optional<int64_t> AsInteger(const nlohmann::ordered_json& v);
// Whether a value has JSON Schema type t.
bool HasType(const nlohmann::ordered_json& v, const std::string& t);
// A JSON pointer's array index: decimal digits only, no sign; false when it does not fit size_t.
bool ArrayIndex(const std::string& key, size_t* index);

// A trie of texts by character: a UTF-8 code point, or with json_escapes also a JSON escape
// sequence ("\n", "\u00e9"), is one edge. Children come after their parents in `nodes`, so a
// pass from the last node back sees every child before its parent. Node 0 is the root.
struct CharTrie {
  struct Node {
    bool ends = false;                   // a text ends here
    std::map<std::string, size_t> next;  // character (its bytes) -> node
  };
  std::vector<Node> nodes = std::vector<Node>(1);

  void Add(const std::string& text, bool json_escapes);
};

// A rule-name stem from a hint: lower-case letters, digits and '-', at most 48 characters.
std::string Sanitize(const std::string& hint);
// `base` + "/" + `key` with '~' and '/' escaped (~0, ~1).
std::string Pointer(const std::string& base, const std::string& key);

}  // namespace unmask::grammar::schema_parts

#endif  // UNMASK_GRAMMAR_JSON_SCHEMA_PARTS_H_
