// Chat template internals (src/tokenizer/ only): the renderer, a tree-walking evaluator of the
// statement tree with a step and output budget. Statements, variables, expressions and operators
// are in chat_template_render.cc; calls, methods, filters and tests in chat_template_builtins.cc.
#ifndef UNMASK_TOKENIZER_CHAT_TEMPLATE_RENDER_H_
#define UNMASK_TOKENIZER_CHAT_TEMPLATE_RENDER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/chat_template_ast.h"
#include "tokenizer/chat_template_value.h"

namespace unmask::chat_template_internal {

// How a statement list ended: normally, or at a {% break %} / {% continue %}.
enum class Flow { kNormal, kBreak, kContinue };

// InvalidArgument "chat template: '<name>' is undefined at offset N" for the undefined value `v`.
Status UndefinedError(const Value& v, size_t offset);

// InvalidArgument "chat template: <what> at offset N" (a type or value error at run time).
Status TypeError(std::string_view what, size_t offset);

// Renders one template for one set of inputs (one Renderer per Render call).
class Renderer {
 public:
  // Binds the globals (messages, add_generation_prompt, bos_token, eos_token) and the budget.
  explicit Renderer(const ChatTemplateInputs& inputs);

  // Executes the template's top-level statements and returns the output.
  StatusOr<std::string> Run(const std::vector<Node>& nodes);

 private:
  // chat_template_render.cc

  // Counts one evaluation step; ResourceExhausted past the step budget.
  Status Step(size_t offset);
  // Appends `s` to the output; ResourceExhausted past the output budget.
  Status Emit(std::string_view s, size_t offset);
  // Executes `nodes` in order; kBreak / kContinue when a loop control statement ends them early.
  StatusOr<Flow> Exec(const std::vector<Node>& nodes);
  // Binds `targets` to `v` in the innermost scope (several targets unpack a list).
  Status Assign(const std::vector<std::string>& targets, Value v, size_t offset);
  // The items iterating `v` gives: list items, dict keys, string characters, none for undefined.
  StatusOr<List> Iterate(const Value& v, size_t offset);
  // Runs a for loop: the `if` filter, the `loop` variable, break/continue and the else body.
  Status ExecFor(const Node& node);
  // The innermost binding of `name`, or an undefined value naming it.
  Value Lookup(const std::string& name) const;
  // Evaluates `e`; InvalidArgument when the result nests deeper than kMaxValueDepth.
  StatusOr<Value> Eval(const Expr& e);
  // Eval without the nesting check: one step, then by e.kind.
  StatusOr<Value> EvalNode(const Expr& e);
  // `obj[start:stop:step]` of a list or a string (Python slice semantics).
  StatusOr<Value> EvalSlice(const Expr& e);
  // Arithmetic, `~`, and the short-circuit `and` / `or`.
  StatusOr<Value> EvalBinary(const Expr& e);
  // One link `a op b` of a comparison chain.
  StatusOr<bool> CompareOne(const std::string& op, const Value& a, const Value& b, size_t offset);
  // A comparison chain, false at its first false link.
  StatusOr<Value> EvalCompare(const Expr& e);

  // chat_template_builtins.cc

  // Evaluates the positional arguments e.args[first..].
  StatusOr<std::vector<Value>> EvalArgs(const Expr& e, size_t first);
  // Positional-or-keyword argument `index`/`name`; `fallback` when absent.
  StatusOr<Value> Arg(const Expr& e, const std::vector<Value>& args, size_t index,
                      std::string_view name, Value fallback);
  // InvalidArgument when `what` got more than `max` arguments (positional and keyword).
  Status CheckArgCount(const Expr& e, const std::vector<Value>& args, size_t max,
                       std::string_view what);
  // A call: the functions raise_exception() and range(), or a method of a string or dict.
  StatusOr<Value> EvalCall(const Expr& e);
  // The string or dict method `method` of `obj`, called with `args`.
  StatusOr<Value> CallMethod(const Expr& e, const Value& obj, const std::string& method,
                             const std::vector<Value>& args, size_t offset);
  // A filter `args[0] | name(args[1..], kwargs)`.
  StatusOr<Value> EvalFilter(const Expr& e);
  // A test `args[0] is name(args[1..])`, before e.negated is applied.
  StatusOr<bool> EvalTest(const Expr& e);

  const int64_t max_steps_;
  const size_t max_output_;
  std::vector<std::unordered_map<std::string, Value>> scopes_;  // globals first, innermost last
  std::string out_;
  int64_t steps_ = 0;
  Status init_;  // an error binding the globals (tools that are not a JSON array)
};

}  // namespace unmask::chat_template_internal

#endif  // UNMASK_TOKENIZER_CHAT_TEMPLATE_RENDER_H_
