// Structured-output request fields (tools/server/api_constraint.h): every accepted spelling
// (OpenAI, llama-server, vLLM) compiles to a grammar that accepts exactly the texts it should,
// schema property order is kept, and each malformed or unsupported form is a 400 naming the field.
#include "server/api_constraint.h"

#include <gtest/gtest.h>

#include "grammar/matcher.h"

namespace unmask::server {
namespace {

// Whether the constraint's grammar accepts `text` as a complete sentence.
bool Accepts(const OutputConstraint& c, const std::string& text) {
  grammar::Matcher m(c.grammar);
  grammar::Utf8Partial partial;
  const grammar::StateId s = m.AdvanceBytes(m.initial(), text, &partial);
  return s != grammar::kDead && partial.need == 0 && m.CanEnd(s);
}

OutputConstraint Constraint(const std::string& fields, bool chat = false) {
  const std::string body =
      chat ? R"({"model":"m","messages":[{"role":"user","content":"x"}],)" + fields + "}"
           : R"({"model":"m","prompt":"x",)" + fields + "}";
  ApiRequest r;
  const auto e = ParseApiRequest(body, chat, &r);
  EXPECT_FALSE(e) << body << ": " << (e ? e->message : "");
  EXPECT_TRUE(r.constraint.has_value()) << body;
  return r.constraint.value_or(OutputConstraint{});
}

TEST(ApiConstraintTest, EverySpellingCompiles) {
  const OutputConstraint object = Constraint(R"("response_format":{"type":"json_object"})", true);
  EXPECT_EQ(object.field, "response_format");
  EXPECT_EQ(object.kind, "json_object");
  EXPECT_TRUE(Accepts(object, R"({"a": [1, 2.5, "x\"y"], "b": {"c": null}})"));
  EXPECT_FALSE(Accepts(object, "[1]"));  // JSON mode is an object
  EXPECT_FALSE(Accepts(object, "{\"a\": 1"));

  const std::string schema =
      R"({"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{"enum":["x","y"]}},
          "required":["zeta","alpha"]})";
  const OutputConstraint openai = Constraint(
      R"("response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,
          "schema":)" +
      schema + "}}");
  EXPECT_EQ(openai.kind, "json_schema");
  // Declaration order (zeta before alpha) is kept: nlohmann::json alone would sort the keys.
  EXPECT_TRUE(Accepts(openai, R"({"zeta": 3, "alpha": "y"})"));
  EXPECT_FALSE(Accepts(openai, R"({"alpha": "y", "zeta": 3})"));
  EXPECT_FALSE(Accepts(openai, R"({"zeta": 3, "alpha": "z"})"));
  for (const std::string f : {"json_schema", "guided_json"}) {
    const OutputConstraint c = Constraint("\"" + f + "\":" + schema);
    EXPECT_EQ(c.field, f);
    EXPECT_TRUE(Accepts(c, R"({"zeta":-1,"alpha":"x"})")) << f;
  }
  // vLLM also takes the schema as JSON text.
  const OutputConstraint text =
      Constraint(R"("guided_json":"{\"type\":\"array\",\"items\":{\"type\":\"boolean\"}}")");
  EXPECT_TRUE(Accepts(text, "[true, false]"));
  EXPECT_FALSE(Accepts(text, "[1]"));
  // llama-server: response_format json_object with a schema.
  const OutputConstraint ls =
      Constraint(R"("response_format":{"type":"json_object","schema":{"type":"string"}})");
  EXPECT_TRUE(Accepts(ls, "\"hi\""));
  EXPECT_FALSE(Accepts(ls, "{}"));

  for (const std::string f : {"grammar", "guided_grammar"}) {
    const OutputConstraint g = Constraint("\"" + f + R"(":"root ::= \"yes\" | \"no\"")");
    EXPECT_EQ(g.kind, "grammar");
    EXPECT_TRUE(Accepts(g, "yes"));
    EXPECT_FALSE(Accepts(g, "maybe"));
  }
  const OutputConstraint choice = Constraint(R"("guided_choice":["red","green","a \"b\""])");
  EXPECT_EQ(choice.kind, "choice");
  EXPECT_TRUE(Accepts(choice, "green"));
  EXPECT_TRUE(Accepts(choice, "a \"b\""));
  EXPECT_FALSE(Accepts(choice, "blue"));

  // Text, and vLLM's backend name, constrain nothing.
  ApiRequest r;
  EXPECT_FALSE(ParseApiRequest(R"({"model":"m","prompt":"x","response_format":{"type":"text"},
      "guided_decoding_backend":"xgrammar"})",
                               false, &r));
  EXPECT_FALSE(r.constraint.has_value());
}

TEST(ApiConstraintTest, BadFormsAreA400NamingTheField) {
  struct Case {
    std::string fields, param, code;
  };
  const std::vector<Case> cases = {
      {R"("response_format":"json")", "response_format", ""},
      {R"("response_format":{"type":"yaml"})", "response_format", ""},
      {R"("response_format":{"type":"text","schema":{}})", "response_format.schema",
       "unknown_parameter"},
      {R"("response_format":{"type":"json_schema"})", "response_format.json_schema", ""},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"n"}})",
       "response_format.json_schema.schema", ""},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":1,"schema":{}}})",
       "response_format.json_schema.name", ""},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{},"extra":1}})",
       "response_format.json_schema.extra", "unknown_parameter"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":
          {"type":"string","pattern":"^a+$"}}})",
       "response_format.json_schema.schema", "unsupported_parameter"},
      {R"("json_schema":5)", "json_schema", ""},
      {R"("guided_json":"{not json")", "guided_json", ""},
      {R"("guided_json":{"type":"number","multipleOf":2})", "guided_json", "unsupported_parameter"},
      {R"("guided_json":{"$ref":"#"})", "guided_json", "unsupported_parameter"},
      {R"("guided_json":{"allOf":[{"properties":5}]})", "guided_json", "unsupported_parameter"},
      {R"("grammar":"")", "grammar", ""},
      {R"("grammar":"root ::= undefined-rule")", "grammar", ""},
      {R"("guided_grammar":"root ::= (")", "guided_grammar", ""},
      {R"("guided_choice":[])", "guided_choice", ""},
      {R"("guided_choice":["a",1])", "guided_choice", ""},
      {R"("guided_regex":"a+")", "guided_regex", "unsupported_parameter"},
      {R"("guided_whitespace_pattern":" ")", "guided_whitespace_pattern", "unsupported_parameter"},
      {R"("guided_decoding_backend":3)", "guided_decoding_backend", ""},
      {R"("response_format":{"type":"json_object"},"grammar":"root ::= \"a\"")", "grammar", ""},
      {R"("guided_json":{},"guided_choice":["a"])", "guided_choice", ""},
  };
  for (const Case& c : cases) {
    const std::string body = R"({"model":"m","prompt":"x",)" + c.fields + "}";
    ApiRequest r;
    const auto e = ParseApiRequest(body, false, &r);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400) << body;
    EXPECT_EQ(e->param, c.param) << body << ": " << e->message;
    EXPECT_EQ(e->code, c.code) << body << ": " << e->message;
    EXPECT_FALSE(e->message.empty());
  }
  // A grammar error says where.
  ApiRequest r;
  const auto e =
      ParseApiRequest(R"({"model":"m","prompt":"x","grammar":"root ::= \"a\" |\n  ("})", false, &r);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("line 2"), std::string::npos) << e->message;
}

}  // namespace
}  // namespace unmask::server
