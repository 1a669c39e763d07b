// Chat template renderer: statements, variable scopes, expressions and operators (Jinja runtime
// semantics as configured by transformers: default Undefined, Python-like operators).
#include "tokenizer/chat_template_render.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/chat_template_util.h"

namespace unmask::chat_template_internal {
namespace {

// Jinja getattr/getitem: missing keys and bad indices give Undefined, not errors.
StatusOr<Value> GetItem(const Value& obj, const Value& key, std::string_view label, size_t offset) {
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

// How `e` is named in messages about undefined values: `x`, `x.y`, `x[...]` or "value".
std::string Label(const Expr& e) {
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

// A JSON value as a template value (objects keep their key order).
Value FromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return j.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? Value::Int(static_cast<int64_t>(j.get<uint64_t>()))
                 : Value::Float(static_cast<double>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value::Float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::Str(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& item : j) items.push_back(FromJson(item));
      return Value::MakeList(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.emplace_back(it.key(), FromJson(it.value()));
      return Value::MakeDict(std::move(d));
    }
    default:
      return Value::None();
  }
}

}  // namespace

Status UndefinedError(const Value& v, size_t offset) {
  return InvalidArgumentError("chat template: '" + v.s + "' is undefined" + At(offset));
}

Status TypeError(std::string_view what, size_t offset) {
  return InvalidArgumentError("chat template: " + std::string(what) + At(offset));
}

Renderer::Renderer(const ChatTemplateInputs& inputs)
    : max_steps_(inputs.max_steps), max_output_(inputs.max_output_bytes) {
  List messages;
  messages.reserve(inputs.messages.size());
  for (const ChatMessage& m : inputs.messages) {
    Dict d = {{"role", Value::Str(m.role)}, {"content", Value::Str(m.content)}};
    if (!m.tool_calls.empty()) {
      // As transformers' templates see them: the arguments as a mapping (vLLM and llama.cpp
      // parse the client's JSON text the same way); text that is not JSON stays a string.
      List calls;
      for (const ChatToolCall& c : m.tool_calls) {
        const auto args = nlohmann::ordered_json::parse(c.arguments, nullptr, false);
        Dict function = {
            {"name", Value::Str(c.name)},
            {"arguments", args.is_discarded() ? Value::Str(c.arguments) : FromJson(args)}};
        calls.push_back(Value::MakeDict({{"id", Value::Str(c.id)},
                                         {"type", Value::Str("function")},
                                         {"function", Value::MakeDict(std::move(function))}}));
      }
      d.emplace_back("tool_calls", Value::MakeList(std::move(calls)));
    }
    if (!m.tool_call_id.empty()) d.emplace_back("tool_call_id", Value::Str(m.tool_call_id));
    if (!m.name.empty()) d.emplace_back("name", Value::Str(m.name));
    messages.push_back(Value::MakeDict(std::move(d)));
  }
  scopes_.emplace_back();
  auto& globals = scopes_.back();
  if (!inputs.tools_json.empty()) {
    const auto tools = nlohmann::ordered_json::parse(inputs.tools_json, nullptr, false);
    if (!tools.is_array()) {
      init_ = InvalidArgumentError("chat template: the tools are not a JSON array");
    } else {
      globals["tools"] = FromJson(tools);
    }
  }
  globals["messages"] = Value::MakeList(std::move(messages));
  globals["add_generation_prompt"] = Value::Bool(inputs.add_generation_prompt);
  globals["bos_token"] = Value::Str(inputs.bos_token);
  globals["eos_token"] = Value::Str(inputs.eos_token);
}

StatusOr<std::string> Renderer::Run(const std::vector<Node>& nodes) {
  UNMASK_RETURN_IF_ERROR(init_);
  UNMASK_ASSIGN_OR_RETURN(Flow flow, Exec(nodes));
  (void)flow;  // break/continue outside a loop are ignored, as in Jinja's loopcontrols
  return std::move(out_);
}

Status Renderer::Step(size_t offset) {
  if (++steps_ > max_steps_) {
    return ResourceExhaustedError("chat template: evaluation budget exceeded" + At(offset));
  }
  return Status::Ok();
}

Status Renderer::Emit(std::string_view s, size_t offset) {
  if (out_.size() + s.size() > max_output_) {
    return ResourceExhaustedError("chat template: output larger than " +
                                  std::to_string(max_output_) + " bytes" + At(offset));
  }
  out_.append(s);
  return Status::Ok();
}

StatusOr<Flow> Renderer::Exec(const std::vector<Node>& nodes) {
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

Status Renderer::Assign(const std::vector<std::string>& targets, Value v, size_t offset) {
  auto& scope = scopes_.back();
  if (targets.size() == 1) {
    scope[targets[0]] = std::move(v);
    return Status::Ok();
  }
  if (!v.is_list() || v.list->size() != targets.size()) {
    return InvalidArgumentError("chat template: cannot unpack " + std::string(TypeName(v)) +
                                " into " + std::to_string(targets.size()) + " names" + At(offset));
  }
  for (size_t k = 0; k < targets.size(); ++k) scope[targets[k]] = (*v.list)[k];
  return Status::Ok();
}

StatusOr<List> Renderer::Iterate(const Value& v, size_t offset) {
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

Status Renderer::ExecFor(const Node& node) {
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

Value Renderer::Lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    const auto found = it->find(name);
    if (found != it->end()) return found->second;
  }
  return Value::Undefined(name);
}

StatusOr<Value> Renderer::Eval(const Expr& e) {
  UNMASK_ASSIGN_OR_RETURN(Value v, EvalNode(e));
  if (v.depth > kMaxValueDepth) {
    return InvalidArgumentError("chat template: value nested too deeply" + At(e.offset));
  }
  return v;
}

StatusOr<Value> Renderer::EvalNode(const Expr& e) {
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
      if (v.type == Value::Type::kFloat) return Value::Float(e.name == "+" ? v.f : -v.f);
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

StatusOr<Value> Renderer::EvalSlice(const Expr& e) {
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

StatusOr<Value> Renderer::EvalBinary(const Expr& e) {
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
  // Float arithmetic (Python): either operand a float, or true division.
  if (a.is_number() && b.is_number() &&
      (op == "/" || a.type == Value::Type::kFloat || b.type == Value::Type::kFloat)) {
    const double x = a.as_double();
    const double y = b.as_double();
    if ((op == "/" || op == "//" || op == "%") && y == 0) {
      return TypeError("float division by zero", e.offset);
    }
    if (op == "+") return Value::Float(x + y);
    if (op == "-") return Value::Float(x - y);
    if (op == "*") return Value::Float(x * y);
    if (op == "/") return Value::Float(x / y);
    if (op == "//") return Value::Float(std::floor(x / y));
    if (op == "%") return Value::Float(x - y * std::floor(x / y));
    if (op == "**") return Value::Float(std::pow(x, y));
    return type_error();
  }
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
      if (y < 0) return Value::Float(std::pow(static_cast<double>(x), static_cast<double>(y)));
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

StatusOr<bool> Renderer::CompareOne(const std::string& op, const Value& a, const Value& b,
                                    size_t offset) {
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
      found =
          std::any_of(b.list->begin(), b.list->end(), [&](const Value& x) { return Equal(a, x); });
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
  } else if (a.is_number() && b.is_number()) {
    cmp = a.as_double() < b.as_double() ? -1 : (a.as_double() > b.as_double() ? 1 : 0);
  } else if (a.is_string() && b.is_string()) {
    cmp = a.s.compare(b.s);  // UTF-8 byte order is code point order
  } else {
    if (a.is_undefined()) return UndefinedError(a, offset);
    if (b.is_undefined()) return UndefinedError(b, offset);
    return TypeError("'" + op + "' not supported between '" + std::string(TypeName(a)) + "' and '" +
                         std::string(TypeName(b)) + "'",
                     offset);
  }
  if (op == "<") return cmp < 0;
  if (op == ">") return cmp > 0;
  if (op == "<=") return cmp <= 0;
  return cmp >= 0;
}

StatusOr<Value> Renderer::EvalCompare(const Expr& e) {
  UNMASK_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0]));
  for (size_t k = 0; k < e.ops.size(); ++k) {
    UNMASK_ASSIGN_OR_RETURN(Value right, Eval(*e.args[k + 1]));
    UNMASK_ASSIGN_OR_RETURN(bool ok, CompareOne(e.ops[k], left, right, e.offset));
    if (!ok) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

}  // namespace unmask::chat_template_internal
