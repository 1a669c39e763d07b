// Tool calling fields of a chat request: `tools`, `tool_choice`, `parallel_tool_calls`, and the
// tool fields of messages (an assistant's `tool_calls`, a tool message's `tool_call_id`).
#ifndef UNMASK_TOOLS_SERVER_API_TOOLS_H_
#define UNMASK_TOOLS_SERVER_API_TOOLS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/tool_calls.h"
#include "server/api_request.h"

namespace unmask::server {

// Reads tools / tool_choice / parallel_tool_calls of body `j` (on /v1/completions only their
// neutral values: no tools, tool_choice none or auto) (parsed from `body`, which is parsed
// once more keeping key order, for the parameters' schemas) into *out (nullopt: no tools, an
// empty list, or tool_choice "none"). Errors (400 naming the field): tools on /v1/completions,
// a tool that is not {"type": "function", "function": {"name", "description"?, "parameters"?,
// "strict"?}} or has an unknown key, a name outside [A-Za-z0-9_-]{1,64}, two tools with one name,
// parameters that are not an object, a tool_choice that is not none / auto / required /
// {"type": "function", "function": {"name"}}, a named or required choice without tools, a named
// tool that is not in the list.
std::optional<ApiError> ReadTools(const std::string& body, const nlohmann::json& j, bool chat,
                                  std::optional<chat::ToolRequest>* out);

// Reads the tool fields of message `m` (`where`: "messages[i]") into *msg: an assistant's
// tool_calls ([{"id", "type": "function", "function": {"name", "arguments": JSON text}}]), a tool
// message's tool_call_id and a name. Errors: 400 for a malformed call, tool_calls on another
// role, arguments that are not JSON object text, or an unknown key in the message (with the
// closest accepted one); OpenAI's response-only keys (refusal, annotations, audio,
// function_call) are accepted when null or empty, so a client may send back the message it got.
std::optional<ApiError> ReadMessageTools(const nlohmann::json& m, const std::string& where,
                                         ChatMessage* msg);

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_API_TOOLS_H_
