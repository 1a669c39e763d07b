// Chat template statement parser (jinja2/parser.py: subparse and the statement parsers); the
// expressions inside tags go to ExprParser.
#include "tokenizer/chat_template_parser.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/chat_template_expr_parser.h"
#include "tokenizer/chat_template_util.h"

namespace unmask::chat_template_internal {
namespace {

// Statement parser over the lexed segments.
class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Segment> segments) : segments_(std::move(segments)) {}

  StatusOr<std::vector<Node>> ParseAll() {
    std::string end;
    UNMASK_ASSIGN_OR_RETURN(std::vector<Node> nodes, ParseBody({}, &end, nullptr));
    return nodes;
  }

 private:
  // Parses nodes until a statement whose keyword is in `enders` (returned in *ender with its
  // parser positioned after the keyword in *rest) or the end of the template.
  StatusOr<std::vector<Node>> ParseBody(const std::vector<std::string_view>& enders,
                                        std::string* ender, std::unique_ptr<ExprParser>* rest) {
    if (++depth_ > kMaxNesting) {
      return SyntaxError("blocks nested too deeply",
                         index_ < segments_.size() ? segments_[index_].offset : 0);
    }
    std::vector<Node> nodes;
    ender->clear();
    while (index_ < segments_.size()) {
      const Segment& seg = segments_[index_++];
      if (seg.kind == SegmentKind::kText) {
        Node node = MakeNode(Node::Kind::kText, seg.offset);
        node.text = seg.text;
        nodes.push_back(std::move(node));
        continue;
      }
      UNMASK_ASSIGN_OR_RETURN(std::vector<Tok> toks, Tokenize(seg.text, seg.offset));
      auto parser = std::make_unique<ExprParser>(std::move(toks));
      if (seg.kind == SegmentKind::kOutput) {
        Node node = MakeNode(Node::Kind::kOutput, seg.offset);
        UNMASK_ASSIGN_OR_RETURN(node.expr, parser->ParseExpression());
        UNMASK_RETURN_IF_ERROR(parser->ExpectEnd());
        nodes.push_back(std::move(node));
        continue;
      }
      if (parser->Peek().kind != TokKind::kName) {
        return SyntaxError("expected a statement keyword", parser->Peek().offset);
      }
      const Tok keyword = parser->Next();
      if (std::find(enders.begin(), enders.end(), keyword.text) != enders.end()) {
        *ender = keyword.text;
        *rest = std::move(parser);
        --depth_;
        return nodes;
      }
      UNMASK_ASSIGN_OR_RETURN(Node node, ParseStatement(keyword, parser.get()));
      nodes.push_back(std::move(node));
    }
    if (!enders.empty()) {
      std::string expected;
      for (std::string_view e : enders) expected += (expected.empty() ? "" : "/") + std::string(e);
      return SyntaxError("missing {% " + expected + " %} before the end of the template",
                         segments_.empty() ? 0 : segments_.back().offset);
    }
    --depth_;
    return nodes;
  }

  StatusOr<Node> ParseStatement(const Tok& keyword, ExprParser* p) {
    const std::string& k = keyword.text;
    if (k == "if") return ParseIf(keyword, p);
    if (k == "for") return ParseFor(keyword, p);
    if (k == "set") return ParseSet(keyword, p);
    if (k == "break" || k == "continue") {
      UNMASK_RETURN_IF_ERROR(p->ExpectEnd());
      return MakeNode(k == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, keyword.offset);
    }
    static constexpr std::string_view kKnownUnsupported[] = {
        "macro", "call",       "filter", "block", "extends", "include",    "import",   "from",
        "with",  "autoescape", "raw",    "do",    "trans",   "generation", "namespace"};
    for (std::string_view u : kKnownUnsupported) {
      if (k == u) return Unsupported("statement '" + k + "'", keyword.offset);
    }
    return SyntaxError("unknown or misplaced statement '" + k + "'", keyword.offset);
  }

  StatusOr<Node> ParseIf(const Tok& keyword, ExprParser* p) {
    Node node = MakeNode(Node::Kind::kIf, keyword.offset);
    ExprParser* cond_parser = p;
    std::unique_ptr<ExprParser> rest;
    while (true) {
      ExprPtr cond;
      if (cond_parser != nullptr) {
        UNMASK_ASSIGN_OR_RETURN(cond, cond_parser->ParseExpression());
        UNMASK_RETURN_IF_ERROR(cond_parser->ExpectEnd());
      }
      std::string ender;
      std::unique_ptr<ExprParser> next;
      const bool is_else = cond_parser == nullptr;
      UNMASK_ASSIGN_OR_RETURN(
          std::vector<Node> body,
          ParseBody(is_else ? std::vector<std::string_view>{"endif"}
                            : std::vector<std::string_view>{"elif", "else", "endif"},
                    &ender, &next));
      node.branches.emplace_back(std::move(cond), std::move(body));
      rest = std::move(next);
      if (ender == "endif") {
        UNMASK_RETURN_IF_ERROR(rest->ExpectEnd());
        return node;
      }
      if (ender == "else") {
        UNMASK_RETURN_IF_ERROR(rest->ExpectEnd());
        cond_parser = nullptr;
      } else {
        cond_parser = rest.get();
        keep_alive_.push_back(std::move(rest));
      }
    }
  }

  StatusOr<std::vector<std::string>> ParseTargets(ExprParser* p) {
    std::vector<std::string> targets;
    const bool paren = p->IsOp("(");
    if (paren) p->Next();
    while (true) {
      UNMASK_ASSIGN_OR_RETURN(std::string name, p->ExpectName());
      if (p->IsOp(".")) return Unsupported("attribute assignment (namespace)", p->Peek().offset);
      if (p->IsOp("[")) return Unsupported("subscript assignment", p->Peek().offset);
      targets.push_back(std::move(name));
      if (!p->IsOp(",")) break;
      p->Next();
    }
    if (paren) UNMASK_RETURN_IF_ERROR(p->Expect(")"));
    return targets;
  }

  StatusOr<Node> ParseFor(const Tok& keyword, ExprParser* p) {
    Node node = MakeNode(Node::Kind::kFor, keyword.offset);
    UNMASK_ASSIGN_OR_RETURN(node.targets, ParseTargets(p));
    if (!p->IsName("in")) return SyntaxError("expected 'in'", p->Peek().offset);
    p->Next();
    UNMASK_ASSIGN_OR_RETURN(node.expr, p->ParseExpression(/*with_condition=*/false));
    if (p->IsName("if")) {
      p->Next();
      UNMASK_ASSIGN_OR_RETURN(node.filter, p->ParseExpression());
    }
    if (p->IsName("recursive")) return Unsupported("recursive loops", p->Peek().offset);
    UNMASK_RETURN_IF_ERROR(p->ExpectEnd());
    std::string ender;
    std::unique_ptr<ExprParser> rest;
    UNMASK_ASSIGN_OR_RETURN(node.body, ParseBody({"else", "endfor"}, &ender, &rest));
    UNMASK_RETURN_IF_ERROR(rest->ExpectEnd());
    if (ender == "else") {
      UNMASK_ASSIGN_OR_RETURN(node.else_body, ParseBody({"endfor"}, &ender, &rest));
      UNMASK_RETURN_IF_ERROR(rest->ExpectEnd());
    }
    return node;
  }

  StatusOr<Node> ParseSet(const Tok& keyword, ExprParser* p) {
    Node node = MakeNode(Node::Kind::kSet, keyword.offset);
    UNMASK_ASSIGN_OR_RETURN(node.targets, ParseTargets(p));
    if (!p->IsOp("=")) {
      if (p->AtEnd()) return Unsupported("block assignment {% set x %}", keyword.offset);
      return SyntaxError("expected '='", p->Peek().offset);
    }
    p->Next();
    UNMASK_ASSIGN_OR_RETURN(node.expr, p->ParseExpression());
    if (p->IsOp(",")) return Unsupported("tuple on the right of set", p->Peek().offset);
    UNMASK_RETURN_IF_ERROR(p->ExpectEnd());
    return node;
  }

  std::vector<Segment> segments_;
  size_t index_ = 0;
  int depth_ = 0;
  std::vector<std::unique_ptr<ExprParser>> keep_alive_;
};

}  // namespace

StatusOr<std::vector<Node>> ParseTemplate(std::vector<Segment> segments) {
  TemplateParser parser(std::move(segments));
  return parser.ParseAll();
}

}  // namespace unmask::chat_template_internal
