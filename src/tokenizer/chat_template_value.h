// Chat template internals (src/tokenizer/ only): the run-time value type (Jinja/Python values:
// undefined, none, bool, int, float, str, list, dict) and Python-like helpers over it.
#ifndef UNMASK_TOKENIZER_CHAT_TEMPLATE_VALUE_H_
#define UNMASK_TOKENIZER_CHAT_TEMPLATE_VALUE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace unmask::chat_template_internal {

struct Value;
// Items of a list value.
using List = std::vector<Value>;
// Entries of a dict value, insertion-ordered (keys are strings).
using Dict = std::vector<std::pair<std::string, Value>>;

// A run-time value. Lists and dicts are immutable and shared (copying a Value is cheap).
struct Value {
  enum class Type { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict };
  Type type = Type::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;   // kFloat
  std::string s;  // kString; for kUndefined, the name that was undefined (for messages)
  std::shared_ptr<const List> list;
  std::shared_ptr<const Dict> dict;
  int depth = 0;  // list/dict nesting (checked against kMaxValueDepth by the renderer)

  // Constructors, one per type; `name` is the undefined variable or attribute, for messages.
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
  static Value Float(double x) {
    Value v;
    v.type = Type::kFloat;
    v.f = x;
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

  // Type predicates.
  bool is_undefined() const { return type == Type::kUndefined; }
  bool is_string() const { return type == Type::kString; }
  bool is_list() const { return type == Type::kList; }
  bool is_dict() const { return type == Type::kDict; }
  // Python treats bool as an int.
  bool is_integer() const { return type == Type::kInt || type == Type::kBool; }
  // The integer (bools as 0/1); only for is_integer() values.
  int64_t as_int() const { return type == Type::kBool ? (b ? 1 : 0) : i; }
  // int, bool or float (Python's numbers).
  bool is_number() const { return is_integer() || type == Type::kFloat; }
  // The number as a double; only for is_number() values.
  double as_double() const { return type == Type::kFloat ? f : static_cast<double>(as_int()); }

  // The value of `key` in a dict, or nullptr (also when this is not a dict).
  const Value* Find(std::string_view key) const {
    if (!is_dict()) return nullptr;
    for (const auto& [k, v] : *dict) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

// Python type name of `v` ("str", "int", "NoneType", ...; "undefined" for an undefined value).
std::string_view TypeName(const Value& v);

// Python truthiness (undefined and none are false; empty strings/lists/dicts are false).
bool Truthy(const Value& v);

// Python ==; bools compare as ints, dicts compare regardless of key order.
bool Equal(const Value& a, const Value& b);

// Python repr() of a float: the shortest digits that read back to `x`, fixed notation for
// exponents -4..15 ("0.5", "1.0", "1e-05", "1e+16", "inf", "nan").
std::string FloatRepr(double x);

// json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys) as transformers' `tojson`
// filter calls it: separators ", " / ": " without an indent, "," / ": " with one (indent < 0:
// none); non-ASCII text as is, control characters escaped; NaN and Infinity as Python writes them.
// False when `v` holds an undefined value (Python raises TypeError there).
bool ToJson(const Value& v, int indent, bool sort_keys, std::string* out, int level = 0);

// Python str() ("" for undefined).
std::string ToString(const Value& v);

// Python repr() (strings quoted and escaped as CPython does for the common cases).
std::string Repr(const Value& v);

// Code points of a UTF-8 string (invalid bytes become U+FFFD), as Python str indexing sees it.
std::vector<std::string> SplitCodePoints(std::string_view s);

}  // namespace unmask::chat_template_internal

#endif  // UNMASK_TOKENIZER_CHAT_TEMPLATE_VALUE_H_
