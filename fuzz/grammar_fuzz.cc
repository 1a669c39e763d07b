// Grammars from requests: GBNF text (llama-server's `grammar`, vLLM's guided_grammar) and JSON
// schemas (response_format json_schema, guided_json), compiled to the grammar the matcher runs,
// and the matcher advanced over fuzzed bytes (a model's output) with its states compacted.
// Input: one byte (bit 0: the text is a JSON schema, else GBNF), the grammar or schema, NUL, the
// bytes to match. Seeds: the grammars and schemas of the tests (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask;
  if (size < 1) return 0;
  const bool schema = (data[0] & 1) != 0;
  const auto parts = fuzz::SplitNul(data + 1, size - 1, 2);
  std::string gbnf;
  if (schema) {
    auto text = grammar::JsonSchemaTextToGbnf(parts[0]);
    if (!text.ok()) return 0;
    gbnf = *std::move(text);
  } else {
    gbnf = std::string(parts[0]);
  }
  auto g = grammar::ParseGbnf(gbnf);
  if (!g.ok()) {
    if (schema) fuzz::Fail("the GBNF of a compiled schema does not parse: " + g.status().message());
    return 0;
  }
  grammar::Matcher matcher(std::make_shared<const grammar::Grammar>(*std::move(g)));
  if (parts.size() < 2) return 0;
  grammar::StateId s = matcher.initial();
  grammar::Utf8Partial partial;
  const std::string_view bytes = parts[1];
  // Byte by byte in chunks of up to 7, as token pieces arrive, with compaction between chunks.
  for (size_t i = 0; i < bytes.size() && s >= 0; i += 7) {
    s = matcher.AdvanceBytes(s, bytes.substr(i, 7), &partial);
    if (s >= 0) {
      (void)matcher.CanEnd(s);
      (void)matcher.AcceptsSome(s, 0, 0x10FFFF);
      if (matcher.num_states() > 4096) s = matcher.Compact(s);
    }
  }
  return 0;
}
