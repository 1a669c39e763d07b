// Jinja2-subset chat template renderer (see chat_template.h for the supported subset).
// Semantics follow Jinja2 (pallets/jinja: lexer.py, parser.py, runtime.py, filters.py, tests.py) as
// configured by transformers for chat templates. Pipeline: lexer (template -> text and tag
// segments, applying whitespace control; chat_template_lexer) -> parser (segments -> statement
// tree, tag contents -> expression trees; chat_template_parser, chat_template_expr_parser) ->
// evaluator (tree-walking, with a step and output budget; chat_template_render,
// chat_template_builtins). This file holds only the public API.
#include "tokenizer/chat_template.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_template_ast.h"
#include "tokenizer/chat_template_lexer.h"
#include "tokenizer/chat_template_parser.h"
#include "tokenizer/chat_template_render.h"

namespace unmask {

using chat_template_internal::Lex;
using chat_template_internal::Node;
using chat_template_internal::NormalizeSource;
using chat_template_internal::ParseTemplate;
using chat_template_internal::Renderer;
using chat_template_internal::Segment;

struct ChatTemplate::Impl {
  std::vector<Node> nodes;
};

ChatTemplate::ChatTemplate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

StatusOr<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  const std::string normalized = NormalizeSource(source);
  UNMASK_ASSIGN_OR_RETURN(std::vector<Segment> segments, Lex(normalized));
  auto impl = std::make_unique<Impl>();
  UNMASK_ASSIGN_OR_RETURN(impl->nodes, ParseTemplate(std::move(segments)));
  return ChatTemplate(std::move(impl));
}

StatusOr<std::string> ChatTemplate::Render(const ChatTemplateInputs& inputs) const {
  Renderer renderer(inputs);
  return renderer.Run(impl_->nodes);
}

StatusOr<std::string> RenderChatTemplate(std::string_view source,
                                         const ChatTemplateInputs& inputs) {
  UNMASK_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::Parse(source));
  return tmpl.Render(inputs);
}

}  // namespace unmask
