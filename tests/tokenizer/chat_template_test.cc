// Chat template renderer: real model templates against their documented formats, every supported
// construct, and every error path.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.h"

namespace unmask {
namespace {

const std::vector<ChatMessage>& Conversation() {
  static const std::vector<ChatMessage> kConversation = {
      {"system", "You are a helpful assistant"},
      {"user", "Hello"},
      {"assistant", "Hi there"},
      {"user", "Who are you"},
      {"assistant", "   I am an assistant   "},
      {"user", "Another question"},
  };
  return kConversation;
}

std::span<const ChatMessage> WithoutSystem() {
  return std::span<const ChatMessage>(Conversation()).subspan(1);
}

std::string ReadTemplate(const std::string& name) {
  std::ifstream in(testing::TestDataPath("chat_templates/" + name), std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

StatusOr<std::string> Render(std::string_view source, std::span<const ChatMessage> messages,
                             bool add_generation_prompt = true, std::string bos = "<s>",
                             std::string eos = "</s>") {
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.bos_token = std::move(bos);
  inputs.eos_token = std::move(eos);
  return RenderChatTemplate(source, inputs);
}

// Renders a template that does not use the conversation.
std::string R(std::string_view source) {
  auto out = Render(source, {});
  EXPECT_TRUE(out.ok()) << source << " -> " << out.status().ToString();
  return out.ok() ? *out : "<error: " + out.status().ToString() + ">";
}

Status E(std::string_view source) {
  auto out = Render(source, Conversation());
  EXPECT_FALSE(out.ok()) << source << " rendered as '" << (out.ok() ? *out : "") << "'";
  return out.status();
}

// ---- real templates ----

// Llama 3 format (Meta model card): <|begin_of_text|> then per message
// <|start_header_id|>{role}<|end_header_id|>\n\n{content, stripped}<|eot_id|>.
std::string Llama3Turn(std::string_view role, std::string_view content) {
  return "<|start_header_id|>" + std::string(role) + "<|end_header_id|>\n\n" +
         std::string(content) + "<|eot_id|>";
}
const char kLlama3Prompt[] = "<|start_header_id|>assistant<|end_header_id|>\n\n";

std::string Llama3Conversation() {
  return Llama3Turn("system", "You are a helpful assistant") + Llama3Turn("user", "Hello") +
         Llama3Turn("assistant", "Hi there") + Llama3Turn("user", "Who are you") +
         Llama3Turn("assistant", "I am an assistant") + Llama3Turn("user", "Another question");
}

TEST(RealTemplatesTest, LladaInstruct) {
  // ALGORITHMS.md §1.11: BOS <|startoftext|> added by the template before the first turn.
  const std::string source = ReadTemplate("llada_8b_instruct.jinja");
  auto out = Render(source, Conversation(), true, "<|startoftext|>", "<|endoftext|>");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "<|startoftext|>" + Llama3Conversation() + kLlama3Prompt);
  auto no_prompt = Render(source, Conversation(), false, "<|startoftext|>", "<|endoftext|>");
  ASSERT_TRUE(no_prompt.ok());
  EXPECT_EQ(*no_prompt, "<|startoftext|>" + Llama3Conversation());
  const std::vector<ChatMessage> single = {{"user", "  What is 2+2?\n"}};
  auto one = Render(source, single, true, "<|startoftext|>", "<|endoftext|>");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, "<|startoftext|>" + Llama3Turn("user", "What is 2+2?") + kLlama3Prompt);
}

TEST(RealTemplatesTest, Llama3Instruct) {
  auto out =
      Render(ReadTemplate("llama3_instruct.jinja"), Conversation(), true, "<|begin_of_text|>");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "<|begin_of_text|>" + Llama3Conversation() + kLlama3Prompt);
}

TEST(RealTemplatesTest, Llama31Instruct) {
  // Llama 3.1 model card: a system turn always comes first, opening with the knowledge cutoff
  // and the date (the template's default "26 Jul 2024"), then the system message.
  const std::string source = ReadTemplate("llama3_1_instruct.jinja");
  const std::string header =
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
  auto out = Render(source, Conversation(), true, "<|begin_of_text|>");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, header + "You are a helpful assistant<|eot_id|>" + Llama3Turn("user", "Hello") +
                      Llama3Turn("assistant", "Hi there") + Llama3Turn("user", "Who are you") +
                      Llama3Turn("assistant", "I am an assistant") +
                      Llama3Turn("user", "Another question") + kLlama3Prompt);
  auto no_system = Render(source, WithoutSystem().first(1), false, "<|begin_of_text|>");
  ASSERT_TRUE(no_system.ok()) << no_system.status().ToString();
  EXPECT_EQ(*no_system, header + "<|eot_id|>" + Llama3Turn("user", "Hello"));
}

// ChatML: <|im_start|>{role}\n{content}<|im_end|>\n per message, prompt <|im_start|>assistant\n.
std::string ChatMl(std::string_view role, std::string_view content) {
  return "<|im_start|>" + std::string(role) + "\n" + std::string(content) + "<|im_end|>\n";
}

std::string ChatMlConversation() {
  return ChatMl("system", "You are a helpful assistant") + ChatMl("user", "Hello") +
         ChatMl("assistant", "Hi there") + ChatMl("user", "Who are you") +
         ChatMl("assistant", "   I am an assistant   ") + ChatMl("user", "Another question");
}

TEST(RealTemplatesTest, ChatMlFamily) {
  struct Case {
    const char* file;
    const char* default_system;
  };
  const Case cases[] = {
      {"qwen2_instruct.jinja", "You are a helpful assistant."},
      {"qwen2_5_instruct.jinja",
       "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."},
      {"smollm2_instruct.jinja",
       "You are a helpful AI assistant named SmolLM, trained by Hugging Face"},
  };
  for (const Case& c : cases) {
    const std::string source = ReadTemplate(c.file);
    auto out = Render(source, Conversation());
    ASSERT_TRUE(out.ok()) << c.file << ": " << out.status().ToString();
    EXPECT_EQ(*out, ChatMlConversation() + "<|im_start|>assistant\n") << c.file;
    // No system message: the template inserts its default one.
    auto no_system = Render(source, WithoutSystem().first(1));
    ASSERT_TRUE(no_system.ok()) << c.file << ": " << no_system.status().ToString();
    EXPECT_EQ(*no_system, ChatMl("system", c.default_system) + ChatMl("user", "Hello") +
                              "<|im_start|>assistant\n")
        << c.file;
    auto no_prompt = Render(source, WithoutSystem().first(2), false);
    ASSERT_TRUE(no_prompt.ok());
    EXPECT_EQ(*no_prompt, ChatMl("system", c.default_system) + ChatMl("user", "Hello") +
                              ChatMl("assistant", "Hi there"))
        << c.file;
  }
}

TEST(RealTemplatesTest, ParsedTemplateRendersRepeatedly) {
  auto tmpl = ChatTemplate::Parse(ReadTemplate("qwen2_instruct.jinja"));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  ChatTemplateInputs inputs;
  inputs.messages = WithoutSystem().first(1);
  inputs.add_generation_prompt = true;
  auto a = tmpl->Render(inputs);
  auto b = tmpl->Render(inputs);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

// ---- constructs ----

TEST(ChatTemplateTest, TextAndOutput) {
  EXPECT_EQ(R(""), "");
  EXPECT_EQ(R("plain text"), "plain text");
  EXPECT_EQ(R("a{{ 'b' }}c"), "abc");
  EXPECT_EQ(R("{{ bos_token }}|{{ eos_token }}"), "<s>|</s>");
  EXPECT_EQ(R("{# a comment #}x{# another {{ }} #}"), "x");
  EXPECT_EQ(R("{{ undefined_name }}"), "");  // default Undefined prints as ""
  EXPECT_EQ(R("{{ none }}{{ true }}{{ False }}{{ 42 }}"), "NoneTrueFalse42");
  EXPECT_EQ(R("{{ [1, 'a', none] }}"), "[1, 'a', None]");
  EXPECT_EQ(R("{{ {'k': 'v'} }}"), "{'k': 'v'}");
}

TEST(ChatTemplateTest, StringLiterals) {
  EXPECT_EQ(R("{{ \"double\" }}{{ 'single' }}"), "doublesingle");
  EXPECT_EQ(R("{{ 'a\\nb\\tc\\\\d\\'e\"f' }}"), "a\nb\tc\\d'e\"f");
  EXPECT_EQ(R("{{ \"it's\" }}"), "it's");
  EXPECT_EQ(R("{{ 'x' 'y' }}"), "xy");  // adjacent literals concatenate
  EXPECT_EQ(R("{{ '\\u00e9\\x41' }}"),
            "\xC3\xA9"
            "A");
  EXPECT_EQ(R("{{ '\\q' }}"), "\\q");  // unknown escapes keep the backslash
  EXPECT_EQ(R("{{ '%}' }}{% if '%}' %}ok{% endif %}"), "%}ok");  // delimiters inside strings
}

TEST(ChatTemplateTest, Concatenation) {
  EXPECT_EQ(R("{{ 'a' + 'b' }}"), "ab");
  EXPECT_EQ(R("{{ 'n=' ~ 3 ~ none }}"), "n=3None");
  EXPECT_EQ(R("{{ [1] + [2] }}"), "[1, 2]");
  EXPECT_EQ(R("{{ '-' * 3 }}"), "---");
}

TEST(ChatTemplateTest, Arithmetic) {
  EXPECT_EQ(R("{{ 1 + 2 * 3 }}"), "7");
  EXPECT_EQ(R("{{ (1 + 2) * 3 }}"), "9");
  EXPECT_EQ(R("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}"), "3 -4 1 2");
  EXPECT_EQ(R("{{ 2 ** 10 }} {{ -3 }} {{ +3 }} {{ 10 - 4 - 3 }}"), "1024 -3 3 3");
  EXPECT_EQ(R("{{ true + 1 }}"), "2");
}

TEST(ChatTemplateTest, Comparisons) {
  EXPECT_EQ(R("{{ 1 == 1 }} {{ 1 != 1 }} {{ 'a' == 'a' }} {{ 'a' == 1 }}"),
            "True False True False");
  EXPECT_EQ(R("{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 'b' >= 'a' }}"), "True True False True");
  EXPECT_EQ(R("{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }}"), "True False");
  EXPECT_EQ(R("{{ none == none }} {{ undefined_x == undefined_y }} {{ [1, 'a'] == [1, 'a'] }}"),
            "True True True");
  EXPECT_EQ(R("{{ true == 1 }}"), "True");
}

TEST(ChatTemplateTest, Logic) {
  EXPECT_EQ(R("{{ true and false }} {{ true or false }} {{ not true }} {{ not none }}"),
            "False True False True");
  EXPECT_EQ(R("{{ 'x' and 'y' }}|{{ '' or 'z' }}|{{ 0 or '' }}"), "y|z|");  // operands returned
  EXPECT_EQ(R("{{ undefined_x or 'fallback' }}"), "fallback");
  EXPECT_EQ(R("{{ not 1 == 2 }}"), "True");  // `not` binds looser than comparisons
}

TEST(ChatTemplateTest, Membership) {
  EXPECT_EQ(R("{{ 'ell' in 'hello' }} {{ 'z' not in 'hello' }}"), "True True");
  EXPECT_EQ(R("{{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'v' in {'k': 'v'} }}"),
            "True True False");
  EXPECT_EQ(R("{{ 'x' in undefined_list }}"), "False");
}

TEST(ChatTemplateTest, Tests) {
  EXPECT_EQ(R("{{ bos_token is defined }} {{ nope is defined }} {{ nope is not defined }}"),
            "True False True");
  EXPECT_EQ(R("{{ nope is undefined }} {{ none is none }} {{ 1 is not none }}"), "True True True");
  EXPECT_EQ(R("{{ 'a' is string }} {{ 1 is number }} {{ 1 is integer }} {{ true is boolean }}"),
            "True True True True");
  EXPECT_EQ(R("{{ {} is mapping }} {{ [] is iterable }} {{ 'a' is sequence }} {{ 1 is iterable }}"),
            "True True True False");
  EXPECT_EQ(R("{{ true is true }} {{ 0 is false }} {{ 4 is even }} {{ 3 is odd }}"),
            "True False True True");
  EXPECT_EQ(R("{{ 9 is divisibleby(3) }} {{ 'a' is eq('a') }} {{ 'a' is equalto 'b' }}"),
            "True True False");
  // `not x is defined` is `not (x is defined)`.
  EXPECT_EQ(R("{{ not nope is defined }}"), "True");
}

TEST(ChatTemplateTest, SubscriptsAndAttributes) {
  EXPECT_EQ(R("{% set d = {'a': {'b': 'deep'}} %}{{ d['a']['b'] }} {{ d.a.b }}"), "deep deep");
  EXPECT_EQ(R("{% set l = ['x', 'y', 'z'] %}{{ l[0] }}{{ l[-1] }}{{ l.1 }}"), "xzy");
  EXPECT_EQ(R("{% set l = ['x'] %}[{{ l[5] }}][{{ {'a': 1}.missing }}]"), "[][]");
  EXPECT_EQ(R("{{ 'h\xC3\xA9llo'[1] }}"), "\xC3\xA9");  // strings index by code point
}

TEST(ChatTemplateTest, Slicing) {
  EXPECT_EQ(R("{% set l = [1, 2, 3, 4] %}{{ l[1:] }}{{ l[:-1] }}{{ l[::-1] }}{{ l[1:3] }}"),
            "[2, 3, 4][1, 2, 3][4, 3, 2, 1][2, 3]");
  EXPECT_EQ(R("{% set l = [1, 2, 3, 4] %}{{ l[::2] }}{{ l[-2:] }}{{ l[5:] }}{{ l[:] }}"),
            "[1, 3][3, 4][][1, 2, 3, 4]");
  EXPECT_EQ(R("{{ 'hello'[1:4] }}{{ 'abc'[::-1] }}"), "ellcba");
}

TEST(ChatTemplateTest, Filters) {
  EXPECT_EQ(R("[{{ '  x y \n' | trim }}]"), "[x y]");
  EXPECT_EQ(R("{{ 'xxhixx' | trim('x') }}"), "hi");
  EXPECT_EQ(
      R("{{ 'abc' | length }} {{ [1, 2] | length }} {{ nope | length }} {{ 'h\xC3\xA9' | count }}"),
      "3 2 0 2");
  EXPECT_EQ(R("{{ 'MiXed' | upper }} {{ 'MiXed' | lower }}"), "MIXED mixed");
  EXPECT_EQ(R("{{ 'hello world' | capitalize }} {{ 'hello world' | title }}"),
            "Hello world Hello World");
  EXPECT_EQ(R("{{ [1, 2, 3] | first }}{{ [1, 2, 3] | last }}{{ [1, 2] | join(', ') }}"), "131, 2");
  EXPECT_EQ(R("{{ nope | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }}"),
            "d  d");
  EXPECT_EQ(R("{{ 3 | string }}{{ 'ab' | list }}{{ [1, 2] | reverse }}{{ 'ab' | reverse }}"),
            "3['a', 'b'][2, 1]ba");
  EXPECT_EQ(R("{% for k, v in {'k': 'v'} | items %}{{ k }}={{ v }}{% endfor %}"
              "{{ 'a-b' | replace('-', '+') }}{{ 'x' | safe }}"),
            "k=va+bx");
  // Filters bind tighter than + (Llama 3: '...' + content | trim + '...').
  EXPECT_EQ(R("{{ '[' + ' x ' | trim + ']' }}"), "[x]");
}

TEST(ChatTemplateTest, Methods) {
  EXPECT_EQ(R("[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}]"),
            "[x][x  ][  x]");
  EXPECT_EQ(R("{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ 'user'.title() }}{{ 'uSER'.capitalize() }}"),
            "ABabUserUser");
  EXPECT_EQ(R("{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }}"), "True True");
  EXPECT_EQ(R("{{ 'a b  c'.split() }}{{ 'a,b'.split(',') }}{{ 'a,b,c'.split(',', 1) }}"),
            "['a', 'b', 'c']['a', 'b']['a', 'b,c']");
  EXPECT_EQ(R("{{ 'aaa'.replace('a', 'b', 2) }} {{ '-'.join(['x', 'y']) }}"), "bba x-y");
  EXPECT_EQ(R("{% set d = {'a': 1} %}{{ d.get('a') }} {{ d.get('b', 'no') }} {{ d.get('c') }}"),
            "1 no None");
  EXPECT_EQ(
      R("{% set d = {'a': 1, 'b': 2} %}{{ d.keys() | join(',') }} {{ d.values() | join(',') }}"
        " {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}"),
      "a,b 1,2 a1b2");
}

TEST(ChatTemplateTest, IfElifElse) {
  const char* t = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(R(std::string("{% set x = 1 %}") + t), "one");
  EXPECT_EQ(R(std::string("{% set x = 2 %}") + t), "two");
  EXPECT_EQ(R(std::string("{% set x = 3 %}") + t), "many");
  EXPECT_EQ(R("{% if false %}no{% endif %}"), "");
  EXPECT_EQ(R("{% if true %}{% if false %}a{% else %}b{% endif %}{% endif %}"), "b");
  EXPECT_EQ(R("{{ 'y' if 1 else 'n' }}{{ 'y' if 0 else 'n' }}[{{ 'y' if 0 }}]"), "yn[]");
}

TEST(ChatTemplateTest, ForLoopVariables) {
  EXPECT_EQ(R("{% for x in ['a', 'b', 'c'] %}{{ loop.index0 }}{{ loop.index }}{{ x }}"
              "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}"
              "{{ loop.revindex0 }};{% endfor %}"),
            "01aTrueFalse332;12bFalseFalse321;23cFalseTrue310;");
  EXPECT_EQ(
      R("{% for x in [1, 2, 3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}|{% endfor %}"),
      "<1>2|1<2>3|2<3>|");
  EXPECT_EQ(R("{% for c in 'h\xC3\xA9' %}[{{ c }}]{% endfor %}"), "[h][\xC3\xA9]");
  EXPECT_EQ(R("{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}"), "ab");
  EXPECT_EQ(R("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=2;");
  EXPECT_EQ(R("{% for x in nope %}never{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(R("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}/{{ loop.length }} {% endfor %}"),
            "2/2 4/2 ");
  EXPECT_EQ(R("{% for x in range(3) %}{{ x }}{% endfor %}{% for x in range(5, 1, -2) %}{{ x }}"
              "{% endfor %}"),
            "01253");
  EXPECT_EQ(R("{{ range(0, 9223372036854775807, 4611686018427387904) }}{{ range(3, 3) }}"),
            "[0, 4611686018427387904][]");
}

TEST(ChatTemplateTest, LoopsOverMessages) {
  auto out = Render(
      "{% for m in messages %}{{ m.role }}:{{ m['content'] }};{% endfor %}"
      "{{ messages | length }}",
      WithoutSystem().first(2));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "user:Hello;assistant:Hi there;2");
}

TEST(ChatTemplateTest, BreakAndContinue) {
  EXPECT_EQ(R("{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "012");
  EXPECT_EQ(R("{% for x in range(5) %}{% if x is odd %}{% continue %}{% endif %}{{ x }}"
              "{% endfor %}"),
            "024");
}

TEST(ChatTemplateTest, SetAndScoping) {
  EXPECT_EQ(R("{% set x = 'a' %}{{ x }}{% set x = x + 'b' %}{{ x }}"), "aab");
  EXPECT_EQ(R("{% set a, b = [1, 2] %}{{ a }}{{ b }}"), "12");
  // Assignments inside a loop body stay in the loop (Jinja scoping); `if` does not scope.
  EXPECT_EQ(R("{% set x = 'outer' %}{% for i in [1] %}{% set x = 'inner' %}{{ x }}{% endfor %}"
              "{{ x }}"),
            "innerouter");
  EXPECT_EQ(R("{% if true %}{% set y = 1 %}{% endif %}{{ y }}"), "1");
  // Top-level set may shadow a global, as Llama 3.1 does with `messages`.
  auto out = Render("{% set messages = messages[1:] %}{{ messages | length }}", Conversation());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "5");
}

TEST(ChatTemplateTest, WhitespaceControl) {
  EXPECT_EQ(R("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(R("a \n {{- 'b' -}} \n c"), "abc");
  EXPECT_EQ(R("a {#- comment -#} b"), "ab");
  EXPECT_EQ(R("a {{ 'b' }} c"), "a b c");
}

TEST(ChatTemplateTest, TrimAndLstripBlocks) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it goes.
  EXPECT_EQ(R("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
  EXPECT_EQ(R("line\n    {% if true %}\n    x\n    {% endif %}\nend"), "line\n    x\nend");
  // Not for {{ }}: only block and comment tags.
  EXPECT_EQ(R("{{ 'a' }}\n  {{ 'b' }}"), "a\n  b");
  EXPECT_EQ(R("  {# c #}\nx"), "x");
  // `+` keeps the whitespace.
  EXPECT_EQ(R("  {%+ if true +%}\nx{% endif %}"), "  \nx");
  // Text before the tag on the same line is not indentation.
  EXPECT_EQ(R("a  {% if true %}b{% endif %}"), "a  b");
}

TEST(ChatTemplateTest, NewlinesAreNormalisedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(R("a\r\nb\rc\n"), "a\nb\nc");
  EXPECT_EQ(R("a\n\n"), "a\n");
}

TEST(ChatTemplateTest, RaiseException) {
  const Status s =
      E("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
        "supported') }}{% endif %}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "System role not supported");
}

// ---- errors ----

void ExpectStatus(const Status& s, StatusCode code, std::string_view needle) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
}

TEST(ChatTemplateErrorTest, SyntaxErrorsAreInvalidArgumentWithOffset) {
  ExpectStatus(E("abc {{ x "), StatusCode::kInvalidArgument, "unterminated '{{' at offset 4");
  ExpectStatus(E("{% if x %}"), StatusCode::kInvalidArgument, "endif");
  ExpectStatus(E("{% endif %}"), StatusCode::kInvalidArgument, "endif");
  ExpectStatus(E("{% for x in y %}{% endif %}"), StatusCode::kInvalidArgument, "endif");
  ExpectStatus(E("{{ 'abc }}"), StatusCode::kInvalidArgument, "unterminated string");
  ExpectStatus(E("{{ }}"), StatusCode::kInvalidArgument, "expected an expression");
  ExpectStatus(E("{{ 1 + }}"), StatusCode::kInvalidArgument, "offset");
  ExpectStatus(E("{{ a b }}"), StatusCode::kInvalidArgument, "unexpected 'b' at offset 5");
  ExpectStatus(E("{{ a $ b }}"), StatusCode::kInvalidArgument, "unexpected character '$'");
  ExpectStatus(E("{% frobnicate %}"), StatusCode::kInvalidArgument, "frobnicate");
  ExpectStatus(E("{% for in x %}{% endfor %}"), StatusCode::kInvalidArgument, "expected 'in'");
  ExpectStatus(E("{% for 1 in x %}{% endfor %}"), StatusCode::kInvalidArgument, "expected a name");
  ExpectStatus(E("{% set x %}"), StatusCode::kUnimplemented, "block assignment");
  ExpectStatus(E("{{ x[1:2:3:4] }}"), StatusCode::kInvalidArgument, "slice");
  ExpectStatus(E("{% if true %}{% else %}{% elif x %}{% endif %}"), StatusCode::kInvalidArgument,
               "elif");
  ExpectStatus(E("{# never closed"), StatusCode::kInvalidArgument, "unterminated '{#'");
}

// Floats as Python prints them; tojson as transformers' json.dumps(ensure_ascii=False).
TEST(ChatTemplateTest, FloatsAndTojson) {
  EXPECT_EQ(R("{{ 1.5 }} {{ 2.0 }} {{ 1e-5 }} {{ 1.5e16 }} {{ 0.1 + 0.2 }} {{ -2.5 }}"),
            "1.5 2.0 1e-05 1.5e+16 0.30000000000000004 -2.5");
  EXPECT_EQ(
      R("{{ 7 / 2 }} {{ 4 / 2 }} {{ 3 * 0.5 }} {{ 7.5 // 2 }} {{ (-7.5) % 2 }} {{ 2 ** -1 }}"),
      "3.5 2.0 1.5 3.0 0.5 0.5");
  EXPECT_EQ(R("{{ 1.5 > 1 }} {{ 2 == 2.0 }} {{ 1_000.5 }} {{ 2.5 is float }} {{ 2.5 is number }}"),
            "True True 1000.5 True True");
  EXPECT_EQ(R("{{ 10 | float }} {{ '3' | int + 1 }} {{ 2.7 | int }} {{ 'x' | int(7) }}"),
            "10.0 4 2 7");
  EXPECT_EQ(R("{% set x = {'a': [1, 2.5, none, true], 'b': '\u00e9\"\\n', 'c': {}} %}"
              "{{ x | tojson }}"),
            "{\"a\": [1, 2.5, null, true], \"b\": \"\u00e9\\\"\\n\", \"c\": {}}");
  EXPECT_EQ(R("{{ [1, {'k': 'v'}, []] | tojson(indent=2) }}"),
            "[\n  1,\n  {\n    \"k\": \"v\"\n  },\n  []\n]");
  EXPECT_EQ(R("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}"), "{\"a\": 2, \"b\": 1}");
  EXPECT_EQ(R("{{ '\x01' | tojson }}"), "\"\\u0001\"");
  ExpectStatus(E("{{ 1 / 0 }}"), StatusCode::kInvalidArgument, "division by zero");
  ExpectStatus(E("{{ undefined_x | tojson }}"), StatusCode::kInvalidArgument, "not JSON");
  ExpectStatus(E("{{ 1 | tojson(separators=(',', ':')) }}"), StatusCode::kUnimplemented,
               "separators");
}

// The `tools` variable comes from JSON text with its key order; text that is not a JSON array is
// an error, not a crash.
TEST(ChatTemplateTest, ToolsVariable) {
  ChatTemplateInputs in;
  in.tools_json = R"([{"type": "function", "function": {"name": "f", "z": 1.25, "a": [true]}}])";
  auto out = RenderChatTemplate("{% for t in tools %}{{ t.function | tojson }}{% endfor %}", in);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "{\"name\": \"f\", \"z\": 1.25, \"a\": [true]}");
  in.tools_json = "";
  EXPECT_EQ(*RenderChatTemplate("{{ tools is defined }}", in), "False");
  in.tools_json = "{\"not\": \"a list\"}";
  auto bad = RenderChatTemplate("{{ tools }}", in);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a JSON array"), std::string::npos);
}

TEST(ChatTemplateErrorTest, UnsupportedConstructsAreUnimplemented) {
  ExpectStatus(E("{% macro m() %}{% endmacro %}"), StatusCode::kUnimplemented,
               "statement 'macro' at offset 3");
  ExpectStatus(E("{% include 'x' %}"), StatusCode::kUnimplemented, "'include'");
  ExpectStatus(E("{% set ns.x = 1 %}"), StatusCode::kUnimplemented, "namespace");
  ExpectStatus(E("{{ x | frobnicate }}"), StatusCode::kUnimplemented,
               "filter 'frobnicate' at offset 5");
  ExpectStatus(E("{% set ns = namespace(a=1) %}"), StatusCode::kUnimplemented,
               "function 'namespace'");
  ExpectStatus(E("{{ 'a'.zfill(3) }}"), StatusCode::kUnimplemented, "method 'zfill'");
  ExpectStatus(E("{{ 1 is frob }}"), StatusCode::kUnimplemented, "test 'frob'");
  ExpectStatus(E("{% for x in y recursive %}{% endfor %}"), StatusCode::kUnimplemented,
               "recursive");
  ExpectStatus(E("{{ f(*args) }}"), StatusCode::kUnimplemented, "*args");
  ExpectStatus(E("{% generation %}x{% endgeneration %}"), StatusCode::kUnimplemented,
               "'generation'");
}

TEST(ChatTemplateErrorTest, UnsupportedConstructInAnUntakenBranchIsFine) {
  // Llama 3.1 uses tojson only for tools; rendering without tools must work.
  EXPECT_EQ(R("{% if false %}{{ x | tojson(indent=4) }}{% endif %}ok"), "ok");
}

TEST(ChatTemplateErrorTest, TypeErrorsAreInvalidArgument) {
  ExpectStatus(E("{{ 'a' + 1 }}"), StatusCode::kInvalidArgument, "'str' and 'int'");
  ExpectStatus(E("{{ nope + 'a' }}"), StatusCode::kInvalidArgument, "'nope' is undefined");
  ExpectStatus(E("{{ nope.attr }}"), StatusCode::kInvalidArgument, "'nope' is undefined");
  ExpectStatus(E("{{ 1 // 0 }}"), StatusCode::kInvalidArgument, "by zero");
  ExpectStatus(E("{{ 1 < 'a' }}"), StatusCode::kInvalidArgument, "not supported");
  ExpectStatus(E("{{ 1 in 2 }}"), StatusCode::kInvalidArgument, "not iterable");
  ExpectStatus(E("{% for x in 3 %}{% endfor %}"), StatusCode::kInvalidArgument, "not iterable");
  ExpectStatus(E("{% set a, b = [1] %}"), StatusCode::kInvalidArgument, "unpack");
  ExpectStatus(E("{{ 9223372036854775807 + 1 }}"), StatusCode::kInvalidArgument, "overflow");
  ExpectStatus(E("{{ 3 | length }}"), StatusCode::kInvalidArgument, "len()");
  ExpectStatus(E("{{ range(1, 2, 0) }}"), StatusCode::kInvalidArgument, "zero");
  ExpectStatus(E("{{ [1][::0] }}"), StatusCode::kInvalidArgument, "zero");
}

TEST(ChatTemplateErrorTest, RunawayTemplatesAreBounded) {
  ChatTemplateInputs small;
  small.messages = Conversation();
  small.max_steps = 20000;
  small.max_output_bytes = 1 << 20;
  const std::string loops =
      "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}";
  ExpectStatus(RenderChatTemplate(loops, small).status(), StatusCode::kResourceExhausted, "budget");
  ExpectStatus(RenderChatTemplate("{% for a in range(1000) %}{{ 'x' * 100000 }}{% endfor %}", small)
                   .status(),
               StatusCode::kResourceExhausted, "output larger than 1048576 bytes");
  // The default budget is large enough for real conversations.
  std::vector<ChatMessage> many(2000, ChatMessage{"user", "hello"});
  auto long_chat = Render(ReadTemplate("llama3_1_instruct.jinja"), many);
  ASSERT_TRUE(long_chat.ok()) << long_chat.status().ToString();
  EXPECT_GT(long_chat->size(), 2000u * 40);
  ExpectStatus(E("{{ 'x' * 1000000000000 }}"), StatusCode::kResourceExhausted, "repetition");
  ExpectStatus(E("{{ range(100000000) }}"), StatusCode::kResourceExhausted, "range()");
  ExpectStatus(E("{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}"),
               StatusCode::kInvalidArgument, "nested too deeply");
  ExpectStatus(E("{{ " + std::string(1000, '-') + "1 }}"), StatusCode::kInvalidArgument,
               "nested too deeply");
  std::string deep;
  for (int k = 0; k < 500; ++k) deep += "{% if true %}";
  ExpectStatus(E(deep), StatusCode::kInvalidArgument, "nested too deeply");
  // Long chains are built by loops in the parser but evaluated recursively: bounded height.
  std::string chain = "{{ x";
  for (int k = 0; k < 2000; ++k) chain += "[0]";
  ExpectStatus(E(chain + " }}"), StatusCode::kInvalidArgument, "nested too deeply");
  std::string sum = "{{ 1";
  for (int k = 0; k < 2000; ++k) sum += " + 1";
  ExpectStatus(E(sum + " }}"), StatusCode::kInvalidArgument, "nested too deeply");
  std::string filters = "{{ 'a'";
  for (int k = 0; k < 2000; ++k) filters += " | trim";
  ExpectStatus(E(filters + " }}"), StatusCode::kInvalidArgument, "nested too deeply");
  // Values nested at run time.
  ExpectStatus(E("{% for i in range(1000) %}{% set x = [x] %}{% endfor %}"),
               StatusCode::kInvalidArgument, "value nested too deeply");
  // A comparison chain is one flat node: 300k comparisons parse in linear time (this took minutes
  // when every operand re-scanned the chain) and evaluate Python-style.
  std::string cmp = "{{ 1";
  for (int k = 0; k < 300000; ++k) cmp += "==1";
  EXPECT_EQ(R(cmp + " }}"), "True");
}

// Random mutations of real templates must give a result or a status: never a crash, hang or
// sanitizer report.
TEST(ChatTemplateFuzzTest, MutatedTemplatesNeverCrash) {
  std::vector<std::string> seeds;
  for (const char* f : {"llama3_1_instruct.jinja", "qwen2_5_instruct.jinja",
                        "llada_8b_instruct.jinja", "smollm2_instruct.jinja"}) {
    seeds.push_back(ReadTemplate(f));
  }
  const std::string alphabet = "{}%#-+|.[]()'\"\\:,=~<>!*/ \nabcxyz0123456789";
  std::mt19937 rng(1234);
  int ok = 0;
  int failed = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string t = seeds[iter % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !t.empty(); ++e) {
      const size_t pos = rng() % t.size();
      switch (rng() % 4) {
        case 0:
          t[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          t.erase(pos, 1 + rng() % 8);
          break;
        case 2:
          t.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          t.insert(pos, t.substr(rng() % t.size(), rng() % 32));
          break;
      }
    }
    auto out = Render(t, Conversation(), (iter & 1) != 0);
    if (out.ok()) {
      ++ok;
    } else {
      ++failed;
      EXPECT_FALSE(out.status().message().empty());
    }
  }
  EXPECT_EQ(ok + failed, 1500);
  EXPECT_GT(failed, 0);
}

TEST(ChatTemplateFuzzTest, RandomBytesNeverCrash) {
  std::mt19937 rng(99);
  const std::string alphabet = "{}%#-+|.[]()'\"\\:,=~<>!* \nifelsendorsetx0123";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string t;
    const size_t len = rng() % 64;
    for (size_t k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
    auto out = Render(t, Conversation());
    if (!out.ok()) {
      EXPECT_NE(out.status().code(), StatusCode::kInternal) << t;
    }
  }
}

}  // namespace
}  // namespace unmask
