// Tool calling: format detection, the template's `tools`, the forcing grammars (checked with the
// GBNF matcher on replies that must and must not match) and reply parsing.
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../grammar/grammar_test_util.h"
#include "tokenizer/chat_template.h"

namespace unmask::chat {
namespace {

using grammar::testing::Check;
using grammar::testing::MustParse;
using ojson = nlohmann::ordered_json;

// A Hermes-style template written for these tests (the shape of Qwen2.5's: the tools as JSON in the
// system turn, calls inside <tool_call> tags, results as <tool_response> in a user turn).
constexpr char kHermesTemplate[] =
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- 'Tools:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\nWrite each call as <tool_call>\\n{\"name\": <name>, \"arguments\": "
    "<object>}\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'assistant' and message.tool_calls %}{{- '<|im_start|>assistant' }}"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}"
    "{%- for call in message.tool_calls %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + call.function.name + '\", \"arguments\": ' }}"
    "{{- call.function.arguments | tojson }}{{- '}\\n</tool_call>' }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + "
    "'\\n</tool_response><|im_end|>\\n' }}"
    "{%- elif not (message.role == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

ToolRequest Weather() {
  ToolRequest r;
  ToolSpec w;
  w.name = "get_weather";
  w.description = "Current weather in a city";
  w.parameters = ojson::parse(R"({"type": "object", "properties": {
      "city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}},
      "required": ["city"]})");
  ToolSpec t;
  t.name = "get_time";
  t.parameters = ojson::object();
  r.tools = {w, t};
  return r;
}

TEST(ToolCallsTest, FormatComesFromTheTemplate) {
  EXPECT_EQ(DetectToolCallFormat(kHermesTemplate), ToolCallFormat::kHermes);
  EXPECT_EQ(DetectToolCallFormat("{% for m in messages %}{{ m.content }}{% endfor %}"),
            ToolCallFormat::kGeneric);
  EXPECT_EQ(DetectToolCallFormat(""), ToolCallFormat::kGeneric);
  EXPECT_STREQ(ToolCallFormatName(ToolCallFormat::kHermes), "hermes");
}

TEST(ToolCallsTest, HermesTemplateRendersToolsCallsAndResults) {
  const ToolRequest tools = Weather();
  const std::string tools_json = ToolsJson(tools);
  std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Weather in Paris?"}};
  ChatMessage call{"assistant", ""};
  call.tool_calls = {{"call_1", "get_weather", R"({"city":"Paris","days":2})"}};
  messages.push_back(call);
  ChatMessage result{"tool", "{\"temp\": 21.5}"};
  result.tool_call_id = "call_1";
  messages.push_back(result);
  ChatTemplateInputs in;
  in.messages = messages;
  in.add_generation_prompt = true;
  in.tools_json = tools_json;
  auto text = RenderChatTemplate(kHermesTemplate, in);
  ASSERT_TRUE(text.ok()) << text.status().message();
  // tojson writes Python's json.dumps (", " and ": " separators, key order kept).
  EXPECT_NE(
      text->find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                 "\"description\": \"Current weather in a city\", \"parameters\": "
                 "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}"),
      std::string::npos)
      << *text;
  EXPECT_NE(text->find("<|im_start|>system\nBe brief.\n\nTools:"), std::string::npos) << *text;
  // The call's arguments reach the template as a mapping (tojson re-serialises it).
  EXPECT_NE(text->find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Paris\", \"days\": 2}}\n</tool_call><|im_end|>"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("<tool_response>\n{\"temp\": 21.5}\n</tool_response>"), std::string::npos);
  EXPECT_TRUE(text->ends_with("<|im_start|>assistant\n"));
  // Without tools the template takes its plain branch.
  in.tools_json.clear();
  auto plain = RenderChatTemplate(kHermesTemplate, in);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("<tools>"), std::string::npos);
}

TEST(ToolCallsTest, HermesRepliesParseIntoCalls) {
  const ToolRequest tools = Weather();
  auto r = ParseToolCalls(ToolCallFormat::kHermes,
                          "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                          "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": "
                          "\"get_time\", \"arguments\": \"{}\"}\n</tool_call>",
                          tools);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(r.calls[1].name, "get_time");
  EXPECT_EQ(r.calls[1].arguments, "{}");  // a string holding JSON is read too
  EXPECT_EQ(r.content, "Let me check.");
  // An unclosed block at the end still counts; an unknown tool or broken JSON stays text.
  r = ParseToolCalls(ToolCallFormat::kHermes,
                     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}", tools);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.content, "");
  const std::string bad =
      "<tool_call>{\"name\": \"launch\", \"arguments\": {}}</tool_call> and "
      "<tool_call>{\"name\": </tool_call>";
  r = ParseToolCalls(ToolCallFormat::kHermes, bad, tools);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, bad);
  r = ParseToolCalls(ToolCallFormat::kHermes, "Paris is sunny.", tools);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "Paris is sunny.");
}

TEST(ToolCallsTest, GenericRepliesParseIntoCallsOrContent) {
  const ToolRequest tools = Weather();
  auto r = ParseToolCalls(
      ToolCallFormat::kGeneric,
      R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}]})",
      tools);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Oslo\",\"days\":3}");
  r = ParseToolCalls(ToolCallFormat::kGeneric, R"({"response": "Hello!"})", tools);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "Hello!");
  r = ParseToolCalls(ToolCallFormat::kGeneric, R"({"tool_calls": [{"name": "get_w)", tools);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, R"({"tool_calls": [{"name": "get_w)");  // cut by max_tokens: as is
  // Cut after complete calls: those calls, the cut one dropped.
  r = ParseToolCalls(ToolCallFormat::kGeneric,
                     R"({"tool_calls": [{"name": "get_time", "arguments": {}}, )"
                     R"({"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "get_w)",
                     tools);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallsTest, StreamingHoldsBackWhatMayStartACall) {
  EXPECT_EQ(StreamableContentLength(ToolCallFormat::kHermes, "Hello"), 5u);
  EXPECT_EQ(StreamableContentLength(ToolCallFormat::kHermes, "Hello <tool"), 6u);
  EXPECT_EQ(StreamableContentLength(ToolCallFormat::kHermes, "Hi <tool_call>\n{"), 3u);
  EXPECT_EQ(StreamableContentLength(ToolCallFormat::kHermes, "a < b"), 5u);
  EXPECT_EQ(StreamableContentLength(ToolCallFormat::kGeneric, "{\"response\""), 0u);
}

TEST(ToolCallsTest, RequiredHermesGrammarForcesAWellFormedCall) {
  ToolRequest tools = Weather();
  tools.choice = ToolChoice::kRequired;
  auto gbnf = ToolCallGrammar(ToolCallFormat::kHermes, tools);
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  auto g = MustParse(*gbnf);
  ASSERT_NE(g, nullptr) << *gbnf;
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
      "\"celsius\", \"days\": 3}}\n</tool_call>";
  EXPECT_TRUE(Check(g, call).sentence);
  EXPECT_TRUE(Check(g, call + "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n"
                              "</tool_call>")
                  .sentence);  // parallel calls
  // At most 8 calls in one reply.
  std::string eight;
  const std::string time_call =
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  for (int k = 0; k < 8; ++k) eight += (k ? "\n" : "") + time_call;
  EXPECT_TRUE(Check(g, eight).sentence);
  EXPECT_FALSE(Check(g, eight + "\n<").prefix);
  EXPECT_FALSE(Check(g, "Sure! " + call).prefix);  // no text before a required call
  EXPECT_FALSE(Check(g, "<tool_call>\n{\"name\": \"launch\"").prefix);  // unknown tool
  EXPECT_FALSE(Check(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 9")
                   .prefix);  // out of the schema's range
  EXPECT_FALSE(Check(g,
                     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": "
                     "\"kelvin\"")
                   .prefix);
  // Auto leaves a Hermes reply free.
  tools.choice = ToolChoice::kAuto;
  auto free = ToolCallGrammar(ToolCallFormat::kHermes, tools);
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(*free, "");
}

TEST(ToolCallsTest, NamedAndSequentialChoicesNarrowTheGrammar) {
  ToolRequest tools = Weather();
  tools.choice = ToolChoice::kNamed;
  tools.named = "get_time";
  tools.parallel = false;
  auto gbnf = ToolCallGrammar(ToolCallFormat::kGeneric, tools);
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  auto g = MustParse(*gbnf);
  ASSERT_NE(g, nullptr) << *gbnf;
  EXPECT_TRUE(Check(g, R"({"tool_calls": [{"name": "get_time", "arguments": {}}]})").sentence);
  EXPECT_FALSE(Check(g, R"({"tool_calls": [{"name": "get_weather")").prefix);
  EXPECT_FALSE(Check(g, R"({"response": "hi"})").prefix);
  EXPECT_FALSE(Check(g, R"({"tool_calls": [{"name": "get_time", "arguments": {}}, )").prefix);
}

TEST(ToolCallsTest, GenericAutoGrammarAllowsAnAnswer) {
  const ToolRequest tools = Weather();
  auto gbnf = ToolCallGrammar(ToolCallFormat::kGeneric, tools);
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  auto g = MustParse(*gbnf);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Check(g, R"({"response": "It is \"sunny\"."})").sentence);
  EXPECT_TRUE(
      Check(g, R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]})")
          .sentence);
  EXPECT_FALSE(Check(g, "Hello").prefix);
  // None: no grammar at all.
  ToolRequest none = tools;
  none.choice = ToolChoice::kNone;
  EXPECT_EQ(*ToolCallGrammar(ToolCallFormat::kGeneric, none), "");
}

TEST(ToolCallsTest, ParametersWithDefsAndBadSchemas) {
  ToolRequest r;
  ToolSpec t;
  t.name = "add_item";
  t.parameters =
      ojson::parse(R"({"type": "object", "properties": {"item": {"$ref": "#/$defs/item"}},
      "required": ["item"], "$defs": {"item": {"type": "object", "properties":
      {"sku": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["sku", "qty"]}}})");
  r.tools = {t};
  r.choice = ToolChoice::kRequired;
  auto gbnf = ToolCallGrammar(ToolCallFormat::kGeneric, r);
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  auto g = MustParse(*gbnf);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(
      Check(
          g,
          R"({"tool_calls": [{"name": "add_item", "arguments": {"item": {"sku": "A1", "qty": 2}}}]})")
          .sentence);
  r.tools[0].parameters = ojson::parse(
      R"({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]+$"}}})");
  auto bad = ToolCallGrammar(ToolCallFormat::kGeneric, r);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tool 'add_item'"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("pattern"), std::string::npos);
  // References into the parameters keep their meaning: "#" is the parameters' own root
  // (recursion), "#/properties/x" one of their properties.
  r.tools[0].parameters = ojson::parse(R"({"type": "object", "properties": {
      "x": {"type": "integer"}, "y": {"$ref": "#/properties/x"}, "next": {"$ref": "#"}}})");
  gbnf = ToolCallGrammar(ToolCallFormat::kGeneric, r);
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  g = MustParse(*gbnf);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Check(g, R"({"tool_calls": [{"name": "add_item", "arguments": {"x": 1, "y": 2,)"
                       R"( "next": {"y": 3}}}]})")
                  .sentence);
  EXPECT_FALSE(
      Check(g, R"({"tool_calls": [{"name": "add_item", "arguments": {"x": 1, "y": "a")").prefix);
  // Arguments are an object: another type is refused by name.
  r.tools[0].parameters = ojson::parse(R"({"type": "string"})");
  auto not_object = ToolCallGrammar(ToolCallFormat::kGeneric, r);
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("object schema"), std::string::npos);
  // A remote reference: the compiler's own message.
  r.tools[0].parameters =
      ojson::parse(R"({"type": "object", "properties": {"a": {"$ref": "http://x/s.json"}}})");
  auto remote = ToolCallGrammar(ToolCallFormat::kGeneric, r);
  ASSERT_FALSE(remote.ok());
  EXPECT_NE(remote.status().message().find("not local"), std::string::npos)
      << remote.status().message();
}

TEST(ToolCallsTest, HermesCallsEndWhereTheirJsonEnds) {
  ToolRequest tools = Weather();
  // A closing tag inside a JSON string is text of the arguments.
  auto r = ParseToolCalls(ToolCallFormat::kHermes,
                          "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                          "\"x</tool_call>y\"}}\n</tool_call>",
                          tools);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"x</tool_call>y"})");
  EXPECT_EQ(r.content, "");
  // Text between the object and the closing tag: not a call.
  const std::string odd =
      "<tool_call>{\"name\": \"get_time\", \"arguments\": {}} extra</tool_call>";
  r = ParseToolCalls(ToolCallFormat::kHermes, odd, tools);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, odd);
  // parallel_tool_calls false: the first call only.
  tools.parallel = false;
  r = ParseToolCalls(ToolCallFormat::kHermes,
                     "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>"
                     "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
                     tools);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_time");
  r = ParseToolCalls(ToolCallFormat::kGeneric,
                     R"({"tool_calls": [{"name": "get_time", "arguments": {}},)"
                     R"( {"name": "get_time", "arguments": {}}]})",
                     tools);
  EXPECT_EQ(r.calls.size(), 1u);
}

TEST(ToolCallsTest, HistoryIsReplayedWithoutTools) {
  ChatMessage call{"assistant", "Let me check."};
  call.tool_calls = {{"call_1", "get_time", "{}"}};
  ChatMessage result{"tool", "12:00"};
  result.tool_call_id = "call_1";
  const std::vector<ChatMessage> messages = {{"user", "Time?"}, call, result};
  EXPECT_TRUE(HasToolHistory(messages));
  EXPECT_FALSE(HasToolHistory(std::vector<ChatMessage>{{"user", "Hi"}}));
  const auto out = ReplayToolHistory(messages);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].content,
            "Let me check.\n{\"tool_calls\":[{\"name\":\"get_time\",\"arguments\":{}}]}");
  EXPECT_EQ(out[2].role, "user");
  // The tool's name comes from the call answered.
  EXPECT_EQ(out[2].content,
            R"({"tool_response":{"name":"get_time","tool_call_id":"call_1","content":"12:00"}})");
  // A JSON result is embedded as JSON.
  ChatMessage json_result{"tool", R"({"temp": 21.5})"};
  json_result.tool_call_id = "call_1";
  const std::vector<ChatMessage> with_json = {call, json_result};
  EXPECT_EQ(
      ReplayToolHistory(with_json)[1].content,
      R"({"tool_response":{"name":"get_time","tool_call_id":"call_1","content":{"temp":21.5}}})");
}

TEST(ToolCallsTest, GenericMessagesDescribeToolsAndReplayCalls) {
  const ToolRequest tools = Weather();
  std::vector<ChatMessage> messages = {{"user", "Weather in Paris?"}};
  ChatMessage call{"assistant", ""};
  call.tool_calls = {{"call_1", "get_weather", R"({"city": "Paris"})"}};
  messages.push_back(call);
  ChatMessage result{"tool", "sunny"};
  result.tool_call_id = "call_1";
  messages.push_back(result);
  const auto out = GenericToolMessages(messages, tools);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].role, "system");
  EXPECT_NE(out[0].content.find("\"name\":\"get_weather\""), std::string::npos) << out[0].content;
  EXPECT_NE(out[0].content.find("{\"response\""), std::string::npos);
  EXPECT_EQ(out[2].role, "assistant");
  EXPECT_EQ(out[2].content,
            R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]})");
  EXPECT_EQ(out[3].role, "user");
  EXPECT_EQ(
      out[3].content,
      R"({"tool_response":{"name":"get_weather","tool_call_id":"call_1","content":"sunny"}})");
  // A system message gets the instructions appended; required drops the "response" form.
  ToolRequest required = tools;
  required.choice = ToolChoice::kRequired;
  const std::vector<ChatMessage> with_system = {{"system", "Be brief."}, {"user", "Hi"}};
  const auto out2 = GenericToolMessages(with_system, required);
  ASSERT_EQ(out2.size(), 2u);
  EXPECT_TRUE(out2[0].content.starts_with("Be brief.\n\nTools (name,"));
  EXPECT_EQ(out2[0].content.find("{\"response\""), std::string::npos);
}

}  // namespace
}  // namespace unmask::chat
