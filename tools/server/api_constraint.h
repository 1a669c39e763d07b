// Structured-output request fields -> the grammar the AR decoder is constrained by
// (docs/serving.md "Structured output"). Exactly one of:
//   response_format {"type": "json_object"}                      any JSON object (OpenAI JSON mode;
//                                                                 with "schema": that schema, as
//                                                                 llama-server reads it)
//   response_format {"type": "json_schema", "json_schema":
//                    {"name": ..., "schema": {...}, "strict": ...}}  OpenAI structured outputs
//   json_schema {...}       llama-server          guided_json {...} or "<JSON text>"  vLLM
//   grammar "<GBNF>"        llama-server          guided_grammar "<GBNF>"             vLLM
//   guided_choice ["a", "b", ...]                 vLLM: exactly one of the strings
// Schemas keep their property order (the body is re-read with nlohmann::ordered_json), so the
// model writes properties as the schema declares them. vLLM's guided_decoding_backend names an
// implementation and is accepted as is; guided_regex and guided_whitespace_pattern are refused.
#ifndef UNMASK_TOOLS_SERVER_API_CONSTRAINT_H_
#define UNMASK_TOOLS_SERVER_API_CONSTRAINT_H_

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_request.h"

namespace unmask::server {

// Reads the fields above from `j` (the parsed `body`). Sets *out when one is present (nullopt
// for response_format text or none). Errors (400, param = the field): two structured-output
// fields at once, wrong types, unknown keys inside response_format, a schema keyword the compiler
// does not support (code "unsupported_parameter"), a grammar that does not parse (its line and
// column), an empty guided_choice.
std::optional<ApiError> ReadOutputConstraint(const std::string& body, const nlohmann::json& j,
                                             std::optional<OutputConstraint>* out);

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_API_CONSTRAINT_H_
