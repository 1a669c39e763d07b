// Chat template built-ins: the functions raise_exception() and range(), string and dict methods,
// filters (jinja2/filters.py) and tests (jinja2/tests.py) of the supported subset.
#include "tokenizer/chat_template_render.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/chat_template_util.h"

namespace unmask::chat_template_internal {
namespace {

// Python str.strip/lstrip/rstrip: drops `chars` (whitespace when absent) from the chosen ends.
std::string Strip(std::string_view s, std::optional<std::string> chars, bool left, bool right) {
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

// ASCII upper case (Python str.upper for ASCII text).
std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// ASCII lower case.
std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// First character upper case, the rest lower case (Python str.capitalize).
std::string Capitalize(std::string s) {
  s = Lower(std::move(s));
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// Each run of letters starts upper case, the rest lower case (Python str.title).
std::string Title(std::string s) {
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

// Python str.replace(old, new[, count]) of `s`; ResourceExhausted past kMaxString.
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

}  // namespace

StatusOr<std::vector<Value>> Renderer::EvalArgs(const Expr& e, size_t first) {
  std::vector<Value> args;
  for (size_t k = first; k < e.args.size(); ++k) {
    UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*e.args[k]));
    args.push_back(std::move(v));
  }
  return args;
}

// Positional-or-keyword argument `index`/`name`; `fallback` when absent.
StatusOr<Value> Renderer::Arg(const Expr& e, const std::vector<Value>& args, size_t index,
                              std::string_view name, Value fallback) {
  if (index < args.size()) return args[index];
  for (const auto& [key, expr] : e.kwargs) {
    if (key == name) return Eval(*expr);
  }
  return fallback;
}

Status Renderer::CheckArgCount(const Expr& e, const std::vector<Value>& args, size_t max,
                               std::string_view what) {
  if (args.size() + e.kwargs.size() > max) {
    return TypeError(std::string(what) + " takes at most " + std::to_string(max) + " arguments",
                     e.offset);
  }
  return Status::Ok();
}

StatusOr<Value> Renderer::EvalCall(const Expr& e) {
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
        const uint64_t distance = step > 0
                                      ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
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
  return Unsupported(
      "call of a " + std::string(callee.kind == Expr::Kind::kName ? "variable '" + callee.name + "'"
                                                                  : "computed value"),
      e.offset);
}

StatusOr<Value> Renderer::CallMethod(const Expr& e, const Value& obj, const std::string& method,
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
      if (args.size() < 2 || args.size() > 3) return TypeError("replace expects 2-3 args", offset);
      UNMASK_ASSIGN_OR_RETURN(
          std::string r, Replace(s, args[0], args[1], args.size() > 2 ? args[2] : Value(), offset));
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

StatusOr<Value> Renderer::EvalFilter(const Expr& e) {
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
  if (f == "tojson") {
    // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
    UNMASK_ASSIGN_OR_RETURN(Value indent, Arg(e, args, 1, "indent", Value::None()));
    UNMASK_ASSIGN_OR_RETURN(Value sort_keys, Arg(e, args, 3, "sort_keys", Value::Bool(false)));
    UNMASK_ASSIGN_OR_RETURN(Value separators, Arg(e, args, 2, "separators", Value::None()));
    UNMASK_ASSIGN_OR_RETURN(Value ensure_ascii,
                            Arg(e, args, 0, "ensure_ascii", Value::Bool(false)));
    if (separators.type != Value::Type::kNone) return Unsupported("tojson(separators=...)", at);
    if (Truthy(ensure_ascii)) return Unsupported("tojson(ensure_ascii=True)", at);
    if (indent.type != Value::Type::kNone &&
        !(indent.type == Value::Type::kInt && indent.i >= 0 && indent.i <= 16)) {
      return TypeError("tojson: indent must be an integer from 0 to 16", at);
    }
    std::string out;
    if (!ToJson(v, indent.type == Value::Type::kInt ? static_cast<int>(indent.i) : -1,
                Truthy(sort_keys), &out)) {
      return TypeError("tojson: an undefined value is not JSON serializable", at);
    }
    if (out.size() > kMaxString) return ResourceExhaustedError("chat template: too long");
    return Value::Str(std::move(out));
  }
  if (f == "int") {
    if (v.is_integer()) return Value::Int(v.as_int());
    if (v.type == Value::Type::kFloat && std::isfinite(v.f) && std::fabs(v.f) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(v.f));
    }
    UNMASK_ASSIGN_OR_RETURN(Value fallback, Arg(e, args, 0, "default", Value::Int(0)));
    if (v.is_string()) {
      int64_t x = 0;
      const std::string t = Strip(v.s, std::nullopt, true, true);
      const auto r = std::from_chars(t.data(), t.data() + t.size(), x);
      if (r.ec == std::errc() && r.ptr == t.data() + t.size() && !t.empty()) return Value::Int(x);
    }
    return fallback;
  }
  if (f == "float") {
    if (v.is_number()) return Value::Float(v.as_double());
    UNMASK_ASSIGN_OR_RETURN(Value fallback, Arg(e, args, 0, "default", Value::Float(0)));
    if (v.is_string()) {
      double x = 0;
      const std::string t = Strip(v.s, std::nullopt, true, true);
      const auto r = std::from_chars(t.data(), t.data() + t.size(), x);
      if (r.ec == std::errc() && r.ptr == t.data() + t.size() && !t.empty()) {
        return Value::Float(x);
      }
    }
    return fallback;
  }
  if (f == "replace") {
    if (args.size() < 2) return TypeError("replace expects 2-3 arguments", at);
    UNMASK_ASSIGN_OR_RETURN(std::string r, Replace(ToString(v), args[0], args[1],
                                                   args.size() > 2 ? args[2] : Value(), at));
    return Value::Str(std::move(r));
  }
  return Unsupported("filter '" + f + "'", at);
}

StatusOr<bool> Renderer::EvalTest(const Expr& e) {
  UNMASK_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0]));
  UNMASK_ASSIGN_OR_RETURN(std::vector<Value> args, EvalArgs(e, 1));
  const std::string& t = e.name;
  if (t == "defined") return !v.is_undefined();
  if (t == "undefined") return v.is_undefined();
  if (t == "none") return v.type == Value::Type::kNone;
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number() && v.type != Value::Type::kBool;
  if (t == "float") return v.type == Value::Type::kFloat;
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

}  // namespace unmask::chat_template_internal
