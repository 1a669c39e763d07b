// Chat templates: a renderer for the subset of Jinja2 that Hugging Face chat templates use
// (tokenizer_config.json "chat_template", GGUF tokenizer.chat_template), enough for
// LLaDA-8B-Instruct, Llama-3 / Llama-3.1 / Llama-3.2-Instruct, Qwen2 / Qwen2.5-Instruct, Dream and
// SmolLM2 (ChatML).
//
// Environment as transformers renders chat templates (ImmutableSandboxedEnvironment with
// trim_blocks=True, lstrip_blocks=True, default Undefined, keep_trailing_newline=False): the first
// newline after a `%}` or `#}` is dropped, spaces/tabs before a `{%` / `{#` at the start of a line
// are dropped, one trailing newline of the template is dropped, and undefined values print as "".
//
// Supported:
//   text, {{ expr }}, {# comments #}, whitespace control {%- -%} {{- -}} {#- -#} and {%+ +%};
//   {% if %}/{% elif %}/{% else %}/{% endif %}; {% for x[, y] in expr [if cond] %}...{% else %}
//   {% endfor %} with loop.index0/index/revindex/revindex0/first/last/length/previtem/nextitem;
//   {% break %}, {% continue %}; {% set x = expr %} (also `set a, b = expr`);
//   literals: 'str' "str" (Python escapes), integers, true/false/none (any case), [lists],
//   {'dicts': ...}; operators: + - * // % ** ~, == != < > <= >=, in, not in, and, or, not,
//   `a if c else b`; a.b, a['b'], a[i], a[i:j:k]; tests `is [not] defined|undefined|none|string|
//   number|integer|boolean|mapping|iterable|sequence|true|false|even|odd|divisibleby(n)|eq(x)`;
//   filters trim, length/count, upper, lower, capitalize, title, first, last, join, default/d,
//   string, list, items, reverse, replace, safe; functions raise_exception(msg), range(...);
//   methods str.strip/lstrip/rstrip/upper/lower/title/capitalize/startswith/endswith/split/
//   replace/join, dict.get/items/keys/values.
//   floats (literals, arithmetic with ints, `/`), filters tojson (transformers' json.dumps with
//   indent and sort_keys), int, float; test float.
// Anything else (macros, namespace(), ...) is Unimplemented with the construct's
// name and its byte offset in the template (after newline normalisation); syntax errors are
// InvalidArgument with the offset. Rendering is bounded (evaluation steps, output size), so
// garbage templates fail with a status and never crash or loop forever.
#ifndef UNMASK_TOKENIZER_CHAT_TEMPLATE_H_
#define UNMASK_TOKENIZER_CHAT_TEMPLATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace unmask {

// Variables visible to a template: messages (list of {role, content} dicts, plus tool_calls,
// tool_call_id and name where a message has them), add_generation_prompt, bos_token, eos_token,
// and tools when given.
struct ChatTemplateInputs {
  std::span<const ChatMessage> messages;
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  // OpenAI tool objects as a JSON array text; "" leaves `tools` undefined. Text that is not a JSON
  // array makes Render fail with InvalidArgument.
  std::string tools_json;
  // Render budget: evaluation steps (one per statement, expression node and loop iteration) and
  // output bytes. Real chat templates need a few dozen steps per message.
  int64_t max_steps = int64_t{1} << 22;
  size_t max_output_bytes = size_t{16} << 20;
};

// A parsed template. Immutable; Render is const and thread-safe. Move-only.
class ChatTemplate {
 public:
  // Parses `source`. InvalidArgument for malformed syntax, Unimplemented for Jinja constructs
  // outside the subset (both with the byte offset).
  static StatusOr<ChatTemplate> Parse(std::string_view source);

  // Renders the template. Errors: InvalidArgument carrying the message of raise_exception(...) or
  // describing a type error (e.g. 'str' + 'int', attribute of an undefined value);
  // Unimplemented for an unsupported filter/test/function/method reached at run time;
  // ResourceExhausted past inputs.max_steps or inputs.max_output_bytes.
  StatusOr<std::string> Render(const ChatTemplateInputs& inputs) const;

  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  struct Impl;

 private:
  explicit ChatTemplate(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Parse + Render in one call.
StatusOr<std::string> RenderChatTemplate(std::string_view source, const ChatTemplateInputs& inputs);

}  // namespace unmask

#endif  // UNMASK_TOKENIZER_CHAT_TEMPLATE_H_
