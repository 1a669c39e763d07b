#include "server/api_tools.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/suggest.h"

namespace unmask::server {

using nlohmann::json;

namespace {

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// An unknown key of object `o` (at `where`), with the closest of `known`; nullopt when none.
std::optional<ApiError> UnknownKey(const json& o, const std::string& where,
                                   const std::vector<std::string>& known) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
    const std::string close = tools::ClosestName(it.key(), known);
    return Unsupported(where + "." + it.key(),
                       "unknown key '" + it.key() + "' in " + where +
                           (close.empty() ? "" : " (did you mean '" + close + "'?)"),
                       "unknown_parameter");
  }
  return std::nullopt;
}

std::optional<ApiError> ReadTool(const json& t, const nlohmann::ordered_json& ordered,
                                 const std::string& where, chat::ToolSpec* spec) {
  if (!t.is_object()) return Bad(where, where + " must be an object");
  if (auto e = UnknownKey(t, where, {"type", "function"})) return e;
  auto type = t.find("type");
  if (type == t.end() || *type != "function") {
    return Unsupported(where + ".type",
                       where + ".type must be \"function\" (the only tool type served)");
  }
  auto f = t.find("function");
  if (f == t.end() || !f->is_object()) {
    return Bad(where + ".function", where + ".function must be an object");
  }
  const std::string fw = where + ".function";
  if (auto e = UnknownKey(*f, fw, {"name", "description", "parameters", "strict"})) return e;
  auto name = f->find("name");
  if (name == f->end() || !name->is_string() || !ValidName(name->get<std::string>())) {
    return Bad(fw + ".name", fw + ".name must be a string of 1-64 letters, digits, '_' or '-'");
  }
  spec->name = name->get<std::string>();
  if (auto d = f->find("description"); d != f->end() && !d->is_null()) {
    if (!d->is_string()) return Bad(fw + ".description", fw + ".description must be a string");
    spec->description = d->get<std::string>();
  }
  if (auto p = f->find("parameters"); p != f->end() && !p->is_null()) {
    if (!p->is_object()) {
      return Bad(fw + ".parameters", fw + ".parameters must be a JSON schema object");
    }
    if (p->contains("type") && p->at("type") != "object") {
      return Bad(fw + ".parameters",
                 fw + ".parameters must describe an object (\"type\": \"object\"): a call's "
                      "arguments are a JSON object");
    }
    // Key order matters (the arguments are generated in declaration order): the body's own
    // order, from its ordered parse.
    spec->parameters = ordered.at("function").at("parameters");
  }
  if (auto s = f->find("strict"); s != f->end() && !s->is_null() && !s->is_boolean()) {
    return Bad(fw + ".strict", fw + ".strict must be a boolean");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ReadTools(const std::string& body, const json& j, bool chat,
                                  std::optional<chat::ToolRequest>* out) {
  chat::ToolRequest request;
  auto tools = j.find("tools");
  const bool has_tools = tools != j.end() && !tools->is_null();
  if (has_tools) {
    if (!tools->is_array()) return Bad("tools", "'tools' must be an array");
    if (!chat && !tools->empty()) {
      return Unsupported("tools", "'tools' is a chat field: send it to /v1/chat/completions");
    }
    std::set<std::string> names;
    const auto ordered = nlohmann::ordered_json::parse(body, nullptr, false);
    for (size_t i = 0; i < tools->size(); ++i) {
      chat::ToolSpec spec;
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (auto e = ReadTool((*tools)[i], ordered.at("tools").at(i), where, &spec)) return e;
      if (!names.insert(spec.name).second) {
        return Bad(where + ".function.name", "two tools are named '" + spec.name + "'");
      }
      request.tools.push_back(std::move(spec));
    }
  }
  if (auto c = j.find("tool_choice"); c != j.end() && !c->is_null()) {
    if (c->is_object()) {
      if (auto e = UnknownKey(*c, "tool_choice", {"type", "function"})) return e;
      if (c->contains("function") && c->at("function").is_object()) {
        if (auto e = UnknownKey(c->at("function"), "tool_choice.function", {"name"})) return e;
      }
    }
    if (c->is_string()) {
      const std::string s = c->get<std::string>();
      if (s == "none") {
        request.choice = chat::ToolChoice::kNone;
      } else if (s == "auto") {
        request.choice = chat::ToolChoice::kAuto;
      } else if (s == "required") {
        request.choice = chat::ToolChoice::kRequired;
      } else {
        return Bad("tool_choice",
                   "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
                   "\"function\", \"function\": {\"name\": ...}}, got \"" +
                       s + "\"");
      }
    } else if (c->is_object() && c->value("type", json()) == "function" &&
               c->contains("function") && (*c)["function"].is_object() &&
               (*c)["function"].contains("name") && (*c)["function"]["name"].is_string()) {
      request.choice = chat::ToolChoice::kNamed;
      request.named = (*c)["function"]["name"].get<std::string>();
    } else {
      return Bad("tool_choice",
                 "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
                 "\"function\", \"function\": {\"name\": ...}}");
    }
    const bool needs_tools =
        request.choice == chat::ToolChoice::kRequired || request.choice == chat::ToolChoice::kNamed;
    if (needs_tools && !chat) {
      return Unsupported("tool_choice",
                         "'tool_choice' is a chat field: send it to /v1/chat/completions");
    }
    if (needs_tools && request.tools.empty()) {
      return Bad("tool_choice", "'tool_choice' requires a tool call but 'tools' is empty");
    }
    if (request.choice == chat::ToolChoice::kNamed &&
        std::none_of(request.tools.begin(), request.tools.end(),
                     [&](const chat::ToolSpec& t) { return t.name == request.named; })) {
      return Bad("tool_choice", "'tool_choice' names the function '" + request.named +
                                    "', which is not in 'tools'");
    }
  }
  if (auto p = j.find("parallel_tool_calls"); p != j.end() && !p->is_null()) {
    if (!p->is_boolean()) {
      return Bad("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    }
    request.parallel = p->get<bool>();
  }
  if (request.tools.empty() || request.choice == chat::ToolChoice::kNone) {
    out->reset();
  } else {
    *out = std::move(request);
  }
  return std::nullopt;
}

std::optional<ApiError> ReadMessageTools(const json& m, const std::string& where,
                                         ChatMessage* msg) {
  static const std::vector<std::string> kKeys = {"role",        "content",      "name",
                                                 "tool_calls",  "tool_call_id", "refusal",
                                                 "annotations", "audio",        "function_call"};
  if (auto e = UnknownKey(m, where, kKeys)) return e;
  for (const char* key : {"refusal", "annotations", "audio", "function_call"}) {
    auto it = m.find(key);
    if (it == m.end() || it->is_null() || (it->is_array() && it->empty())) continue;
    return Unsupported(where + "." + key,
                       where + "." + key + " must be null or empty: it is a response field");
  }
  if (auto n = m.find("name"); n != m.end() && !n->is_null()) {
    if (!n->is_string()) return Bad(where + ".name", where + ".name must be a string");
    msg->name = n->get<std::string>();
  }
  if (auto id = m.find("tool_call_id"); id != m.end() && !id->is_null()) {
    if (!id->is_string()) {
      return Bad(where + ".tool_call_id", where + ".tool_call_id must be a string");
    }
    msg->tool_call_id = id->get<std::string>();
  }
  if (msg->role == "tool" && msg->tool_call_id.empty()) {
    return Bad(where + ".tool_call_id", where + " (role tool) needs a 'tool_call_id'");
  }
  if (msg->role != "tool" && !msg->tool_call_id.empty()) {
    return Bad(
        where + ".tool_call_id",
        where + ".tool_call_id: only tool messages answer a call (role '" + msg->role + "')");
  }
  auto calls = m.find("tool_calls");
  if (calls == m.end() || calls->is_null()) return std::nullopt;
  const std::string cw = where + ".tool_calls";
  if (!calls->is_array()) return Bad(cw, cw + " must be an array");
  if (msg->role != "assistant" && !calls->empty()) {
    return Bad(cw, cw + ": only assistant messages carry tool calls");
  }
  for (size_t i = 0; i < calls->size(); ++i) {
    const json& c = (*calls)[i];
    const std::string w = cw + "[" + std::to_string(i) + "]";
    if (!c.is_object()) return Bad(w, w + " must be an object");
    if (auto e = UnknownKey(c, w, {"id", "type", "function"})) return e;
    ChatToolCall call;
    if (auto id = c.find("id"); id != c.end() && !id->is_null()) {
      if (!id->is_string()) return Bad(w + ".id", w + ".id must be a string");
      call.id = id->get<std::string>();
    }
    if (auto t = c.find("type"); t != c.end() && !t->is_null() && *t != "function") {
      return Bad(w + ".type", w + ".type must be \"function\"");
    }
    auto f = c.find("function");
    if (f == c.end() || !f->is_object() || !f->contains("name") || !(*f)["name"].is_string()) {
      return Bad(w + ".function", w + ".function must be {\"name\": ..., \"arguments\": ...}");
    }
    if (auto e = UnknownKey(*f, w + ".function", {"name", "arguments"})) return e;
    call.name = (*f)["name"].get<std::string>();
    call.arguments = "{}";
    if (auto a = f->find("arguments"); a != f->end() && !a->is_null()) {
      if (!a->is_string()) {
        return Bad(w + ".function.arguments",
                   w + ".function.arguments must be a string (JSON text of an object)");
      }
      const json parsed = json::parse(a->get<std::string>(), nullptr, false);
      if (!parsed.is_object()) {
        return Bad(w + ".function.arguments",
                   w + ".function.arguments must be the JSON text of an object");
      }
      call.arguments = a->get<std::string>();
    }
    msg->tool_calls.push_back(std::move(call));
  }
  return std::nullopt;
}

}  // namespace unmask::server
