#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "grammar_test_util.h"

namespace unmask::grammar {
namespace {

using json = nlohmann::ordered_json;
using testing::Check;

std::shared_ptr<const Grammar> Compile(const json& schema) {
  auto gbnf = JsonSchemaToGbnf(schema);
  if (!gbnf.ok()) {
    ADD_FAILURE() << gbnf.status().message();
    return nullptr;
  }
  auto g = ParseGbnf(*gbnf);
  if (!g.ok()) {
    ADD_FAILURE() << g.status().message() << "\n" << *gbnf;
    return nullptr;
  }
  return std::make_shared<const Grammar>(std::move(g).value());
}

std::string ErrorOf(const json& schema) {
  auto gbnf = JsonSchemaToGbnf(schema);
  return gbnf.ok() ? std::string("(compiled)") : gbnf.status().message();
}

TEST(JsonSchemaTest, NestedObjectWithRequiredAndOptionalProperties) {
  auto g = Compile(json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "age": {"type": "integer"},
      "address": {"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"]}
    },
    "required": ["name", "address"]})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"name":"Ann","address":{"city":"Oslo"}})").sentence);
  EXPECT_TRUE(Check(g, R"({"name": "Ann", "age": 31, "address": {"city": "Oslo"}})").sentence);
  EXPECT_TRUE(Check(g, "{\n  \"name\": \"A\",\n  \"address\": {\"city\": \"B\"}\n}").sentence);
  EXPECT_FALSE(Check(g, R"({"name":"Ann"})").sentence);  // address is required
  EXPECT_FALSE(
      Check(g, R"({"name":"A","address":{"city":"B"},"age")").prefix);       // declaration order
  EXPECT_FALSE(Check(g, R"({"name":"Ann","zip":1)").prefix);                 // not declared
  EXPECT_FALSE(Check(g, R"({"name":1)").prefix);                             // wrong type
  EXPECT_FALSE(Check(g, R"({"name":"A","address":{"city":"B"}} )").prefix);  // nothing after
  EXPECT_FALSE(Check(g, "{      \"name\"").prefix);  // whitespace is bounded
}

TEST(JsonSchemaTest, AnySubsetOfOptionalPropertiesInOrder) {
  auto g = Compile(json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
          "c":{"type":"integer"}}})"));
  ASSERT_TRUE(g);
  for (const char* ok : {"{}", R"({"a":1})", R"({"b":1})", R"({"c":1})", R"({"a":1,"c":2})",
                         R"({"b":1,"c":2})", R"({"a":1,"b":2,"c":3})"}) {
    EXPECT_TRUE(Check(g, ok).sentence) << ok;
  }
  EXPECT_FALSE(Check(g, R"({"b":1,"a")").prefix);
  EXPECT_FALSE(Check(g, R"({,)").prefix);
  EXPECT_FALSE(Check(g, R"({"a":1,})").prefix);
}

TEST(JsonSchemaTest, AdditionalProperties) {
  auto g = Compile(json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":1,"x":true,"y":false})").sentence);
  EXPECT_TRUE(Check(g, R"({"x":true})").sentence);
  EXPECT_FALSE(Check(g, R"({"x":1)").prefix);
  auto any = Compile(json::parse(R"({"type":"object","additionalProperties":true})"));
  ASSERT_TRUE(any);
  EXPECT_TRUE(Check(any, R"({"k":[1,{"z":null}],"s":"v"})").sentence);
}

TEST(JsonSchemaTest, EnumsConstAndAnyOf) {
  auto g = Compile(json::parse(R"({"type":"object","properties":{
      "color":{"enum":["red","green",null,3]},
      "kind":{"const":"fixed"},
      "v":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"integer"}}]}},
      "required":["color","kind","v"]})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"color":"green","kind":"fixed","v":"x"})").sentence);
  EXPECT_TRUE(Check(g, R"({"color":null,"kind":"fixed","v":[1,2]})").sentence);
  EXPECT_TRUE(Check(g, R"({"color":3,"kind":"fixed","v":[]})").sentence);
  EXPECT_FALSE(Check(g, R"({"color":"blue")").prefix);
  EXPECT_FALSE(Check(g, R"({"color":"red","kind":"other")").prefix);
  EXPECT_FALSE(Check(g, R"({"color":"red","kind":"fixed","v":1)").prefix);
}

TEST(JsonSchemaTest, ArraysWithBoundsAndTuples) {
  auto g = Compile(
      json::parse(R"({"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":3})"));
  ASSERT_TRUE(g);
  EXPECT_FALSE(Check(g, "[true]").sentence);
  EXPECT_TRUE(Check(g, "[true, false]").sentence);
  EXPECT_TRUE(Check(g, "[true,false,true]").sentence);
  EXPECT_FALSE(Check(g, "[true,false,true,").prefix);
  auto t = Compile(
      json::parse(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})"));
  ASSERT_TRUE(t);
  EXPECT_TRUE(Check(t, R"(["a", 1])").sentence);
  EXPECT_FALSE(Check(t, R"([1)").prefix);
  auto empty = Compile(json::parse(R"({"type":"array","maxItems":0})"));
  ASSERT_TRUE(empty);
  EXPECT_TRUE(Check(empty, "[]").sentence);
  EXPECT_FALSE(Check(empty, "[1").prefix);
}

TEST(JsonSchemaTest, Numbers) {
  auto g = Compile(json::parse(R"({"type":"number"})"));
  ASSERT_TRUE(g);
  for (const char* ok : {"0", "-0.5", "12", "3.25e-7", "1E+300", "-12.0"}) {
    EXPECT_TRUE(Check(g, ok).sentence) << ok;
  }
  for (const char* bad : {"01", "+1", ".5", "1.", "1e", "--1"}) {
    EXPECT_FALSE(Check(g, bad).sentence) << bad;
  }
  EXPECT_FALSE(Check(g, "12345678901234567").prefix);  // 17 integer digits
}

// Every integer in [-1200, 1200] is accepted exactly when it satisfies the bounds.
TEST(JsonSchemaTest, IntegerBoundsAreExact) {
  const std::vector<json> schemas = {
      json::parse(R"({"type":"integer","minimum":0,"maximum":120})"),
      json::parse(R"({"type":"integer","minimum":-37,"maximum":1005})"),
      json::parse(R"({"type":"integer","exclusiveMinimum":-10,"exclusiveMaximum":-2})"),
      json::parse(R"({"type":"integer","minimum":7})"),
      json::parse(R"({"type":"integer","maximum":-999})"),
      json::parse(R"({"type":"integer","minimum":99,"maximum":1000})"),
      json::parse(R"({"type":"integer","minimum":3.5,"maximum":19.9})")};
  for (const json& s : schemas) {
    auto g = Compile(s);
    ASSERT_TRUE(g) << s.dump();
    const double lo = s.contains("minimum")            ? s["minimum"].get<double>()
                      : s.contains("exclusiveMinimum") ? s["exclusiveMinimum"].get<double>() + 1e-9
                                                       : -1e18;
    const double hi = s.contains("maximum")            ? s["maximum"].get<double>()
                      : s.contains("exclusiveMaximum") ? s["exclusiveMaximum"].get<double>() - 1e-9
                                                       : 1e18;
    for (int v = -1200; v <= 1200; ++v) {
      const bool want = v >= lo && v <= hi;
      ASSERT_EQ(Check(g, std::to_string(v)).sentence, want) << s.dump() << " value " << v;
    }
    EXPECT_FALSE(Check(g, "007").sentence);
  }
  EXPECT_NE(
      ErrorOf(json::parse(R"({"type":"integer","minimum":5,"maximum":4})")).find("no integer"),
      std::string::npos);
}

TEST(JsonSchemaTest, StringsWithEscapesLengthsAndFormats) {
  auto g = Compile(json::parse(R"({"type":"string"})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"("a\"b\\c\n\u00e9\/")").sentence);
  EXPECT_TRUE(Check(g, "\"caf\xC3\xA9 \xF0\x9F\x98\x80\"").sentence);
  EXPECT_FALSE(Check(g, "\"a\nb\"").prefix);  // a raw newline is not JSON
  EXPECT_FALSE(Check(g, R"("\x")").prefix);   // not a JSON escape
  EXPECT_FALSE(Check(g, R"("\u12g)").prefix);
  auto len = Compile(json::parse(R"({"type":"string","minLength":2,"maxLength":3})"));
  ASSERT_TRUE(len);
  EXPECT_FALSE(Check(len, R"("a")").sentence);
  EXPECT_TRUE(Check(len, R"("ab")").sentence);
  EXPECT_TRUE(Check(len, R"("a\nc")").sentence);  // an escape is one character
  EXPECT_FALSE(Check(len, R"("abcd)").prefix);
  auto date = Compile(json::parse(R"({"type":"string","format":"date-time"})"));
  ASSERT_TRUE(date);
  EXPECT_TRUE(Check(date, R"("2026-12-02T18:54:59Z")").sentence);
  EXPECT_TRUE(Check(date, R"("2026-12-02T18:54:59.123+01:00")").sentence);
  EXPECT_FALSE(Check(date, R"("2026-13)").prefix);
  auto uuid = Compile(json::parse(R"({"format":"uuid"})"));
  ASSERT_TRUE(uuid);
  EXPECT_TRUE(Check(uuid, R"("123e4567-e89b-12d3-a456-426614174000")").sentence);
  EXPECT_FALSE(Check(uuid, R"("123e4567e)").prefix);
}

TEST(JsonSchemaTest, RefsDefsAndRecursion) {
  auto g = Compile(json::parse(R"({
    "$defs": {"node": {"type": "object",
                       "properties": {"v": {"type": "integer"},
                                      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                       "required": ["v"]}},
    "$ref": "#/$defs/node"})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})").sentence);
  EXPECT_FALSE(Check(g, R"({"v":1,"kids":[{"w")").prefix);
  auto draft7 = Compile(json::parse(
      R"({"definitions":{"x":{"type":"boolean"}},"type":"array","items":{"$ref":"#/definitions/x"}})"));
  ASSERT_TRUE(draft7);
  EXPECT_TRUE(Check(draft7, "[true,false]").sentence);
}

// A reference cycle with nothing written between its steps would compile to a left-recursive
// rule (x ::= x ...), which the GBNF parser refuses: the compiler names it instead (found by
// grammar_fuzz; regression input fuzz/regressions/grammar_fuzz/self-reference-at-the-head).
TEST(JsonSchemaTest, ReferenceCyclesAtTheHeadAreRefusedByName) {
  for (const char* text : {
           R"({"$ref":"#"})",
           R"({"anyOf":[{"$ref":"#"},{"type":"number"}]})",
           R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"$ref":"#/$defs/a"}},
               "$ref":"#/$defs/a"})",
           R"({"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}},
               "$ref":"#"})",
       }) {
    SCOPED_TRACE(text);
    EXPECT_NE(ErrorOf(json::parse(text)).find("refers back to itself before any character"),
              std::string::npos)
        << ErrorOf(json::parse(text));
  }
  // Recursion behind a character compiles: the root as an array item, a property, a branch.
  for (const char* text : {
           R"({"type":"array","items":{"$ref":"#"}})",
           R"({"anyOf":[{"type":"object","properties":{"k":{"$ref":"#"}}},{"type":"integer"}]})",
           R"({"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},
               "$ref":"#/$defs/n"})",
       }) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(Compile(json::parse(text)));
  }
  auto g =
      Compile(json::parse(R"({"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"null"}]})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "[[null,[]],null]").sentence);
  EXPECT_FALSE(Check(g, "[1").prefix);
}

// Shapes inside 'allOf' and pointer indexes beyond size_t are errors, not exceptions (found while
// reading the compiler for the cycle above: nlohmann threw on the first two, std::stoul on the
// last, ending the process).
TEST(JsonSchemaTest, MalformedAllOfPartsAndHugeIndexesAreErrors) {
  EXPECT_NE(ErrorOf(json::parse(R"({"allOf":[{"properties":5}]})")).find("'properties' must be"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"allOf":[{"properties":[1]}]})")).find("'properties' must be"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"allOf":[{"required":"a"}]})")).find("'required' must be"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"allOf":[{"$ref":1}]})")).find("'$ref' must be a string"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"$defs":{"x":{"$ref":"#/$defs/x"}},
                                    "allOf":[{"$ref":"#/$defs/x"}]})"))
                .find("refers back to itself before any character"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"$defs":{"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"}},
                                    "allOf":[{"$ref":"#/$defs/x"},{"type":"object"}]})"))
                .find("(a cycle of references?)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"$defs":{"x":[true]},
                                    "$ref":"#/$defs/x/99999999999999999999999"})"))
                .find("does not resolve"),
            std::string::npos);
  auto g = Compile(json::parse(R"({"$defs":{"x":[{"type":"boolean"}]},"$ref":"#/$defs/x/0"})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "true").sentence);
}

// Found by a helper's attack (2026-12-07): a const 100,000 arrays deep overflowed the stack in
// nlohmann's dump(); an allOf chain of 18 levels doubling per level took 10 s and 1.6 GB.
TEST(JsonSchemaTest, DeepValuesAndExpandingSchemasAreRefusedQuickly) {
  std::string deep = "{\"const\":";
  for (int i = 0; i < 100000; ++i) deep += '[';
  for (int i = 0; i < 100000; ++i) deep += ']';
  deep += "}";
  auto text = JsonSchemaTextToGbnf(deep);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("nests deeper than 128"), std::string::npos)
      << text.status().message();
  // Each level's two properties are both an allOf of the level below and one more object part
  // (two parts are merged, which copies the level below; one part alone is not copied).
  json defs = {{"a0", {{"properties", {{"leaf", {{"type", "integer"}}}}}}}};
  for (int k = 1; k <= 24; ++k) {
    const json r = {{"allOf", json::array({{{"$ref", "#/$defs/a" + std::to_string(k - 1)}},
                                           {{"type", "object"}}})}};
    defs["a" + std::to_string(k)] = {{"properties", {{"x", r}, {"y", r}}}};
  }
  const json blow = {{"allOf", json::array({{{"$ref", "#/$defs/a24"}}})}, {"$defs", defs}};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(ErrorOf(blow).find("more than 10000 sub-schemas"), std::string::npos) << ErrorOf(blow);
  // Not a timing test: a bound far above the ~0.1 s it takes, to catch the exponential blow-up.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// const and enum beside other keywords (they were ignored: {"const":"a","pattern":"^b$"} gave "a").
TEST(JsonSchemaTest, ConstAndEnumHonourTheirTypeAndRefuseOtherKeywords) {
  auto g = Compile(json::parse(R"({"type":"string","enum":["a",1,"b",null]})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"("a")").sentence);
  EXPECT_FALSE(Check(g, "1").prefix);
  EXPECT_FALSE(Check(g, "n").prefix);
  auto n = Compile(json::parse(R"({"type":"string","enum":["a",null],"nullable":true})"));
  ASSERT_TRUE(n);
  EXPECT_TRUE(Check(n, "null").sentence);
  auto i = Compile(json::parse(R"({"type":"integer","enum":[1,2.0,2.5]})"));
  ASSERT_TRUE(i);
  EXPECT_TRUE(Check(i, "2.0").sentence);
  EXPECT_FALSE(Check(i, "2.5").sentence);
  EXPECT_NE(ErrorOf(json::parse(R"({"enum":[1,2],"type":"string"})")).find("no value of 'enum'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"const":"a","pattern":"^b$"})")).find("'pattern'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"const":1,"anyOf":[{"type":"string"}]})")).find("'anyOf'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"enum":["x"],"minLength":5})")).find("'minLength'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"const":3,"enum":[1,2]})")).find("not in 'enum'"),
            std::string::npos);
  auto both = Compile(json::parse(R"({"const":2,"enum":[1,2]})"));
  ASSERT_TRUE(both);
  EXPECT_TRUE(Check(both, "2").sentence);
}

// Bounds past what is generated say so (they said "no integer satisfies the bounds", or called
// 2^63 negative); an integer-valued float is an integer, as JSON Schema counts it.
TEST(JsonSchemaTest, BoundsBeyondTheGeneratedRangeAreNamed) {
  EXPECT_NE(ErrorOf(json::parse(R"({"type":"integer","minimum":1e16})")).find("beyond 16 digits"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"type":"integer","maximum":-99999999999999999999})"))
                .find("beyond 16 digits"),
            std::string::npos);
  auto wide = Compile(json::parse(R"({"type":"integer","minimum":-1e300,"maximum":5})"));
  ASSERT_TRUE(wide);
  EXPECT_TRUE(Check(wide, "-12").sentence);
  EXPECT_FALSE(Check(wide, "6").sentence);
  EXPECT_NE(
      ErrorOf(json::parse(R"({"type":"array","maxItems":18446744073709551615})")).find("over 4096"),
      std::string::npos);
  auto items = Compile(json::parse(R"({"type":"array","items":{"type":"null"},"maxItems":2.0})"));
  ASSERT_TRUE(items);
  EXPECT_FALSE(Check(items, "[null,null,").prefix);
  EXPECT_NE(ErrorOf(json::parse(R"({"type":"array","maxItems":2.5})")).find("non-negative"),
            std::string::npos);
}

// Schemas no finite value satisfies were accepted and generated to the token limit.
TEST(JsonSchemaTest, SchemasWithoutAFiniteValueAreRefused) {
  for (const char* text : {
           R"({"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]})",
           R"({"type":"array","items":{"$ref":"#"},"minItems":1})",
       }) {
    SCOPED_TRACE(text);
    EXPECT_NE(ErrorOf(json::parse(text)).find("no finite value satisfies it"), std::string::npos)
        << ErrorOf(json::parse(text));
  }
  // Optional recursion and recursion beside a base case are fine.
  EXPECT_TRUE(Compile(
      json::parse(R"({"type":"object","properties":{"next":{"$ref":"#"}},"required":[]})")));
  EXPECT_TRUE(Compile(json::parse(R"({"type":"array","items":{"$ref":"#"}})")));
}

TEST(JsonSchemaTest, TypeListsNullableAllOfAndEmptySchemas) {
  auto g = Compile(json::parse(R"({"type":["integer","null"]})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "null").sentence);
  EXPECT_TRUE(Check(g, "-4").sentence);
  EXPECT_FALSE(Check(g, "\"").prefix);
  auto n = Compile(json::parse(R"({"type":"string","nullable":true})"));
  ASSERT_TRUE(n);
  EXPECT_TRUE(Check(n, "null").sentence);
  auto all = Compile(json::parse(R"({"allOf":[
      {"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"b":{"type":"boolean"}},"required":["b"]}]})"));
  ASSERT_TRUE(all);
  EXPECT_TRUE(Check(all, R"({"a":1,"b":true})").sentence);
  EXPECT_FALSE(Check(all, R"({"a":1})").sentence);
  auto any = Compile(json::object());
  ASSERT_TRUE(any);
  EXPECT_TRUE(Check(any, R"([1,"x",{"y":null}])").sentence);
}

TEST(JsonSchemaTest, UnsupportedKeywordsAreRefusedByName) {
  EXPECT_EQ(ErrorOf(json::parse(R"({"type":"string","pattern":"^a"})")),
            "JSON schema: keyword 'pattern' is not supported (regular expressions are not "
            "compiled yet) at /");
  EXPECT_NE(
      ErrorOf(json::parse(R"({"type":"object","properties":{"n":{"type":"number","minimum":0}}})"))
          .find("'minimum' is not supported at /properties/n"),
      std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"type":"array","uniqueItems":true})")).find("uniqueItems"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"not":{"type":"string"}})")).find("'not'"), std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"$ref":"http://x/y.json"})")).find("not local"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"$ref":"#/$defs/missing"})")).find("does not resolve"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"type":"object","required":["x"]})")).find("not declared"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"type":"strin"})")).find("unknown type 'strin'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"enum":[]})")).find("non-empty"), std::string::npos);
  EXPECT_NE(ErrorOf(json::parse("false")).find("admits no value"), std::string::npos);
  EXPECT_NE(ErrorOf(json::parse("3")).find("must be an object or a boolean"), std::string::npos);
  EXPECT_NE(ErrorOf(json::parse(R"({"type":"array","maxItems":99999})")).find("over 4096"),
            std::string::npos);
}

TEST(JsonSchemaTest, AnnotationsAreIgnored) {
  auto g = Compile(json::parse(R"({"$schema":"https://json-schema.org/draft/2020-12/schema",
      "title":"T","description":"d","type":"boolean","default":true,"examples":[false]})"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "true").sentence);
}

TEST(JsonSchemaTest, JsonObjectModeAndChoices) {
  auto g = ParseGbnf(JsonObjectGbnf());
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto gp = std::make_shared<const Grammar>(std::move(g).value());
  EXPECT_TRUE(Check(gp, R"({"a":[1,2,{"b":"c"}],"d":-1.5e3,"e":null,"f":true})").sentence);
  EXPECT_FALSE(Check(gp, "[").prefix);  // the root is an object
  auto c = ChoiceGbnf({"yes", "no", "a \"quoted\" one"});
  ASSERT_TRUE(c.ok());
  auto cg = testing::MustParse(*c);
  ASSERT_TRUE(cg);
  EXPECT_TRUE(Check(cg, "a \"quoted\" one").sentence);
  EXPECT_FALSE(Check(cg, "maybe").prefix);
  EXPECT_FALSE(ChoiceGbnf({}).ok());
  // The empty choice, alone or beside others (the choices are a trie).
  for (const std::vector<std::string>& choices :
       {std::vector<std::string>{""}, std::vector<std::string>{"", "ab", "a"}}) {
    auto text = ChoiceGbnf(choices);
    ASSERT_TRUE(text.ok()) << text.status().message();
    auto parsed = ParseGbnf(*text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << *text;
    auto choice_grammar = std::make_shared<const Grammar>(std::move(parsed).value());
    for (const std::string& text_of : choices) {
      EXPECT_TRUE(Check(choice_grammar, text_of).sentence) << text_of;
    }
    EXPECT_FALSE(Check(choice_grammar, "b").prefix);
  }
}

}  // namespace
}  // namespace unmask::grammar
