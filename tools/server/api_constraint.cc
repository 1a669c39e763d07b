#include "server/api_constraint.h"

#include <vector>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"

namespace unmask::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Compiles `gbnf` into the constraint; a parse error is the client's (their grammar) or ours (a
// compiled schema: unreachable, still a clear 400).
std::optional<ApiError> Compile(const std::string& gbnf, const std::string& field,
                                const std::string& kind, std::optional<OutputConstraint>* out) {
  auto g = grammar::ParseGbnf(gbnf);
  if (!g.ok()) return Bad(field, "'" + field + "': " + g.status().message());
  *out =
      OutputConstraint{std::make_shared<const grammar::Grammar>(std::move(g).value()), field, kind};
  return std::nullopt;
}

std::optional<ApiError> FromSchema(const ordered_json& schema, const std::string& field,
                                   std::optional<OutputConstraint>* out) {
  if (!schema.is_object() && !schema.is_boolean()) {
    return Bad(field, "'" + field + "' must be a JSON schema (an object)");
  }
  auto compiled = grammar::CompileJsonSchema(schema);
  if (!compiled.ok()) return Unsupported(field, "'" + field + "': " + compiled.status().message());
  *out = OutputConstraint{std::make_shared<const grammar::Grammar>(std::move(compiled->grammar)),
                          field, "json_schema"};
  return std::nullopt;
}

std::optional<ApiError> UnknownKeys(const ordered_json& object, const std::string& where,
                                    const std::vector<std::string>& keys) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const std::string& k : keys) known = known || k == key;
    if (!known) {
      std::string list;
      for (const std::string& k : keys) list += (list.empty() ? "" : ", ") + k;
      return Unsupported(where + "." + key,
                         "unknown field '" + key + "' in '" + where + "' (accepted: " + list + ")",
                         "unknown_parameter");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ReadResponseFormat(const ordered_json& rf,
                                           std::optional<OutputConstraint>* out) {
  const std::string field = "response_format";
  if (!rf.is_object() || !rf.contains("type") || !rf.at("type").is_string()) {
    return Bad(field, "'response_format' must be an object with a string 'type'");
  }
  const std::string type = rf.at("type").get<std::string>();
  if (type == "text") {
    if (auto e = UnknownKeys(rf, field, {"type"})) return e;
    return std::nullopt;
  }
  if (type == "json_object") {
    if (auto e = UnknownKeys(rf, field, {"type", "schema"})) return e;
    if (rf.contains("schema") && !rf.at("schema").is_null()) {
      return FromSchema(rf.at("schema"), field, out);
    }
    return Compile(grammar::JsonObjectGbnf(), field, "json_object", out);
  }
  if (type == "json_schema") {
    if (auto e = UnknownKeys(rf, field, {"type", "json_schema"})) return e;
    const std::string where = field + ".json_schema";
    if (!rf.contains("json_schema") || !rf.at("json_schema").is_object()) {
      return Bad(where, "'response_format' type json_schema needs a 'json_schema' object");
    }
    const ordered_json& js = rf.at("json_schema");
    if (auto e = UnknownKeys(js, where, {"name", "description", "schema", "strict"})) return e;
    if (js.contains("name") && !js.at("name").is_string()) {
      return Bad(where + ".name", "'" + where + ".name' must be a string");
    }
    if (js.contains("strict") && !js.at("strict").is_boolean() && !js.at("strict").is_null()) {
      return Bad(where + ".strict", "'" + where + ".strict' must be a boolean");
    }
    if (!js.contains("schema")) {
      return Bad(where + ".schema", "'" + where + "' needs a 'schema'");
    }
    auto e = FromSchema(js.at("schema"), field, out);
    if (e && e->param == field) e->param = where + ".schema";
    return e;
  }
  return Bad(field,
             "'response_format' type must be text, json_object or json_schema, got '" + type + "'");
}

}  // namespace

std::optional<ApiError> ReadOutputConstraint(const std::string& body, const json& j,
                                             std::optional<OutputConstraint>* out) {
  static const char* const kFields[] = {"response_format", "json_schema",    "guided_json",
                                        "grammar",         "guided_grammar", "guided_choice",
                                        "guided_regex"};
  std::string given;
  for (const char* f : kFields) {
    auto it = j.find(f);
    if (it == j.end() || it->is_null()) continue;
    if (std::string(f) == "response_format" && it->is_object() && it->contains("type") &&
        it->at("type") == "text") {
      continue;  // plain text: no constraint, compatible with the others
    }
    if (!given.empty()) {
      return Bad(f, "'" + given + "' and '" + f +
                        "' both constrain the output: give one structured-output field");
    }
    given = f;
  }
  if (auto it = j.find("guided_whitespace_pattern"); it != j.end() && !it->is_null()) {
    return Unsupported("guided_whitespace_pattern",
                       "'guided_whitespace_pattern' is not supported (schemas allow short runs "
                       "of spaces, tabs and newlines between tokens)");
  }
  if (auto it = j.find("guided_decoding_backend"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) {
      return Bad("guided_decoding_backend", "'guided_decoding_backend' must be a string");
    }
  }
  if (given.empty()) {
    if (auto it = j.find("response_format"); it != j.end() && !it->is_null()) {
      return ReadResponseFormat(ordered_json::parse(it->dump()), out);  // type text
    }
    return std::nullopt;
  }
  if (given == "guided_regex") {
    return Unsupported("guided_regex",
                       "'guided_regex' (regular-expression constraints) is not supported; "
                       "'guided_grammar' takes a GBNF grammar, 'guided_json' a JSON schema");
  }
  const json& v = j.at(given);
  if (given == "grammar" || given == "guided_grammar") {
    if (!v.is_string() || v.get<std::string>().empty()) {
      return Bad(given, "'" + given + "' must be a non-empty GBNF grammar (a string)");
    }
    return Compile(v.get<std::string>(), given, "grammar", out);
  }
  if (given == "guided_choice") {
    std::vector<std::string> choices;
    if (!v.is_array() || v.empty()) {
      return Bad(given, "'guided_choice' must be a non-empty array of strings");
    }
    for (const json& c : v) {
      if (!c.is_string() || c.get<std::string>().empty()) {
        return Bad(given, "'guided_choice' must be a non-empty array of non-empty strings");
      }
      choices.push_back(c.get<std::string>());
    }
    auto gbnf = grammar::ChoiceGbnf(choices);
    if (!gbnf.ok()) return Bad(given, "'guided_choice': " + gbnf.status().message());
    return Compile(*gbnf, given, "choice", out);
  }
  // Schemas: re-read with the body's key order (nlohmann::json sorts keys).
  const ordered_json ordered = ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!ordered.is_object() || !ordered.contains(given)) {
    return Bad(given, "'" + given + "' could not be re-read");  // unreachable: `j` parsed
  }
  const ordered_json& ov = ordered.at(given);
  if (given == "response_format") return ReadResponseFormat(ov, out);
  if (given == "guided_json" && ov.is_string()) {
    const ordered_json schema =
        ordered_json::parse(ov.get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) {
      return Bad(given,
                 "'guided_json' is a string that is not JSON (give the schema as an "
                 "object or as its JSON text)");
    }
    return FromSchema(schema, given, out);
  }
  return FromSchema(ov, given, out);
}

}  // namespace unmask::server
