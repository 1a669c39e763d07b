// The chat-template renderer (Jinja subset) on fuzzed templates and messages: lexer, parser,
// evaluation (filters, tests, methods, loops, tojson, raise_exception) under a small step and
// output budget.
// Input: template, NUL, messages as a JSON array of {role, content, [name], [tool_call_id],
// [tool_calls]} [, NUL, tools JSON]. Messages that are not such JSON leave the list empty.
// Seeds: tests/data/chat_templates/*.jinja with the conversations of goldens.json
// (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string StringOr(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<unmask::ChatMessage> ReadMessages(std::string_view text) {
  std::vector<unmask::ChatMessage> messages;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return messages;
  for (const nlohmann::json& m : j) {
    if (!m.is_object()) continue;
    unmask::ChatMessage msg;
    msg.role = StringOr(m, "role");
    msg.content = StringOr(m, "content");
    msg.name = StringOr(m, "name");
    msg.tool_call_id = StringOr(m, "tool_call_id");
    auto calls = m.find("tool_calls");
    if (calls != m.end() && calls->is_array()) {
      for (const nlohmann::json& c : *calls) {
        if (!c.is_object()) continue;
        unmask::ChatToolCall call;
        call.id = StringOr(c, "id");
        auto f = c.find("function");
        if (f != c.end() && f->is_object()) {
          call.name = StringOr(*f, "name");
          call.arguments = StringOr(*f, "arguments");
        }
        msg.tool_calls.push_back(std::move(call));
      }
    }
    messages.push_back(std::move(msg));
  }
  return messages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask;
  const auto parts = fuzz::SplitNul(data, size, 3);
  auto tmpl = ChatTemplate::Parse(parts[0]);
  if (!tmpl.ok()) return 0;
  const std::vector<ChatMessage> messages =
      parts.size() > 1 ? ReadMessages(parts[1]) : std::vector<ChatMessage>{};
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = true;
  inputs.bos_token = "<s>";
  inputs.eos_token = "</s>";
  if (parts.size() > 2) inputs.tools_json = std::string(parts[2]);
  // A budget that keeps one input within milliseconds; the limits themselves are under test.
  inputs.max_steps = int64_t{1} << 16;
  inputs.max_output_bytes = size_t{1} << 20;
  auto out = tmpl->Render(inputs);
  if (out.ok() && out->size() > inputs.max_output_bytes) fuzz::Fail("output over its budget");
  return 0;
}
