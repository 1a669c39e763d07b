// Tool calling (OpenAI `tools` / `tool_choice`) for chat models: how the tools reach the prompt,
// which grammar forces a call when the client requires one, and how the model's reply is parsed
// back into `tool_calls`.
//
// Two formats, chosen from the chat template:
//   kHermes  - the template renders a `tools` variable and writes calls as
//              <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//              (Hermes 2 Pro, Qwen2 / Qwen2.5 / Qwen3 and the templates derived from them; the
//              format vLLM's `hermes` parser and llama.cpp's Hermes handler read). The tools go to
//              the template; the reply is free text unless a call is required.
//   kGeneric - any other template (SmolLM2's ChatML, Llama 2, the twins' none): the tools are
//              described in a system message and the reply is forced, by grammar, to be one JSON
//              object, {"tool_calls": [{"name", "arguments"}, ...]} or {"response": "..."}
//              (llama.cpp's "generic" tool-call handling follows the same idea).
// Llama 3.1 / 3.2's own JSON format and Mistral's [TOOL_CALLS] are not recognised: such templates
// use kGeneric (the tools are then described in the system message, not by the template).
#ifndef UNMASK_CHAT_TOOL_CALLS_H_
#define UNMASK_CHAT_TOOL_CALLS_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace unmask::chat {

// One function the client offers: OpenAI's {"type": "function", "function": {name, description,
// parameters}}. `parameters` is a JSON schema of the arguments object ({} when absent: no
// arguments).
struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
};

// OpenAI's tool_choice: "none" (no call; the tools are left out of the prompt), "auto" (the model
// decides), "required" (at least one call), or {"type": "function", "function": {"name"}}.
enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ToolRequest {
  std::vector<ToolSpec> tools;
  ToolChoice choice = ToolChoice::kAuto;
  std::string named;     // kNamed: the function to call
  bool parallel = true;  // parallel_tool_calls: several calls in one reply
};

enum class ToolCallFormat { kHermes, kGeneric };

// "hermes" | "generic".
const char* ToolCallFormatName(ToolCallFormat f);

// kHermes when the template both reads `tools` and writes "<tool_call>", else kGeneric.
ToolCallFormat DetectToolCallFormat(std::string_view chat_template);

// The `tools` variable of a chat template: the OpenAI tool objects as a JSON array text.
std::string ToolsJson(const ToolRequest& request);

// kGeneric, with or without tools: earlier assistant tool calls written as the JSON object the
// model is asked for (after the text the assistant wrote with them), tool results as user messages
// {"tool_response": {"content", "tool_call_id", "name"}}, other messages as they are (their role
// and content).
std::vector<ChatMessage> ReplayToolHistory(std::span<const ChatMessage> messages);
// True when a message is a tool result or carries tool calls.
bool HasToolHistory(std::span<const ChatMessage> messages);

// kGeneric: ReplayToolHistory with the tool instructions added (to the first system message, or
// as a new one before the others).
std::vector<ChatMessage> GenericToolMessages(std::span<const ChatMessage> messages,
                                             const ToolRequest& request);

// The GBNF grammar the reply must follow, "" when it is free (kHermes with tool_choice auto, or
// tool_choice none). Errors: InvalidArgument naming the tool whose `parameters` the JSON-schema
// compiler refuses (src/grammar/json_schema.h lists what it supports), or when two tools define
// the same $defs name differently.
StatusOr<std::string> ToolCallGrammar(ToolCallFormat format, const ToolRequest& request);

// One call parsed from a reply. `arguments` is compact JSON text (OpenAI sends a string).
struct ParsedToolCall {
  std::string name;
  std::string arguments;
};

struct ParsedReply {
  std::string content;  // the text that is not a call (trimmed when there are calls)
  std::vector<ParsedToolCall> calls;
};

// Parses a finished reply. kHermes: every <tool_call>...</tool_call> block (the closing tag may be
// missing at the end) holding {"name", "arguments"} with a known tool's name becomes a call; other
// text, and blocks that do not parse, stay content. kGeneric: the JSON object's tool_calls or
// response; text that is not such an object (a reply cut by max_tokens) stays content as is.
ParsedReply ParseToolCalls(ToolCallFormat format, std::string_view text,
                           const ToolRequest& request);

// Streaming: how many leading bytes of a partial reply are content whatever follows (kHermes: up
// to the first "<tool_call>", holding back a tail that may begin one; kGeneric: none, the JSON
// object is returned whole at the end).
size_t StreamableContentLength(ToolCallFormat format, std::string_view text);

}  // namespace unmask::chat

#endif  // UNMASK_CHAT_TOOL_CALLS_H_
