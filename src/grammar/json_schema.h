// JSON Schema -> GBNF (the grammar the AR decoder is constrained by for OpenAI's
// response_format json_schema, llama-server's json_schema and vLLM's guided_json).
//
// The generated JSON is compact except for bounded optional whitespace ("" | " " | "\n" and up to
// 20 spaces or tabs) after '{', '[', ',' and ':' and around values, so a model may pretty-print
// but never stall in whitespace. Numbers have at most 16 integer digits, 16 fraction digits and 3
// exponent digits; the text may start with one space (SentencePiece vocabularies write one
// before the first word) and ends right after the root value (no trailing whitespace), so
// generation stops there.
//
// Supported (draft 2020-12 names; draft-07 `definitions`, array `items` and `additionalItems`
// too):
//   type (a name or a list of names: object, array, string, number, integer, boolean, null; a
//   list is one alternative per type, each with that type's keywords), enum, const (beside
//   `type`, which keeps the values of that type, and `nullable` only), anyOf, oneOf (generated
//   as anyOf: a value matching several branches is not excluded), allOf (parts of annotations
//   only drop out; one part left is that part, a $ref included; several are merged into one
//   object schema, a property declared in two parts taking the allOf of both), keywords beside
//   allOf / anyOf / $ref (applied with them: one more allOf part, per anyOf branch), $ref ("#",
//   "#/$defs/...", "#/definitions/...", percent-encoded, recursion included), nullable
//   (OpenAPI); object: properties, required, additionalProperties (false when absent, as OpenAI's
//   strict structured outputs require: declared properties only; true or a schema allows keys
//   other than the declared ones), properties are written in declaration order (hence
//   ordered_json), optional ones may be left out; array: items, prefixItems (in order, those
//   past minItems optional; `items` only after all of them), minItems, maxItems (at most 4096);
//   string: minLength, maxLength, format date, time, date-time and uuid (RFC 3339 / RFC 4122
//   shapes, and dates that exist in the Gregorian calendar; other formats, and format on numbers
//   and booleans, are annotations, as the specification makes them by default);
//   integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (16 digits at most);
//   annotations (title, description, default, examples, example, $schema, $id, $comment,
//   $anchor, deprecated, readOnly, writeOnly, discriminator, contentEncoding, contentMediaType,
//   externalDocs, xml, x-*) are ignored.
// Anything else (pattern, multipleOf, bounds on `number`, uniqueItems true, not, if/then/else,
// patternProperties, min/maxProperties, remote $ref, $anchor references, ...) is refused by name.
// So are a reference that reaches itself before any character of the value (`{"$ref": "#"}`: no
// grammar runs it), a schema nested deeper than 128 levels (values of const and enum included),
// sub-schemas and references nested 256 deep, one that expands to more than 10,000 sub-schemas,
// 100,000 rules or 2,000,000 copied values, an object of more than 2,048 properties, declared
// names of more than 20,000 bytes beside additionalProperties, enum / const values of more than
// 1 MiB in all (written as a trie of their characters, so that thousands of values stay one parse
// stack), length bounds beside a format its values do not meet, and allOf parts that cannot be
// merged (InvalidArgument). Every limit bounds
// the compile time of a schema from a request (well under a second).
#ifndef UNMASK_GRAMMAR_JSON_SCHEMA_H_
#define UNMASK_GRAMMAR_JSON_SCHEMA_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "grammar/grammar.h"

namespace unmask::grammar {

// A compiled schema: the GBNF text and the grammar parsed from it (root rule "root").
struct CompiledSchema {
  std::string gbnf;
  Grammar grammar;
};

// Errors: InvalidArgument "JSON schema: <what> at <JSON pointer>" for an unsupported keyword or
// value, a malformed schema (a keyword of the wrong JSON type, an unresolvable $ref, minItems >
// maxItems, an empty enum, minimum > maximum), or one no finite value satisfies (a required
// property that refers back to the schema). Internal when the compiled text does not parse (a bug).
StatusOr<CompiledSchema> CompileJsonSchema(const nlohmann::ordered_json& schema);
// The same from the schema's JSON text. Errors: InvalidArgument for text that is not JSON.
StatusOr<CompiledSchema> CompileJsonSchemaText(std::string_view text);
// CompileJsonSchema's text only (a caller that renames or combines rules: tool-call schemas).
StatusOr<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema);
// The same from the schema's JSON text.
StatusOr<std::string> JsonSchemaTextToGbnf(std::string_view text);

// Any JSON object (response_format {"type": "json_object"}).
std::string JsonObjectGbnf();

// One of `choices`, literally (vLLM's guided_choice). Errors: InvalidArgument when empty.
StatusOr<std::string> ChoiceGbnf(const std::vector<std::string>& choices);

// `text` as a GBNF string literal, quotes included ("a\"b" for a"b).
std::string GbnfLiteral(const std::string& text);

}  // namespace unmask::grammar

#endif  // UNMASK_GRAMMAR_JSON_SCHEMA_H_
