// Chat template expression parser (jinja2/parser.py: parse_expression down to parse_primary, with
// postfix operators, filters and tests).
#include "tokenizer/chat_template_expr_parser.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "tokenizer/chat_template_util.h"

namespace unmask::chat_template_internal {
namespace {

// Sets e->height from its children; InvalidArgument past kMaxHeight (long operator, filter or
// subscript chains build tall trees without recursion in the parser).
Status Seal(Expr* e) {
  int height = 0;
  for (const auto& a : e->args) {
    if (a) height = std::max(height, a->height);
  }
  for (const auto& kv : e->kwargs) height = std::max(height, kv.second->height);
  e->height = height + 1;
  if (e->height > kMaxHeight) return SyntaxError("expression nested too deeply", e->offset);
  return Status::Ok();
}

// The kBinary node `a op b` at offset `at`, sealed.
StatusOr<ExprPtr> Binary(std::string op, size_t at, ExprPtr a, ExprPtr b) {
  auto e = MakeExpr(Expr::Kind::kBinary, at);
  e->name = std::move(op);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  UNMASK_RETURN_IF_ERROR(Seal(e.get()));
  return e;
}

}  // namespace

Status ExprParser::Expect(std::string_view op) {
  if (!IsOp(op)) return SyntaxError("expected '" + std::string(op) + "'", Peek().offset);
  Next();
  return Status::Ok();
}

StatusOr<std::string> ExprParser::ExpectName() {
  if (Peek().kind != TokKind::kName) return SyntaxError("expected a name", Peek().offset);
  return Next().text;
}

Status ExprParser::ExpectEnd() {
  if (!AtEnd()) return SyntaxError("unexpected '" + Peek().text + "'", Peek().offset);
  return Status::Ok();
}

StatusOr<ExprPtr> ExprParser::ParseExpression(bool with_condition) {
  if (++depth_ > kMaxNesting) return SyntaxError("expression nested too deeply", Peek().offset);
  StatusOr<ExprPtr> result = ParseExpressionInner(with_condition);
  --depth_;
  return result;
}

StatusOr<ExprPtr> ExprParser::ParseExpressionInner(bool with_condition) {
  UNMASK_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
  while (with_condition && IsName("if")) {
    const size_t at = Next().offset;
    auto cond = MakeExpr(Expr::Kind::kCondition, at);
    UNMASK_ASSIGN_OR_RETURN(ExprPtr test, ParseOr());
    ExprPtr otherwise;
    if (IsName("else")) {
      Next();
      UNMASK_ASSIGN_OR_RETURN(otherwise, ParseExpression(true));
    }
    cond->args.push_back(std::move(test));
    cond->args.push_back(std::move(expr));
    cond->args.push_back(std::move(otherwise));
    UNMASK_RETURN_IF_ERROR(Seal(cond.get()));
    expr = std::move(cond);
  }
  return expr;
}

StatusOr<ExprPtr> ExprParser::ParseOr() {
  return ParseLeftAssociative({"or"}, /*keywords=*/true, &ExprParser::ParseAnd);
}

StatusOr<ExprPtr> ExprParser::ParseAnd() {
  return ParseLeftAssociative({"and"}, /*keywords=*/true, &ExprParser::ParseNot);
}

StatusOr<ExprPtr> ExprParser::ParseNot() {
  if (IsName("not")) {
    const size_t at = Next().offset;
    if (++depth_ > kMaxNesting) return SyntaxError("expression nested too deeply", at);
    StatusOr<ExprPtr> operand = ParseNot();
    --depth_;
    if (!operand.ok()) return operand.status();
    auto e = MakeExpr(Expr::Kind::kUnary, at);
    e->name = "not";
    e->args.push_back(std::move(operand).value());
    UNMASK_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }
  return ParseCompare();
}

StatusOr<ExprPtr> ExprParser::ParseCompare() {
  UNMASK_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
  ExprPtr cmp;
  while (true) {
    std::string op;
    const Tok& t = Peek();
    if (t.kind == TokKind::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                   t.text == ">" || t.text == "<=" || t.text == ">=")) {
      op = t.text;
      Next();
    } else if (IsName("in")) {
      op = "in";
      Next();
    } else if (IsName("not") && IsName("in", 1)) {
      op = "not in";
      Next();
      Next();
    } else {
      break;
    }
    if (!cmp) {
      cmp = MakeExpr(Expr::Kind::kCompare, t.offset);
      cmp->args.push_back(std::move(first));
    }
    UNMASK_ASSIGN_OR_RETURN(ExprPtr operand, ParseMath1());
    cmp->ops.push_back(std::move(op));
    cmp->args.push_back(std::move(operand));
  }
  if (!cmp) return first;
  UNMASK_RETURN_IF_ERROR(Seal(cmp.get()));  // once: sealing per operand was quadratic in the chain
  return cmp;
}

StatusOr<ExprPtr> ExprParser::ParseMath1() {
  return ParseLeftAssociative({"+", "-"}, /*keywords=*/false, &ExprParser::ParseConcat);
}

StatusOr<ExprPtr> ExprParser::ParseConcat() {
  return ParseLeftAssociative({"~"}, /*keywords=*/false, &ExprParser::ParseMath2);
}

StatusOr<ExprPtr> ExprParser::ParseMath2() {
  return ParseLeftAssociative({"*", "/", "//", "%"}, /*keywords=*/false, &ExprParser::ParsePow);
}

StatusOr<ExprPtr> ExprParser::ParsePow() {
  return ParseLeftAssociative({"**"}, /*keywords=*/false, &ExprParser::ParseFilteredUnary);
}

StatusOr<ExprPtr> ExprParser::ParseFilteredUnary() { return ParseUnary(true); }

StatusOr<ExprPtr> ExprParser::ParseLeftAssociative(std::initializer_list<std::string_view> ops,
                                                   bool keywords,
                                                   StatusOr<ExprPtr> (ExprParser::*next)()) {
  UNMASK_ASSIGN_OR_RETURN(ExprPtr left, (this->*next)());
  while (true) {
    bool match = false;
    for (std::string_view op : ops) match = match || (keywords ? IsName(op) : IsOp(op));
    if (!match) break;
    const Tok& t = Next();
    UNMASK_ASSIGN_OR_RETURN(ExprPtr right, (this->*next)());
    UNMASK_ASSIGN_OR_RETURN(left, Binary(t.text, t.offset, std::move(left), std::move(right)));
  }
  return left;
}

StatusOr<ExprPtr> ExprParser::ParseUnary(bool with_filter) {
  if (++depth_ > kMaxNesting) return SyntaxError("expression nested too deeply", Peek().offset);
  StatusOr<ExprPtr> result = ParseUnaryInner(with_filter);
  --depth_;
  return result;
}

StatusOr<ExprPtr> ExprParser::ParseUnaryInner(bool with_filter) {
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    const Tok& t = Next();
    UNMASK_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
    node = MakeExpr(Expr::Kind::kUnary, t.offset);
    node->name = t.text;
    node->args.push_back(std::move(operand));
    UNMASK_RETURN_IF_ERROR(Seal(node.get()));
  } else {
    UNMASK_ASSIGN_OR_RETURN(node, ParsePrimary());
  }
  UNMASK_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
  if (with_filter) {
    UNMASK_ASSIGN_OR_RETURN(node, ParseFilters(std::move(node)));
  }
  return node;
}

StatusOr<ExprPtr> ExprParser::ParsePrimary() {
  const Tok& t = Peek();
  switch (t.kind) {
    case TokKind::kName: {
      Next();
      auto e = MakeExpr(Expr::Kind::kLiteral, t.offset);
      if (t.text == "true" || t.text == "True") {
        e->value = Value::Bool(true);
      } else if (t.text == "false" || t.text == "False") {
        e->value = Value::Bool(false);
      } else if (t.text == "none" || t.text == "None") {
        e->value = Value::None();
      } else {
        e->kind = Expr::Kind::kName;
        e->name = t.text;
      }
      return e;
    }
    case TokKind::kString: {
      auto e = MakeExpr(Expr::Kind::kLiteral, t.offset);
      std::string s;
      while (Peek().kind == TokKind::kString) s += Next().text;  // adjacent literals concatenate
      e->value = Value::Str(std::move(s));
      return e;
    }
    case TokKind::kInt: {
      Next();
      auto e = MakeExpr(Expr::Kind::kLiteral, t.offset);
      e->value = Value::Int(t.value);
      return e;
    }
    case TokKind::kFloat: {
      Next();
      auto e = MakeExpr(Expr::Kind::kLiteral, t.offset);
      e->value = Value::Float(t.number);
      return e;
    }
    case TokKind::kOp:
      if (t.text == "(") {
        Next();
        UNMASK_ASSIGN_OR_RETURN(ExprPtr inner, ParseExpression());
        if (IsOp(",")) {  // a tuple: treated as a list
          auto list = MakeExpr(Expr::Kind::kList, t.offset);
          list->args.push_back(std::move(inner));
          while (IsOp(",")) {
            Next();
            if (IsOp(")")) break;
            UNMASK_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
            list->args.push_back(std::move(item));
          }
          UNMASK_RETURN_IF_ERROR(Seal(list.get()));
          inner = std::move(list);
        }
        UNMASK_RETURN_IF_ERROR(Expect(")"));
        return inner;
      }
      if (t.text == "[") {
        Next();
        auto list = MakeExpr(Expr::Kind::kList, t.offset);
        while (!IsOp("]")) {
          UNMASK_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
          list->args.push_back(std::move(item));
          if (!IsOp(",")) break;
          Next();
        }
        UNMASK_RETURN_IF_ERROR(Expect("]"));
        UNMASK_RETURN_IF_ERROR(Seal(list.get()));
        return list;
      }
      if (t.text == "{") {
        Next();
        auto dict = MakeExpr(Expr::Kind::kDict, t.offset);
        while (!IsOp("}")) {
          UNMASK_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
          UNMASK_RETURN_IF_ERROR(Expect(":"));
          UNMASK_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
          dict->args.push_back(std::move(key));
          dict->args.push_back(std::move(value));
          if (!IsOp(",")) break;
          Next();
        }
        UNMASK_RETURN_IF_ERROR(Expect("}"));
        UNMASK_RETURN_IF_ERROR(Seal(dict.get()));
        return dict;
      }
      break;
    case TokKind::kEnd:
      return SyntaxError("expected an expression", t.offset);
  }
  return SyntaxError("unexpected '" + t.text + "'", t.offset);
}

// Call arguments after '(' up to and including ')'.
Status ExprParser::ParseCallArgs(Expr* call) {
  UNMASK_RETURN_IF_ERROR(Expect("("));
  while (!IsOp(")")) {
    if (IsOp("*") || IsOp("**")) return Unsupported("*args / **kwargs", Peek().offset);
    if (Peek().kind == TokKind::kName && IsOp("=", 1)) {
      std::string key = Next().text;
      Next();
      UNMASK_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      call->kwargs.emplace_back(std::move(key), std::move(value));
    } else {
      if (!call->kwargs.empty()) {
        return SyntaxError("positional argument after keyword argument", Peek().offset);
      }
      UNMASK_ASSIGN_OR_RETURN(ExprPtr arg, ParseExpression());
      call->args.push_back(std::move(arg));
    }
    if (!IsOp(",")) break;
    Next();
  }
  return Expect(")");
}

StatusOr<ExprPtr> ExprParser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".")) {
      const size_t at = Next().offset;
      if (Peek().kind == TokKind::kInt) {  // a.0 is a[0]
        auto index = MakeExpr(Expr::Kind::kIndex, at);
        auto key = MakeExpr(Expr::Kind::kLiteral, Peek().offset);
        key->value = Value::Int(Next().value);
        index->args.push_back(std::move(node));
        index->args.push_back(std::move(key));
        UNMASK_RETURN_IF_ERROR(Seal(index.get()));
        node = std::move(index);
        continue;
      }
      UNMASK_ASSIGN_OR_RETURN(std::string name, ExpectName());
      auto attr = MakeExpr(Expr::Kind::kAttr, at);
      attr->name = std::move(name);
      attr->args.push_back(std::move(node));
      UNMASK_RETURN_IF_ERROR(Seal(attr.get()));
      node = std::move(attr);
    } else if (IsOp("[")) {
      const size_t at = Next().offset;
      ExprPtr parts[3];
      int part = 0;
      bool is_slice = false;
      while (true) {
        if (IsOp(":")) {
          Next();
          is_slice = true;
          if (++part > 2) return SyntaxError("too many ':' in a slice", at);
          continue;
        }
        if (IsOp("]")) break;
        if (parts[part]) return SyntaxError("expected ']'", Peek().offset);
        UNMASK_ASSIGN_OR_RETURN(parts[part], ParseExpression());
      }
      Next();  // ']'
      if (!is_slice) {
        if (!parts[0]) return SyntaxError("empty subscript", at);
        auto index = MakeExpr(Expr::Kind::kIndex, at);
        index->args.push_back(std::move(node));
        index->args.push_back(std::move(parts[0]));
        UNMASK_RETURN_IF_ERROR(Seal(index.get()));
        node = std::move(index);
      } else {
        auto slice = MakeExpr(Expr::Kind::kSlice, at);
        slice->args.push_back(std::move(node));
        for (auto& p : parts) slice->args.push_back(std::move(p));
        UNMASK_RETURN_IF_ERROR(Seal(slice.get()));
        node = std::move(slice);
      }
    } else if (IsOp("(")) {
      auto call = MakeExpr(Expr::Kind::kCall, Peek().offset);
      call->args.push_back(std::move(node));
      UNMASK_RETURN_IF_ERROR(ParseCallArgs(call.get()));
      UNMASK_RETURN_IF_ERROR(Seal(call.get()));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

StatusOr<ExprPtr> ExprParser::ParseFilters(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      const size_t at = Next().offset;
      UNMASK_ASSIGN_OR_RETURN(std::string name, ExpectName());
      while (IsOp(".")) {  // dotted filter names
        Next();
        UNMASK_ASSIGN_OR_RETURN(std::string part, ExpectName());
        name += "." + part;
      }
      auto filter = MakeExpr(Expr::Kind::kFilter, at);
      filter->name = std::move(name);
      filter->args.push_back(std::move(node));
      if (IsOp("(")) UNMASK_RETURN_IF_ERROR(ParseCallArgs(filter.get()));
      UNMASK_RETURN_IF_ERROR(Seal(filter.get()));
      node = std::move(filter);
    } else if (IsName("is")) {
      const size_t at = Next().offset;
      auto test = MakeExpr(Expr::Kind::kTest, at);
      if (IsName("not")) {
        Next();
        test->negated = true;
      }
      UNMASK_ASSIGN_OR_RETURN(test->name, ExpectName());
      test->args.push_back(std::move(node));
      const Tok& t = Peek();
      if (IsOp("(")) {
        UNMASK_RETURN_IF_ERROR(ParseCallArgs(test.get()));
      } else if ((t.kind == TokKind::kName || t.kind == TokKind::kString ||
                  t.kind == TokKind::kInt || IsOp("[") || IsOp("{")) &&
                 !IsName("else") && !IsName("or") && !IsName("and")) {
        if (IsName("is")) return SyntaxError("cannot chain tests with 'is'", t.offset);
        UNMASK_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
        UNMASK_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
        test->args.push_back(std::move(arg));
      }
      UNMASK_RETURN_IF_ERROR(Seal(test.get()));
      node = std::move(test);
    } else if (IsOp("(")) {
      auto call = MakeExpr(Expr::Kind::kCall, Peek().offset);
      call->args.push_back(std::move(node));
      UNMASK_RETURN_IF_ERROR(ParseCallArgs(call.get()));
      UNMASK_RETURN_IF_ERROR(Seal(call.get()));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

}  // namespace unmask::chat_template_internal
