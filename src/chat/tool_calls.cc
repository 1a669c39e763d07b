// Tool calling formats: prompt, grammar and reply parsing (see tool_calls.h).
#include "chat/tool_calls.h"

#include <cctype>
#include <string>
#include <utility>

#include "format/json_scan.h"
#include "grammar/json_schema.h"

namespace unmask::chat {

using ojson = nlohmann::ordered_json;

namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
// parallel_tool_calls: at most this many calls per reply (a small model may repeat one call
// until max_tokens or the context).
constexpr int kMaxCallsPerReply = 8;

std::string Trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string Dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

const ToolSpec* FindTool(const ToolRequest& request, std::string_view name) {
  for (const ToolSpec& t : request.tools) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// The tools a reply may call: all of them, or the named one.
std::vector<const ToolSpec*> Callable(const ToolRequest& request) {
  std::vector<const ToolSpec*> out;
  for (const ToolSpec& t : request.tools) {
    if (request.choice != ToolChoice::kNamed || t.name == request.named) out.push_back(&t);
  }
  return out;
}

// `j` with every local $ref ("#", "#/...") moved under `base` (the JSON pointer where `j` now
// sits in the composed schema), so that references into the parameters still resolve.
ojson Rebase(const ojson& j, const std::string& base) {
  if (j.is_array()) {
    ojson out = ojson::array();
    for (const ojson& item : j) out.push_back(Rebase(item, base));
    return out;
  }
  if (!j.is_object()) return j;
  ojson out = ojson::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "$ref" && it.value().is_string()) {
      const std::string ref = it.value().get<std::string>();
      out[it.key()] = !ref.empty() && ref[0] == '#' ? base + ref.substr(1) : ref;
    } else {
      out[it.key()] = Rebase(it.value(), base);
    }
  }
  return out;
}

// The schema of one call {"name": <const>, "arguments": <parameters>}; the parameters go to
// `defs` as "unmask-tool-<index>" (the composed schema's $defs) with their references rebased, so
// that "#/$defs/...", "#/properties/..." and "#" inside them keep their meaning.
StatusOr<ojson> CallSchema(const ToolSpec& tool, size_t index, ojson* defs) {
  ojson params = tool.parameters.is_object() && !tool.parameters.empty()
                     ? tool.parameters
                     : ojson{{"type", "object"}, {"properties", ojson::object()}};
  if (!params.contains("type")) params["type"] = "object";
  if (params["type"] != "object") {
    return InvalidArgumentError("tool '" + tool.name +
                                "': parameters must be an object schema (\"type\": \"object\"), "
                                "got type " +
                                params["type"].dump());
  }
  const std::string key = "unmask-tool-" + std::to_string(index);
  (*defs)[key] = Rebase(params, "#/$defs/" + key);
  return ojson{{"type", "object"},
               {"properties",
                {{"name", {{"const", tool.name}}}, {"arguments", {{"$ref", "#/$defs/" + key}}}}},
               {"required", {"name", "arguments"}}};
}

// The schema of one call to any callable tool (with the moved $defs at its root).
StatusOr<ojson> AnyCallSchema(const ToolRequest& request, ojson* defs) {
  ojson branches = ojson::array();
  for (const ToolSpec* t : Callable(request)) {
    const auto index = static_cast<size_t>(t - request.tools.data());
    UNMASK_ASSIGN_OR_RETURN(ojson s, CallSchema(*t, index, defs));
    branches.push_back(std::move(s));
  }
  if (branches.empty()) return InvalidArgumentError("no tool named '" + request.named + "'");
  if (branches.size() == 1) return branches[0];
  return ojson{{"anyOf", branches}};
}

// Compiles `schema` (with `defs` at its root) and names its rule `rule` instead of root. The
// compiler writes its root rule first as "root ::= ..." and never refers to it by name.
StatusOr<std::string> SchemaRule(ojson schema, const ojson& defs, const std::string& rule,
                                 const std::string& tool_hint) {
  schema["$defs"] = defs;
  auto gbnf = grammar::JsonSchemaToGbnf(schema);
  if (!gbnf.ok()) {
    return InvalidArgumentError("the parameters of " + tool_hint +
                                " cannot be turned into a grammar: " + gbnf.status().message());
  }
  std::string text = *std::move(gbnf);
  if (text.rfind("root ::= ", 0) == 0) text = rule + " ::= " + text.substr(9);
  return text;
}

std::string ToolHint(const ToolRequest& request) {
  if (request.choice == ToolChoice::kNamed) return "tool '" + request.named + "'";
  return request.tools.size() == 1 ? "tool '" + request.tools[0].name + "'" : "a tool";
}

// One call as OpenAI's tool object.
ojson ToolObject(const ToolSpec& t) {
  ojson function = {{"name", t.name}};
  if (!t.description.empty()) function["description"] = t.description;
  function["parameters"] = t.parameters.is_object() && !t.parameters.empty()
                               ? t.parameters
                               : ojson{{"type", "object"}, {"properties", ojson::object()}};
  return ojson{{"type", "function"}, {"function", function}};
}

// Arguments as compact JSON text: an object, or a string that holds one.
bool ArgumentsText(const ojson& a, std::string* out) {
  if (a.is_object()) {
    *out = Dump(a);
    return true;
  }
  if (a.is_string()) {
    const ojson inner = ojson::parse(a.get<std::string>(), nullptr, false);
    if (inner.is_object()) {
      *out = Dump(inner);
      return true;
    }
  }
  return false;
}

// {"name": known tool, "arguments": object} -> a call.
bool ReadCall(const ojson& j, const ToolRequest& request, ParsedToolCall* call) {
  if (!j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return false;
  if (FindTool(request, name->get<std::string>()) == nullptr) return false;
  call->name = name->get<std::string>();
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");  // Llama 3's spelling
  if (args == j.end() || args->is_null()) {
    call->arguments = "{}";
    return true;
  }
  return ArgumentsText(*args, &call->arguments);
}

// The end (one past the closing brace) of the JSON object starting, after whitespace, at `from`,
// or npos when there is none.
size_t JsonObjectEnd(std::string_view text, size_t from) {
  size_t i = from;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i >= text.size() || text[i] != '{') return std::string_view::npos;
  return format::ScanJsonBrackets(text, i).first_value_end;
}

// `text` = {"tool_calls": [call, call, ... (cut): appends the complete, known calls to *calls and
// returns where the text stops being complete calls (0 when it is not such a prefix).
size_t CompleteCallsPrefix(std::string_view text, const ToolRequest& request,
                           std::vector<ParsedToolCall>* calls) {
  size_t i = 0;
  const auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  const auto expect = [&](std::string_view s) {
    skip_space();
    if (text.substr(i, s.size()) != s) return false;
    i += s.size();
    return true;
  };
  if (!expect("{") || !expect("\"tool_calls\"") || !expect(":") || !expect("[")) return 0;
  std::vector<ParsedToolCall> found;
  for (;;) {
    skip_space();
    const size_t close = JsonObjectEnd(text, i);
    if (close == std::string_view::npos) break;
    ParsedToolCall call;
    if (!ReadCall(ojson::parse(text.substr(i, close - i), nullptr, false), request, &call)) break;
    if (request.parallel || found.empty()) found.push_back(std::move(call));
    i = close;
    if (!expect(",")) break;
  }
  if (found.empty()) return 0;
  for (auto& c : found) calls->push_back(std::move(c));
  // What follows the last complete call (a separator, the cut object) is not content.
  return text.size();
}

}  // namespace

const char* ToolCallFormatName(ToolCallFormat f) {
  return f == ToolCallFormat::kHermes ? "hermes" : "generic";
}

ToolCallFormat DetectToolCallFormat(std::string_view chat_template) {
  const bool reads_tools = chat_template.find("tools") != std::string_view::npos;
  const bool writes_calls = chat_template.find(kOpen) != std::string_view::npos;
  return reads_tools && writes_calls ? ToolCallFormat::kHermes : ToolCallFormat::kGeneric;
}

std::string ToolsJson(const ToolRequest& request) {
  ojson tools = ojson::array();
  for (const ToolSpec& t : request.tools) tools.push_back(ToolObject(t));
  return Dump(tools);
}

std::vector<ChatMessage> ReplayToolHistory(std::span<const ChatMessage> messages) {
  std::vector<ChatMessage> out;
  std::vector<std::pair<std::string, std::string>> call_names;  // (id, name) of earlier calls
  for (const ChatMessage& m : messages) {
    for (const ChatToolCall& c : m.tool_calls) call_names.emplace_back(c.id, c.name);
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      ojson calls = ojson::array();
      for (const ChatToolCall& c : m.tool_calls) {
        ojson args = ojson::parse(c.arguments, nullptr, false);
        calls.push_back(
            {{"name", c.name}, {"arguments", args.is_discarded() ? ojson(c.arguments) : args}});
      }
      // The text the assistant wrote with its calls comes first.
      out.push_back(ChatMessage{"assistant", (m.content.empty() ? "" : m.content + "\n") +
                                                 Dump(ojson{{"tool_calls", calls}})});
    } else if (m.role == "tool") {
      // The tool's name (given, or that of the call answered) and its result, as JSON when it is.
      std::string name = m.name;
      for (const auto& [id, n] : call_names) {
        if (name.empty() && !id.empty() && id == m.tool_call_id) name = n;
      }
      ojson response = ojson::object();
      if (!name.empty()) response["name"] = name;
      if (!m.tool_call_id.empty()) response["tool_call_id"] = m.tool_call_id;
      const ojson parsed = ojson::parse(m.content, nullptr, false);
      response["content"] = parsed.is_discarded() ? ojson(m.content) : parsed;
      out.push_back(ChatMessage{"user", Dump(ojson{{"tool_response", response}})});
    } else {
      out.push_back(ChatMessage{m.role, m.content});
    }
  }
  return out;
}

bool HasToolHistory(std::span<const ChatMessage> messages) {
  for (const ChatMessage& m : messages) {
    if (m.role == "tool" || !m.tool_calls.empty()) return true;
  }
  return false;
}

std::vector<ChatMessage> GenericToolMessages(std::span<const ChatMessage> messages,
                                             const ToolRequest& request) {
  std::string tools;
  for (const ToolSpec& t : request.tools) tools += Dump(ToolObject(t)["function"]) + "\n";
  const bool may_answer =
      request.choice != ToolChoice::kRequired && request.choice != ToolChoice::kNamed;
  std::string text = "Tools (name, description, JSON schema of the arguments):\n" + tools +
                     "Reply with one JSON object only: {\"tool_calls\": [{\"name\": ..., "
                     "\"arguments\": {...}}" +
                     (request.parallel ? ", ...]}" : "]}") + " to call " +
                     (request.parallel ? "tools" : "one tool") +
                     (may_answer ? ", or {\"response\": \"...\"} to answer." : ".");
  if (request.choice == ToolChoice::kNamed) text += " Call " + request.named + ".";
  std::vector<ChatMessage> out = ReplayToolHistory(messages);
  if (!out.empty() && (out[0].role == "system" || out[0].role == "developer")) {
    out[0].content += (out[0].content.empty() ? "" : "\n\n") + text;
  } else {
    out.insert(out.begin(), ChatMessage{"system", text});
  }
  return out;
}

StatusOr<std::string> ToolCallGrammar(ToolCallFormat format, const ToolRequest& request) {
  if (request.choice == ToolChoice::kNone) return std::string();
  const bool must_call =
      request.choice == ToolChoice::kRequired || request.choice == ToolChoice::kNamed;
  if (format == ToolCallFormat::kHermes && !must_call) return std::string();
  ojson defs = ojson::object();
  UNMASK_ASSIGN_OR_RETURN(ojson call, AnyCallSchema(request, &defs));
  const std::string hint = ToolHint(request);
  if (format == ToolCallFormat::kHermes) {
    UNMASK_ASSIGN_OR_RETURN(std::string rule, SchemaRule(call, defs, "tool-call-json", hint));
    std::string root = "root ::= tool-call-block";
    if (request.parallel) {
      root += " (\"\\n\" tool-call-block){0," + std::to_string(kMaxCallsPerReply - 1) + "}";
    }
    return root + "\ntool-call-block ::= " + grammar::GbnfLiteral(std::string(kOpen) + "\n") +
           " tool-call-json " + grammar::GbnfLiteral("\n" + std::string(kClose)) + "\n" + rule;
  }
  ojson calls = {{"type", "array"},
                 {"items", call},
                 {"minItems", 1},
                 {"maxItems", request.parallel ? kMaxCallsPerReply : 1}};
  ojson with_calls = {
      {"type", "object"}, {"properties", {{"tool_calls", calls}}}, {"required", {"tool_calls"}}};
  ojson schema = with_calls;
  if (!must_call) {
    ojson answer = {{"type", "object"},
                    {"properties", {{"response", {{"type", "string"}}}}},
                    {"required", {"response"}}};
    schema = ojson{{"anyOf", {with_calls, answer}}};
  }
  return SchemaRule(schema, defs, "root", hint);
}

ParsedReply ParseToolCalls(ToolCallFormat format, std::string_view text,
                           const ToolRequest& request) {
  ParsedReply reply;
  if (format == ToolCallFormat::kGeneric) {
    const ojson j = ojson::parse(text, nullptr, false);
    if (j.is_object()) {
      if (auto calls = j.find("tool_calls"); calls != j.end() && calls->is_array()) {
        for (const ojson& c : *calls) {
          ParsedToolCall call;
          if (ReadCall(c, request, &call) && (request.parallel || reply.calls.empty())) {
            reply.calls.push_back(std::move(call));
          }
        }
        if (!reply.calls.empty()) return reply;
      }
      if (auto r = j.find("response"); r != j.end() && r->is_string()) {
        reply.content = r->get<std::string>();
        return reply;
      }
    }
    // Cut by max_tokens inside {"tool_calls": [...]}: the calls completed before the cut, the
    // rest as text (as the Hermes form returns them).
    size_t at = CompleteCallsPrefix(text, request, &reply.calls);
    reply.content = std::string(text.substr(at));
    return reply;
  }
  size_t pos = 0;
  std::string content;
  while (pos < text.size()) {
    const size_t open = text.find(kOpen, pos);
    if (open == std::string_view::npos) {
      content += text.substr(pos);
      break;
    }
    content += text.substr(pos, open - pos);
    // The call's JSON object ends where its braces balance (a "</tool_call>" inside one of its
    // strings is text); then the closing tag, which may be missing at the end of the reply.
    const size_t body = open + kOpen.size();
    size_t next = std::string_view::npos;
    ParsedToolCall call;
    const size_t json_end = JsonObjectEnd(text, body);
    if (json_end != std::string_view::npos &&
        ReadCall(ojson::parse(text.substr(body, json_end - body), nullptr, false), request,
                 &call)) {
      size_t after = json_end;
      while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
      if (after == text.size()) {
        next = after;
      } else if (text.substr(after, kClose.size()) == kClose) {
        next = after + kClose.size();
      }
    }
    if (next != std::string_view::npos) {
      // parallel_tool_calls false: the first call only.
      if (request.parallel || reply.calls.empty()) reply.calls.push_back(std::move(call));
    } else {
      const size_t close = text.find(kClose, body);
      next = close == std::string_view::npos ? text.size() : close + kClose.size();
      content += text.substr(open, next - open);  // not a call: it stays text
    }
    pos = next;
  }
  reply.content = reply.calls.empty() ? content : Trim(content);
  return reply;
}

size_t StreamableContentLength(ToolCallFormat format, std::string_view text) {
  if (format == ToolCallFormat::kGeneric) return 0;
  const size_t open = text.find(kOpen);
  if (open != std::string_view::npos) return open;
  // Hold back a tail that may be the start of "<tool_call>".
  for (size_t keep = std::min(text.size(), kOpen.size() - 1); keep > 0; --keep) {
    if (text.substr(text.size() - keep) == kOpen.substr(0, keep)) return text.size() - keep;
  }
  return text.size();
}

}  // namespace unmask::chat
