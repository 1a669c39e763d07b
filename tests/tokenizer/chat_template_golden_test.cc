// Real chat templates (tests/data/chat_templates) rendered byte for byte as Jinja2 renders them
// under transformers' settings, for conversations with tools, tool calls and tool results
// (goldens.json, written by scripts/make_chat_template_goldens.py from Jinja2 itself).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.h"
#include "tokenizer/chat_template.h"

namespace unmask {
namespace {

using ojson = nlohmann::ordered_json;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The messages of a case as the server reads them: tool-call arguments as JSON text.
std::vector<ChatMessage> Messages(const ojson& c) {
  std::vector<ChatMessage> out;
  for (const ojson& m : c.at("messages")) {
    ChatMessage msg{m.at("role").get<std::string>(), m.value("content", std::string())};
    msg.tool_call_id = m.value("tool_call_id", std::string());
    if (m.contains("tool_calls")) {
      for (const ojson& call : m.at("tool_calls")) {
        msg.tool_calls.push_back({call.at("id").get<std::string>(),
                                  call.at("function").at("name").get<std::string>(),
                                  call.at("function").at("arguments").dump()});
      }
    }
    out.push_back(std::move(msg));
  }
  return out;
}

TEST(ChatTemplateGoldenTest, ToolConversationsMatchJinja2) {
  const std::string path = testing::TestDataPath("chat_templates/goldens.json");
  const ojson doc = ojson::parse(ReadText(path), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << path;
  int checked = 0;
  for (const ojson& g : doc.at("goldens")) {
    const std::string name = g.at("template").get<std::string>();
    const std::string case_name = g.at("case").get<std::string>();
    const ojson& c = doc.at("cases").at(case_name);
    const std::string source = ReadText(testing::TestDataPath("chat_templates/" + name));
    const std::vector<ChatMessage> messages = Messages(c);
    ChatTemplateInputs in;
    in.messages = messages;
    in.add_generation_prompt = true;
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    if (c.contains("tools")) in.tools_json = c.at("tools").dump();
    auto text = RenderChatTemplate(source, in);
    if (g.contains("error")) {
      EXPECT_FALSE(text.ok()) << name << " " << case_name;
      if (!text.ok()) {
        EXPECT_NE(text.status().message().find(g.at("error").get<std::string>()), std::string::npos)
            << text.status().message();
      }
    } else {
      ASSERT_TRUE(text.ok()) << name << " " << case_name << ": " << text.status().message();
      EXPECT_EQ(*text, g.at("text").get<std::string>()) << name << " " << case_name;
    }
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

}  // namespace
}  // namespace unmask
