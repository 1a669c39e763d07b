// Chat template internals (src/tokenizer/ only): the syntax tree that the parsers build and the
// renderer walks: expressions (Expr) and statements (Node), with the byte offsets for messages.
#ifndef UNMASK_TOKENIZER_CHAT_TEMPLATE_AST_H_
#define UNMASK_TOKENIZER_CHAT_TEMPLATE_AST_H_

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_template_value.h"

namespace unmask::chat_template_internal {

// An expression node; which fields are used depends on `kind`.
struct Expr {
  enum class Kind {
    kLiteral,    // value
    kList,       // args
    kDict,       // keys (args[2k]) and values (args[2k+1])
    kName,       // name
    kAttr,       // args[0].name
    kIndex,      // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (null parts allowed)
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs)
    kTest,       // args[0] is [not] name(args[1..])
    kUnary,      // name in {"-", "+", "not"}: args[0]
    kBinary,     // args[0] name args[1]: + - * / // % ** ~ and or
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ...
    kCondition,  // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind;
  size_t offset;
  int height = 1;  // 1 + the largest child height (bounded, so evaluation recursion is too)
  Value value;
  std::string name;
  bool negated = false;
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> kwargs;
  std::vector<std::string> ops;
};
// Owning pointer to an expression (children are owned by their parent).
using ExprPtr = std::unique_ptr<Expr>;

// A new expression of `kind` at template offset `offset`, other fields defaulted.
inline ExprPtr MakeExpr(Expr::Kind kind, size_t offset) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->offset = offset;
  return e;
}

// A statement node (text, output, if, for, set, break, continue); fields by `kind`.
struct Node {
  enum class Kind { kText, kOutput, kIf, kFor, kSet, kBreak, kContinue };
  Kind kind;
  size_t offset;
  std::string text;                  // kText
  ExprPtr expr;                      // kOutput, kSet value, kFor iterable
  ExprPtr filter;                    // kFor `if` condition
  std::vector<std::string> targets;  // kFor / kSet names
  std::vector<std::pair<ExprPtr, std::vector<Node>>> branches;  // kIf (null condition: else)
  std::vector<Node> body;                                       // kFor
  std::vector<Node> else_body;                                  // kFor
};

// A new statement of `kind` at template offset `offset`, other fields defaulted.
inline Node MakeNode(Node::Kind kind, size_t offset) {
  Node node;
  node.kind = kind;
  node.offset = offset;
  return node;
}

}  // namespace unmask::chat_template_internal

#endif  // UNMASK_TOKENIZER_CHAT_TEMPLATE_AST_H_
