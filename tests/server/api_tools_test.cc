// Tool-calling request fields (tools/server/api_tools.h): tools, tool_choice, parallel_tool_calls
// and the tool fields of messages, each malformed form refused with a 400 naming it.
#include "server/api_tools.h"

#include <gtest/gtest.h>

#include <string>

namespace unmask::server {
namespace {

constexpr char kUser[] = R"("messages":[{"role":"user","content":"Weather in Paris?"}])";
constexpr char kTools[] =
    R"("tools":[{"type":"function","function":{"name":"get_weather","description":"Weather",
    "parameters":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},
    "required":["zeta"]}}},{"type":"function","function":{"name":"get_time"}}])";

std::optional<ApiError> Chat(const std::string& fields, ApiRequest* out = nullptr) {
  ApiRequest r;
  return ParseApiRequest("{\"model\":\"m\"," + fields + "}", true, out ? out : &r);
}

TEST(ApiToolsTest, ToolsAndChoicesAreRead) {
  ApiRequest r;
  ASSERT_FALSE(Chat(std::string(kUser) + "," + kTools, &r));
  ASSERT_TRUE(r.tools);
  ASSERT_EQ(r.tools->tools.size(), 2u);
  EXPECT_EQ(r.tools->tools[0].name, "get_weather");
  EXPECT_EQ(r.tools->tools[0].description, "Weather");
  // The schema keeps the body's key order (arguments are generated in that order).
  EXPECT_EQ(r.tools->tools[0].parameters["properties"].begin().key(), "zeta");
  EXPECT_TRUE(r.tools->tools[1].parameters.empty());
  EXPECT_EQ(r.tools->choice, chat::ToolChoice::kAuto);
  EXPECT_TRUE(r.tools->parallel);
  ASSERT_FALSE(Chat(std::string(kUser) + "," + kTools +
                        R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}},
                        "parallel_tool_calls":false)",
                    &r));
  EXPECT_EQ(r.tools->choice, chat::ToolChoice::kNamed);
  EXPECT_EQ(r.tools->named, "get_time");
  EXPECT_FALSE(r.tools->parallel);
  ASSERT_FALSE(Chat(std::string(kUser) + "," + kTools + R"(,"tool_choice":"required")", &r));
  EXPECT_EQ(r.tools->choice, chat::ToolChoice::kRequired);
  // "none" and an empty list: no tools at all.
  ASSERT_FALSE(Chat(std::string(kUser) + "," + kTools + R"(,"tool_choice":"none")", &r));
  EXPECT_FALSE(r.tools);
  ASSERT_FALSE(Chat(std::string(kUser) + R"(,"tools":[],"tool_choice":"auto")", &r));
  EXPECT_FALSE(r.tools);
}

TEST(ApiToolsTest, MalformedToolsAreRefusedByName) {
  const std::string tool = R"({"type":"function","function":{"name":"f"}})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("tools":{})", "tools"},
      {R"("tools":[3])", "tools[0]"},
      {R"("tools":[{"type":"retrieval"}])", "tools[0].type"},
      {R"("tools":[{"type":"function"}])", "tools[0].function"},
      {R"("tools":[{"type":"function","function":{"name":"a b"}}])", "tools[0].function.name"},
      {R"("tools":[{"type":"function","function":{"name":"f","parameter":{}}}])",
       "tools[0].function.parameter"},
      {R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])",
       "tools[0].function.parameters"},
      {R"("tools":[{"type":"function","function":{"name":"f","description":1}}])",
       "tools[0].function.description"},
      {R"("tools":[{"type":"function","function":{"name":"f"},"extra":1}])", "tools[0].extra"},
      {"\"tools\":[" + tool + "," + tool + "]", "tools[1].function.name"},
      {"\"tools\":[" + tool + "],\"tool_choice\":\"sometimes\"", "tool_choice"},
      {"\"tools\":[" + tool + "],\"tool_choice\":{\"type\":\"function\"}", "tool_choice"},
      {"\"tools\":[" + tool +
           "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}",
       "tool_choice"},
      {R"("tool_choice":"required")", "tool_choice"},
      {"\"tools\":[" + tool + "],\"parallel_tool_calls\":1", "parallel_tool_calls"},
      {"\"tools\":[" + tool +
           "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"},\"x\":1}",
       "tool_choice.x"},
      {"\"tools\":[" + tool +
           "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\",\"x\":1}}",
       "tool_choice.function.x"},
      {R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}])",
       "tools[0].function.parameters"},
  };
  for (const auto& [fields, param] : cases) {
    const auto e = Chat(std::string(kUser) + "," + fields);
    ASSERT_TRUE(e) << fields;
    EXPECT_EQ(e->status, 400) << fields;
    EXPECT_EQ(e->param, param) << fields << ": " << e->message;
  }
  // A near miss is named.
  const auto e = Chat(std::string(kUser) +
                      R"(,"tools":[{"type":"function","function":{"name":"f","parameter":{}}}])");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("did you mean 'parameters'"), std::string::npos) << e->message;
  // Completions take no tools.
  ApiRequest r;
  // Completions take no tools; their neutral values (no tools, none, auto) are accepted.
  for (const std::string& field :
       {"\"tools\":[" + tool + "]", std::string("\"tool_choice\":\"required\"")}) {
    const auto c = ParseApiRequest(R"({"model":"m","prompt":"x",)" + field + "}", false, &r);
    ASSERT_TRUE(c) << field;
    EXPECT_EQ(c->code, "unsupported_parameter") << field;
  }
  EXPECT_FALSE(ParseApiRequest(
      R"({"model":"m","prompt":"x","tools":[],"tool_choice":"auto","parallel_tool_calls":false})",
      false, &r));
}

TEST(ApiToolsTest, MessagesCarryToolCallsAndResults) {
  ApiRequest r;
  ASSERT_FALSE(Chat(R"("messages":[{"role":"user","content":"Weather?"},
      {"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_1",
       "type":"function","function":{"name":"get_weather","arguments":"{\"zeta\":\"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","name":"get_weather","content":"sunny"}])",
                    &r));
  ASSERT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, "{\"zeta\":\"Paris\"}");
  EXPECT_EQ(r.messages[1].content, "");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(r.messages[2].name, "get_weather");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"role":"user","contents":"x"})", "messages[0].contents"},
      {R"({"role":"tool","content":"x"})", "messages[0].tool_call_id"},
      {R"({"role":"tool","content":"x","tool_call_id":5})", "messages[0].tool_call_id"},
      {R"({"role":"user","content":"x","tool_calls":[{"function":{"name":"f"}}]})",
       "messages[0].tool_calls"},
      {R"({"role":"assistant","tool_calls":{}})", "messages[0].tool_calls"},
      {R"({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"not json"}}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"role":"assistant","tool_calls":[{"function":{"arguments":"{}"}}]})",
       "messages[0].tool_calls[0].function"},
      {R"({"role":"assistant","tool_calls":[{"type":"code","function":{"name":"f"}}]})",
       "messages[0].tool_calls[0].type"},
      {R"({"role":"assistant","content":"x","refusal":"no"})", "messages[0].refusal"},
      {R"({"role":"user","content":"x","name":3})", "messages[0].name"},
      {R"({"role":"user","content":"x","tool_call_id":"call_1"})", "messages[0].tool_call_id"},
  };
  for (const auto& [message, param] : cases) {
    const auto e = Chat("\"messages\":[" + message + "]");
    ASSERT_TRUE(e) << message;
    EXPECT_EQ(e->status, 400) << message;
    EXPECT_EQ(e->param, param) << message << ": " << e->message;
  }
  const auto e = Chat(R"("messages":[{"role":"user","contents":"x"}])");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("did you mean 'content'"), std::string::npos) << e->message;
}

}  // namespace
}  // namespace unmask::server
