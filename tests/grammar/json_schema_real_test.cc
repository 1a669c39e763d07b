// Schemas as real clients write them (pydantic v1 and v2, OpenAI strict mode, OpenAPI and tool
// schemas), from a helper's check of 130 schemas validated with the `jsonschema` package
// (2026-12-07): each was refused, or accepted text that does not satisfy it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace unmask::grammar {
namespace {

using json = nlohmann::ordered_json;
using testing::Check;

std::shared_ptr<const Grammar> Compile(const std::string& schema) {
  auto c = CompileJsonSchemaText(schema);
  if (!c.ok()) {
    ADD_FAILURE() << c.status().message().substr(0, 400) << "\n" << schema.substr(0, 300);
    return nullptr;
  }
  return std::make_shared<const Grammar>(std::move(c->grammar));
}

std::string ErrorOf(const std::string& schema) {
  auto c = CompileJsonSchemaText(schema);
  return c.ok() ? std::string("(compiled)") : c.status().message();
}

// The message of a schema no finite value satisfies was read from a destroyed Status (garbage
// bytes in the text; ASan: use after free).
TEST(JsonSchemaRealTest, NoFiniteValueMessageIsTheParsersWords) {
  for (const char* s : {R"({"type":"array","items":{"$ref":"#"},"minItems":1})",
                        R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})"}) {
    const std::string m = ErrorOf(s);
    EXPECT_NE(m.find("no finite value satisfies it"), std::string::npos) << m;
    EXPECT_NE(m.find("' can never end (every alternative needs it again"), std::string::npos) << m;
    for (char c : m) ASSERT_TRUE(c >= 0x20 && c < 0x7F) << m;
  }
}

// A property declared in two allOf parts satisfies both (the later one replaced the earlier:
// {"a": "text"} for an integer a).
TEST(JsonSchemaRealTest, AllOfPropertyInTwoPartsSatisfiesBoth) {
  auto g = Compile(R"({"allOf":[
      {"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":9}},
       "required":["a"]},
      {"properties":{"a":{"description":"the a"}}}]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":5})").sentence);
  EXPECT_FALSE(Check(g, R"({"a":")").prefix);
  EXPECT_FALSE(Check(g, R"({"a":12)").prefix);
  // Two non-object schemas for one property cannot be merged: refused, not half-enforced.
  const std::string m = ErrorOf(R"({"allOf":[
      {"type":"object","properties":{"a":{"enum":["x","y"]}},"required":["a"]},
      {"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]}]})");
  EXPECT_NE(m.find("supported over object schemas"), std::string::npos) << m;
  // Two object schemas for one property merge.
  g = Compile(R"({"allOf":[
      {"type":"object","properties":{"p":{"type":"object","properties":{"x":{"type":"integer"}},
       "required":["x"]}},"required":["p"]},
      {"type":"object","properties":{"p":{"type":"object","properties":{"y":{"type":"boolean"}},
       "required":["y"]}}}]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"p":{"x":1,"y":true}})").sentence);
  EXPECT_FALSE(Check(g, R"({"p":{"x":1}})").sentence);
}

// Additional keys may not repeat a declared property (whose schema they would escape).
TEST(JsonSchemaRealTest, AdditionalKeysAreNotTheDeclaredOnes) {
  auto g = Compile(R"({"type":"object","properties":{"a":{"type":"string"},
      "Can I have a picture?":{"type":"null"},"ab\"c":{"type":"null"},"é":{"type":"null"}},
      "additionalProperties":{"type":"integer"}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":"x","b":5})").sentence);
  EXPECT_TRUE(Check(g, R"({"b":5,"aa":6,"":7,"Can I":8,"ab":9,"e":1,"éé":2})").sentence);
  EXPECT_FALSE(Check(g, R"({"a":5)").prefix);
  EXPECT_FALSE(Check(g, R"({"a":"x","a":5)").prefix);
  EXPECT_FALSE(Check(g, R"({"b":1,"a":)").prefix);
  EXPECT_FALSE(Check(g, R"({"Can I have a picture?":3)").prefix);
  EXPECT_FALSE(Check(g, R"({"ab\"c":3)").prefix);
  EXPECT_FALSE(Check(g, R"({"é":3)").prefix);
  EXPECT_TRUE(Check(g, R"({"ab\"cd":3})").sentence);
  EXPECT_TRUE(Check(g, R"({"ab\nc":3})").sentence);
}

// pydantic v1 writes a field with a default or a description as {"allOf": [{"$ref": ...}], ...}:
// refused when the target was not an object, or never-ending when it was recursive (copied).
TEST(JsonSchemaRealTest, SingleAllOfPartIsThatPart) {
  auto g = Compile(R"({"title":"M","type":"object","properties":{
      "color":{"$ref":"#/definitions/Color"},
      "size":{"default":"s","allOf":[{"$ref":"#/definitions/Size"}]},
      "n":{"description":"count","allOf":[{"$ref":"#/definitions/N"}]}},
      "required":["color"],"definitions":{
      "Color":{"title":"Color","description":"An enumeration.","enum":["r","g"],"type":"string"},
      "Size":{"title":"Size","enum":["s","m"],"type":"string"},
      "N":{"type":"integer","minimum":0}}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"color":"r","size":"m","n":3})").sentence);
  EXPECT_FALSE(Check(g, R"({"color":"r","size":"x)").prefix);
  EXPECT_FALSE(Check(g, R"({"color":"r","n":-)").prefix);
  // Recursive: a node whose parent is a node.
  g = Compile(R"({"title":"Node","type":"object","properties":{"v":{"type":"integer"},
      "parent":{"description":"parent node","allOf":[{"$ref":"#/definitions/Node"}]}},
      "required":["v"],"definitions":{"Node":{"type":"object","properties":{
      "v":{"type":"integer"},"parent":{"description":"parent node",
      "allOf":[{"$ref":"#/definitions/Node"}]}},"required":["v"]}}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"v":1,"parent":{"v":2,"parent":{"v":3}}})").sentence);
  // 120 fields over one 100-property model: no copies, so no 10,000-sub-schema refusal.
  std::string address = R"({"type":"object","properties":{)";
  for (int i = 0; i < 100; ++i) address += (i ? "," : "") + ("\"p" + std::to_string(i)) + "\":{}";
  address += "}}";
  std::string big =
      R"({"type":"object","definitions":{"Address":)" + address + R"(},"properties":{)";
  for (int i = 0; i < 120; ++i) {
    big += (i ? "," : "") + ("\"a" + std::to_string(i)) +
           R"(":{"description":"addr","allOf":[{"$ref":"#/definitions/Address"}]})";
  }
  big += "}}";
  EXPECT_TRUE(Compile(big));
}

// Keywords beside allOf are one more part (inheritance: a base model and the fields added).
TEST(JsonSchemaRealTest, KeywordsBesideAllOfAreAnotherPart) {
  auto g = Compile(R"({"$defs":{"Base":{"type":"object","properties":{"id":{"type":"integer"}},
      "required":["id"]}},"allOf":[{"$ref":"#/$defs/Base"}],
      "properties":{"name":{"type":"string","maxLength":5}},"required":["name"]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"id":1,"name":"ann"})").sentence);
  EXPECT_FALSE(Check(g, R"({"id":1})").sentence);
  EXPECT_FALSE(Check(g, R"({"id":1,"name":"annabel)").prefix);
  g = Compile(R"({"$defs":{"Base":{"type":"object","properties":{"id":{"type":"integer"}},
      "required":["id"]}},"type":"object","allOf":[{"$ref":"#/$defs/Base"}]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"id":1})").sentence);
  // The same for keywords beside anyOf: each branch gets them.
  g = Compile(R"({"type":"object","anyOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"b":{"type":"integer"}},"required":["b"]}]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":1})").sentence);
  EXPECT_TRUE(Check(g, R"({"b":1})").sentence);
  EXPECT_FALSE(Check(g, R"(1)").prefix);
  // And beside $ref (2020-12): nullable wraps it.
  g = Compile(R"({"$defs":{"A":{"type":"integer"}},"type":"object","properties":{
      "a":{"$ref":"#/$defs/A","nullable":true}},"required":["a"]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":null})").sentence);
  EXPECT_TRUE(Check(g, R"({"a":4})").sentence);
}

// A type list with the keywords of some of its types (OpenAI strict mode's nullable objects).
TEST(JsonSchemaRealTest, TypeListTakesEachTypesKeywords) {
  auto g = Compile(R"({"type":"object","properties":{"user":{"type":["object","null"],
      "properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},
      "tags":{"type":["array","null"],"items":{"type":"string"}},
      "nick":{"type":["string","null"],"maxLength":3},
      "age":{"type":["integer","null"],"minimum":0}},
      "required":["user","tags","nick","age"],"additionalProperties":false})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"user":{"name":"a"},"tags":["x"],"nick":"abc","age":3})").sentence);
  EXPECT_TRUE(Check(g, R"({"user":null,"tags":null,"nick":null,"age":null})").sentence);
  EXPECT_FALSE(Check(g, R"({"user":{})").prefix);
  EXPECT_FALSE(Check(g, R"({"user":null,"tags":[1)").prefix);
  EXPECT_FALSE(Check(g, R"({"user":null,"tags":null,"nick":"abcd)").prefix);
  EXPECT_FALSE(Check(g, R"({"user":null,"tags":null,"nick":null,"age":-)").prefix);
  // Any JSON value written as a type list.
  g = Compile(R"({"type":["object","array","string","number","boolean","null"],
      "additionalProperties":{"$ref":"#"},"items":{"$ref":"#"}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":[1,"x",{"b":null}]})").sentence);
  // A keyword of none of the listed types, and an unknown one, are named.
  EXPECT_NE(ErrorOf(R"({"type":["string","null"],"minimum":1})")
                .find("keyword 'minimum' applies to none of the types in 'type' (string, null)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"type":["string","null"],"pattern":"a"})")
                .find("keyword 'pattern' is not supported"),
            std::string::npos);
}

// Annotations of OpenAPI and tool schemas: format on numbers (int32, double), discriminator,
// x- extensions, contentEncoding; draft 7 tuples; percent-encoded references; deep pydantic.
TEST(JsonSchemaRealTest, AnnotationsTuplesAndEncodedReferences) {
  auto g = Compile(R"({"type":"object","properties":{"n":{"type":"integer","format":"int32"},
      "d":{"type":"number","format":"double"},"b":{"type":"boolean","format":"bool"},
      "s":{"type":"string","x-order":1,"contentEncoding":"base64"}},"required":["n","d","b","s"]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"n":1,"d":2.5,"b":true,"s":"QQ=="})").sentence);
  g = Compile(R"({"$defs":{"Cat":{"properties":{"pet_type":{"const":"cat","type":"string"}},
      "required":["pet_type"],"type":"object"},"Dog":{"properties":{"pet_type":{"const":"dog",
      "type":"string"}},"required":["pet_type"],"type":"object"}},"properties":{"pet":{
      "discriminator":{"mapping":{"cat":"#/$defs/Cat","dog":"#/$defs/Dog"},
      "propertyName":"pet_type"},"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}]}},
      "required":["pet"],"type":"object"})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"pet":{"pet_type":"dog"}})").sentence);
  g = Compile(R"({"type":"array","items":[{"type":"integer"},{"type":"string"}],
      "additionalItems":false})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"([1,"a"])").sentence);
  EXPECT_FALSE(Check(g, R"(["a")").prefix);
  // Prefix items past minItems may be left out (the recursive one was "no finite value").
  g = Compile(R"({"type":"array","prefixItems":[{"type":"number"},{"$ref":"#"}],"items":false,
      "maxItems":2})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "[]").sentence);
  EXPECT_TRUE(Check(g, "[1]").sentence);
  EXPECT_TRUE(Check(g, "[1,[2,[]]]").sentence);
  EXPECT_FALSE(Check(g, "[1,2").prefix);
  g = Compile(R"({"type":"array","prefixItems":[{"type":"number"},{"type":"string"}],
      "minItems":1,"items":{"type":"boolean"}})");
  ASSERT_TRUE(g);
  EXPECT_FALSE(Check(g, "[]").sentence);
  EXPECT_TRUE(Check(g, "[1]").sentence);
  EXPECT_TRUE(Check(g, R"([1,"a",true,false])").sentence);
  EXPECT_FALSE(Check(g, "[1,true").prefix);  // extra items come after every prefix item
  std::string many = R"({"type":"array","prefixItems":[)";
  for (int i = 0; i < 1000; ++i) many += (i ? "," : "") + std::string(R"({"type":"integer"})");
  many += "]}";
  EXPECT_TRUE(Compile(many));
  g = Compile(R"({"$defs":{"My Model":{"type":"boolean"}},"$ref":"#/$defs/My%20Model"})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "false").sentence);
  // 40 nested Optional[Model] (three sub-schemas each): 120 levels, under the 256 bound.
  json defs = json::object();
  defs["M0"] = json::parse(R"({"type":"object","properties":{"v":{"type":"integer"}},
      "required":["v"]})");
  for (int k = 1; k < 40; ++k) {
    defs["M" + std::to_string(k)] = {
        {"type", "object"},
        {"properties",
         {{"v", {{"type", "integer"}}},
          {"child",
           {{"anyOf",
             json::array({{{"$ref", "#/$defs/M" + std::to_string(k - 1)}}, {{"type", "null"}}})},
            {"default", nullptr}}}}},
        {"required", json::array({"v"})}};
  }
  const json deep = {{"$defs", defs}, {"$ref", "#/$defs/M39"}};
  EXPECT_TRUE(Compile(deep.dump()));
}

// From a second helper's attack on the code above (2026-12-07).
TEST(JsonSchemaRealTest, SecondAttack) {
  // The keywords beside a $ref inside an allOf part were dropped (b was never generated).
  auto g = Compile(R"({"allOf":[{"$ref":"#/$defs/A","required":["b"],
      "properties":{"b":{"type":"integer"}}},{"properties":{"c":{"type":"string"}},
      "required":["c"]}],"$defs":{"A":{"type":"object","properties":{"a":{"type":"string"}},
      "required":["a"]}}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":"x","b":1,"c":"y"})").sentence);
  EXPECT_FALSE(Check(g, R"({"a":"x","c":"y"})").sentence);
  // additionalProperties false in one part: the other parts' properties may not appear.
  EXPECT_NE(ErrorOf(R"({"allOf":[{"type":"object","properties":{"a":{"type":"string"}},
      "additionalProperties":false},{"properties":{"b":{"type":"integer"}},"required":["b"]}]})")
                .find("no value satisfies the schema"),
            std::string::npos);
  g = Compile(R"({"allOf":[{"type":"object","properties":{"a":{"type":"string"}},
      "additionalProperties":false},{"properties":{"b":{"type":"integer"}}}]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":"x"})").sentence);
  EXPECT_FALSE(Check(g, R"({"b)").prefix);
  // Length bounds beside a format: kept when every value of the format meets them.
  EXPECT_NE(ErrorOf(R"({"type":"string","format":"date","maxLength":3})")
                .find("beside format 'date' (its values have 10 characters)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"type":"string","format":"uuid","minLength":40})").find("36 characters"),
            std::string::npos);
  EXPECT_TRUE(Compile(R"({"type":"string","format":"date","minLength":10,"maxLength":10})"));
  // A recursive reference beside a keyword that validates compiles once (it was copied into
  // itself to the depth bound).
  g = Compile(R"({"type":"object","properties":{"x":{"$ref":"#","type":"object"}}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"x":{"x":{}}})").sentence);
  // One property in two parts with different annotations, or plain keywords of one type.
  g = Compile(R"({"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},
      {"properties":{"a":{"type":"string","description":"the a"}}},
      {"properties":{"a":{"maxLength":2}}}]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"({"a":"xy"})").sentence);
  EXPECT_FALSE(Check(g, R"({"a":"xyz)").prefix);
  EXPECT_NE(ErrorOf(R"({"allOf":[{"type":"string"},{"type":"integer"}]})").find("two values"),
            std::string::npos);
  // Prefix items and a larger minItems: any items fill up (absent items allow any).
  g = Compile(R"({"type":"array","prefixItems":[{"const":1},{"const":2}],"minItems":3})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"([1,2,"x"])").sentence);
  EXPECT_FALSE(Check(g, "[1,2]").sentence);
  // A fragment is percent-decoded before it is split: %2F is a separator.
  g = Compile(R"({"$defs":{"a":{"b":{"type":"null"}}},"$ref":"#/$defs/a%2Fb"})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "null").sentence);
}

// Schemas that took seconds to minutes of CPU: each compiles (or is refused) quickly now. Not a
// timing test: bounds far above the time they take, to catch a quadratic or exponential cost.
TEST(JsonSchemaRealTest, LargeSchemasCompileQuickly) {
  const auto start = std::chrono::steady_clock::now();
  // 200 additional-key names of 100 characters: the names' trie (NewName was quadratic); 500 of
  // them are refused (more than 20,000 bytes of names).
  std::string trie = R"({"type":"object","additionalProperties":true,"properties":{)";
  for (int i = 0; i < 500; ++i) {
    if (i == 200) {
      EXPECT_TRUE(Compile(trie + "}}"));
    }
    std::string name = std::to_string(i * 7919) + std::string(100, static_cast<char>('a' + i % 26));
    trie += std::string(i ? "," : "") + "\"" + name.substr(0, 100) + R"(":{"type":"integer"})";
  }
  trie += "}}";
  EXPECT_NE(ErrorOf(trie).find("more than 20000 bytes in all"), std::string::npos)
      << ErrorOf(trie).substr(0, 300);
  // 4,200 optional properties: refused at compile time (the matcher refused them at the first
  // token, after the request was admitted).
  std::string wide = R"({"type":"object","properties":{)";
  for (int i = 0; i < 4200; ++i) {
    wide += std::string(i ? "," : "") + "\"p" + std::to_string(i) + R"(":{"type":"integer"})";
  }
  wide += "}}";
  EXPECT_NE(ErrorOf(wide).find("more than 2048 properties"), std::string::npos) << ErrorOf(wide);
  // 3,000 anyOf branches beside a property with 100,000 examples (copied per branch).
  std::string examples = "[";
  for (int i = 0; i < 100000; ++i) examples += (i ? ",[" : "[") + std::to_string(i) + "]";
  examples += "]";
  std::string branches = "[";
  for (int i = 0; i < 3000; ++i) branches += (i ? ",{}" : "{}");
  branches += "]";
  const std::string any = R"({"anyOf":)" + branches +
                          R"(,"type":"object","properties":{"a":{"type":"integer","examples":)" +
                          examples + "}}}";
  EXPECT_TRUE(Compile(any));
  // allOf merges over a definition with the same 100,000 examples, 14 levels deep.
  std::string defs = R"({"D":{"properties":{"big":{"type":"string","examples":)" + examples + "}}}";
  for (int i = 0; i < 14; ++i) {
    const std::string n =
        R"({"allOf":[{"$ref":"#/$defs/L)" + std::to_string(i + 1) + R"("},{"$ref":"#/$defs/D"}]})";
    defs += ",\"L" + std::to_string(i) + R"(":{"properties":{"x":)" + n + R"(,"y":)" + n + "}}";
  }
  defs += R"(,"L14":{"type":"object"}})";
  const std::string merge = R"({"$defs":)" + defs + R"(,"$ref":"#/$defs/L0"})";
  const std::string m = ErrorOf(merge);  // compiled or refused (10,000 sub-schemas), quickly
  EXPECT_TRUE(m == "(compiled)" || m.find("10000 sub-schemas") != std::string::npos) << m;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// 20,000 enum values were 20,000 parse stacks after the opening quote: the matcher refused the
// first token of an admitted request ("too ambiguous"). A trie of the values keeps one.
TEST(JsonSchemaRealTest, LargeEnumsAreATrie) {
  std::string values;
  for (int i = 0; i < 20000; ++i) values += (i ? ",\"v" : "\"v") + std::to_string(i) + "\"";
  auto g = Compile(R"({"enum":[)" + values + "]}");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"("v1")").sentence);
  EXPECT_TRUE(Check(g, R"("v12345")").sentence);
  EXPECT_TRUE(Check(g, R"("v19999")").sentence);
  EXPECT_FALSE(Check(g, R"("v20000")").sentence);
  EXPECT_FALSE(Check(g, R"("v0)").sentence);
  g = Compile(R"({"enum":[1,12,123,"é","éa",null,{"k":[1,2]},"x\"y"]})");
  ASSERT_TRUE(g);
  for (const char* ok :
       {"1", "12", "123", R"("é")", R"("éa")", "null", R"({"k":[1,2]})", R"("x\"y")"}) {
    EXPECT_TRUE(Check(g, ok).sentence) << ok;
  }
  EXPECT_FALSE(Check(g, "1234").sentence);
  EXPECT_FALSE(Check(g, R"("éb")").sentence);
}

// format date is a date of the Gregorian calendar (2000-02-30 was generated: the shape only).
TEST(JsonSchemaRealTest, DatesExist) {
  auto g = Compile(R"({"type":"string","format":"date"})");
  ASSERT_TRUE(g);
  for (const char* ok : {"2024-02-29", "2000-02-29", "1600-02-29", "0000-02-29", "2023-02-28",
                         "2023-01-31", "2023-04-30", "2023-12-31", "1999-11-30"}) {
    EXPECT_TRUE(Check(g, std::string("\"") + ok + "\"").sentence) << ok;
  }
  for (const char* bad : {"2023-02-29", "1900-02-29", "2100-02-29", "2000-02-30", "2023-04-31",
                          "2023-11-31", "2023-06-31", "2023-13-01", "2023-00-10", "2023-01-00"}) {
    EXPECT_FALSE(Check(g, std::string("\"") + bad + "\"").sentence) << bad;
  }
  g = Compile(R"({"type":"string","format":"date-time"})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, R"("2024-02-29T23:59:59Z")").sentence);
  EXPECT_FALSE(Check(g, R"("2023-02-29T00:00:00Z")").sentence);
}

}  // namespace
}  // namespace unmask::grammar
