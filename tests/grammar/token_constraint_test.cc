#include "grammar/token_constraint.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>

#include "format/gguf.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "test_util.h"
#include "vocab_util.h"

namespace unmask::grammar {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const Grammar> FromSchema(const std::string& schema) {
  auto gbnf = JsonSchemaToGbnf(json::parse(schema));
  EXPECT_TRUE(gbnf.ok()) << gbnf.status().message();
  if (!gbnf.ok()) return nullptr;
  auto g = ParseGbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(g).value());
}

// A test-only check of the keywords the schemas below use (the independent check with the
// jsonschema package is in tests/server/test_openai_client.py).
bool Valid(const json& v, const json& s, std::string* why) {
  if (s.contains("enum")) {
    for (const json& e : s["enum"]) {
      if (e == v) return true;
    }
    *why = "not in enum: " + v.dump();
    return false;
  }
  if (s.contains("anyOf")) {
    for (const json& b : s["anyOf"]) {
      std::string w;
      if (Valid(v, b, &w)) return true;
    }
    *why = "no anyOf branch: " + v.dump();
    return false;
  }
  const std::string t = s.value("type", "");
  if (t == "object") {
    if (!v.is_object()) return *why = "not an object", false;
    for (const json& r : s.value("required", json::array())) {
      if (!v.contains(r.get<std::string>())) return *why = "missing " + r.get<std::string>(), false;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!s["properties"].contains(it.key())) return *why = "extra " + it.key(), false;
      if (!Valid(it.value(), s["properties"][it.key()], why)) return false;
    }
  } else if (t == "array") {
    if (!v.is_array()) return *why = "not an array", false;
    if (v.size() < s.value("minItems", 0u) || v.size() > s.value("maxItems", 1000000u)) {
      return *why = "array size " + std::to_string(v.size()), false;
    }
    for (const json& e : v) {
      if (!Valid(e, s["items"], why)) return false;
    }
  } else if (t == "string") {
    if (!v.is_string()) return *why = "not a string", false;
  } else if (t == "integer") {
    if (!v.is_number_integer()) return *why = "not an integer", false;
    if (v.get<int64_t>() < s.value("minimum", INT64_MIN) ||
        v.get<int64_t>() > s.value("maximum", INT64_MAX)) {
      return *why = "out of range " + v.dump(), false;
    }
  } else if (t == "number") {
    if (!v.is_number()) return *why = "not a number", false;
  } else if (t == "boolean") {
    if (!v.is_boolean()) return *why = "not a boolean", false;
  }
  return true;
}

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "mood": {"enum": ["happy", "sad", "n/a"]},
    "age": {"type": "integer", "minimum": 0, "maximum": 130},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "score": {"type": "number"},
    "ok": {"type": "boolean"},
    "pet": {"anyOf": [{"type": "integer"},
                      {"type": "object", "properties": {"kind": {"type": "string"}},
                       "required": ["kind"]}]}
  },
  "required": ["name", "mood"]})";

class TokenConstraintTest : public ::testing::TestWithParam<const char*> {};

// At every step of random constrained walks, the trie walk's mask equals the brute-force check
// of every token (so no valid token is masked and no invalid one allowed), and the finished text
// parses as JSON and satisfies the schema.
TEST_P(TokenConstraintTest, MaskEqualsBruteForceAndOutputsAreValid) {
  UNMASK_REQUIRE_VOCAB(tok, GetParam());
  auto trie = VocabTrie::Build(*tok);
  auto g = FromSchema(kSchema);
  ASSERT_TRUE(g);
  const json schema = json::parse(kSchema);
  std::mt19937 rng(7);
  int finished = 0;
  for (int run = 0; run < 12; ++run) {
    GrammarConstraint c(g, trie, "json_schema");
    Matcher brute(g);
    StateId s = brute.initial();
    Utf8Partial partial;
    std::string text;
    for (int step = 0; step < 300 && !c.Complete(); ++step) {
      const std::span<const uint8_t> mask = c.Allowed();
      std::vector<int32_t> allowed, closing;
      for (int32_t t = 0; t < trie->vocab_size; ++t) {
        bool want = false;
        const std::string& b = trie->token_bytes[static_cast<size_t>(t)];
        if (!b.empty() && step % 4 == 0) {  // brute force on every 4th step (50k tokens each)
          Utf8Partial u = partial;
          want = brute.AdvanceBytes(s, b, &u) != kDead;
        }
        if (step % 4 == 0 && b.empty()) {
          want = std::find(trie->end_tokens.begin(), trie->end_tokens.end(), t) !=
                     trie->end_tokens.end() &&
                 partial.need == 0 && brute.CanEnd(s);
        }
        if (step % 4 == 0) {
          ASSERT_EQ(mask[static_cast<size_t>(t)] != 0, want) << "token " << t;
        }
        if (mask[static_cast<size_t>(t)] && !b.empty()) {
          allowed.push_back(t);
          if (b.find_first_of("\"]}") != std::string::npos && b.size() <= 2) closing.push_back(t);
        }
      }
      ASSERT_FALSE(allowed.empty()) << text;
      // Half the time a short closing token, so strings and arrays end.
      const std::vector<int32_t>& pool = (!closing.empty() && rng() % 2 == 0) ? closing : allowed;
      const int32_t t = pool[rng() % pool.size()];
      ASSERT_TRUE(c.Accept(t).ok());
      const std::string& b = trie->token_bytes[static_cast<size_t>(t)];
      s = brute.AdvanceBytes(s, b, &partial);
      ASSERT_NE(s, kDead);
      text += b;
    }
    if (!c.Complete()) continue;  // ran out of steps inside a long string: nothing to validate
    ++finished;
    const json v = json::parse(text, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << text;
    std::string why;
    EXPECT_TRUE(Valid(v, schema, &why)) << why << ": " << text;
  }
  EXPECT_GE(finished, 6);
}

// The tokens of valid texts, tokenized as the model would, are allowed at every step: a model
// can be driven through every branch (each enum value, optional properties present and absent,
// both anyOf branches, escapes, multi-byte characters).
TEST_P(TokenConstraintTest, EveryBranchCanBeGenerated) {
  UNMASK_REQUIRE_VOCAB(tok, GetParam());
  auto trie = VocabTrie::Build(*tok);
  auto g = FromSchema(kSchema);
  ASSERT_TRUE(g);
  const std::vector<std::string> texts = {
      R"({"name":"Ann","mood":"happy"})",
      R"({"name": "B\"o\\b\n", "mood": "sad", "age": 0, "tags": [], "ok": false})",
      "{\"name\":\"caf\xC3\xA9 \xF0\x9F\x98\x80\",\"mood\":\"n/a\",\"age\":130,\"pet\":7}",
      R"({"name":"x","mood":"sad","tags":["a","b","c"],"score":-1.5e3,"pet":{"kind":"cat"}})",
      "{\n  \"name\": \"y\",\n  \"mood\": \"happy\",\n  \"ok\": true\n}",
  };
  for (const std::string& text : texts) {
    GrammarConstraint c(g, trie, "json_schema");
    const std::vector<TokenId> ids = tok->Encode(text, false, false);
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_TRUE(c.Allowed()[static_cast<size_t>(ids[i])])
          << text << ": token " << i << " '" << trie->token_bytes[static_cast<size_t>(ids[i])]
          << "' masked";
      ASSERT_TRUE(c.Accept(ids[i]).ok());
    }
    EXPECT_TRUE(c.Complete()) << text;
  }
}

// The text a constrained request returns is what the grammar matched: DecodeContinuation without
// the clean-up of spaces equals the tokens' bytes, even where the clean-up would change them
// (" ," -> "," on byte-level BPE vocabularies would break `"a" , "b"`).
TEST_P(TokenConstraintTest, VerbatimTextIsTheTokensBytes) {
  UNMASK_REQUIRE_VOCAB(tok, GetParam());
  auto trie = VocabTrie::Build(*tok);
  const std::string text = R"({"a" , "b" :"I 'm here ." , "c" : [1 , 2] })";
  const std::vector<TokenId> ids = tok->Encode(text, false, false);
  std::string bytes;
  for (TokenId id : ids) bytes += trie->token_bytes[static_cast<size_t>(id)];
  // After a non-BOS token (a continuation): nothing is dropped or cleaned.
  const TokenId previous = ids.front();
  EXPECT_EQ(tok->DecodeContinuation(previous, ids, true, /*clean_spaces=*/false), bytes);
  EXPECT_NE(bytes.find("\" ,"), std::string::npos);
}

TEST_P(TokenConstraintTest, EndTokensOnlyWhenTheTextIsComplete) {
  UNMASK_REQUIRE_VOCAB(tok, GetParam());
  auto trie = VocabTrie::Build(*tok);
  auto g = ParseGbnf("root ::= [0-9]+\n");
  ASSERT_TRUE(g.ok());
  GrammarConstraint c(std::make_shared<const Grammar>(std::move(g).value()), trie, "grammar");
  const TokenId eos = tok->special().eos;
  ASSERT_GE(eos, 0);
  EXPECT_FALSE(c.Allowed()[static_cast<size_t>(eos)]);
  EXPECT_FALSE(c.Accept(eos).ok());
  // Tokens by their bytes (SentencePiece's Encode would add a leading space).
  auto by_bytes = [&](const std::string& b) {
    for (int32_t t = 0; t < trie->vocab_size; ++t) {
      if (trie->token_bytes[static_cast<size_t>(t)] == b) return t;
    }
    return -1;
  };
  ASSERT_TRUE(c.Accept(by_bytes("4")).ok());
  ASSERT_TRUE(c.Accept(by_bytes("2")).ok());
  EXPECT_TRUE(c.Allowed()[static_cast<size_t>(eos)]);
  EXPECT_FALSE(c.Complete());  // more digits may follow
  const Status bad = c.Accept(by_bytes("a"));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("not allowed by the grammar"), std::string::npos);
  EXPECT_TRUE(c.Accept(eos).ok());
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, TokenConstraintTest,
                         ::testing::Values("gpt-2", "llama-spm", "phi-3"));

}  // namespace
}  // namespace unmask::grammar
