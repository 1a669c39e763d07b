// Translation of Ollama requests into the OpenAI ones (server/ollama_api.h) and Ollama's response
// pieces; the HTTP side and the real client are in tests/server/test_ollama_client.py.
#include "server/ollama_api.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

namespace unmask::server {
namespace {

using json = nlohmann::ordered_json;

OllamaRequest Ok(const std::string& body, bool chat, bool has_template = false) {
  OllamaRequest r;
  const auto e = TranslateOllamaRequest(json::parse(body), chat, has_template, &r);
  EXPECT_FALSE(e) << body << ": " << (e ? e->message : "");
  return r;
}

ApiError Err(const std::string& body, bool chat, bool has_template = false) {
  OllamaRequest r;
  const auto e = TranslateOllamaRequest(json::parse(body), chat, has_template, &r);
  EXPECT_TRUE(e) << body;
  return e.value_or(ApiError{});
}

TEST(OllamaApiTest, GenerateIsAChatRequestWithATemplateUnlessRaw) {
  const char* body = R"({"model":"m:latest","prompt":"hi","system":"be brief"})";
  OllamaRequest r = Ok(body, false, /*has_template=*/true);
  EXPECT_TRUE(r.openai_chat);
  EXPECT_TRUE(r.stream);  // Ollama's default
  EXPECT_EQ(r.openai["model"], "m");
  EXPECT_EQ(
      r.openai["messages"],
      json::parse(R"([{"role":"system","content":"be brief"},{"role":"user","content":"hi"}])"));
  r = Ok(R"({"model":"m","prompt":"hi","raw":true,"stream":false})", false, true);
  EXPECT_FALSE(r.openai_chat);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.openai["prompt"], "hi");
  EXPECT_EQ(r.openai["n_predict"], -1);  // until done, as Ollama without num_predict
  // A system prompt needs the template.
  EXPECT_EQ(Err(R"({"model":"m","prompt":"hi","system":"s"})", false, false).param, "system");
  // A suffix makes it a completion with the suffix, even with a template.
  r = Ok(R"({"model":"m","prompt":"a","suffix":"b"})", false, true);
  EXPECT_FALSE(r.openai_chat);
  EXPECT_EQ(r.openai["suffix"], "b");
}

TEST(OllamaApiTest, OptionsMapToUnmaskFields) {
  const OllamaRequest r = Ok(R"({"model":"m","prompt":"x","options":{"num_predict":12,
      "temperature":0.5,"top_k":7,"stop":["\n"],"seed":3,"steps":8,"block_length":4,
      "num_ctx":4096,"num_thread":8,"typical_p":1.0,"mirostat":0,"penalize_newline":false}})",
                             false);
  EXPECT_EQ(r.openai["max_tokens"], 12);
  EXPECT_FALSE(r.openai.contains("n_predict"));
  EXPECT_EQ(r.openai["temperature"], 0.5);
  EXPECT_EQ(r.openai["top_k"], 7);
  EXPECT_EQ(r.openai["stop"], json::array({"\n"}));
  EXPECT_EQ(r.openai["seed"], 3);
  EXPECT_EQ(r.openai["steps"], 8);
  EXPECT_EQ(r.openai["block_length"], 4);
  EXPECT_FALSE(r.openai.contains("num_ctx"));  // runner options: no effect
  EXPECT_FALSE(r.openai.contains("typical_p"));
  const ApiError unknown = Err(R"({"model":"m","options":{"temprature":1}})", false);
  EXPECT_EQ(unknown.param, "temprature");
  EXPECT_NE(unknown.message.find("did you mean 'temperature'"), std::string::npos);
  EXPECT_EQ(Err(R"({"model":"m","options":{"mirostat":2}})", false).param, "mirostat");
  EXPECT_EQ(Err(R"({"model":"m","options":{"typical_p":0.9}})", false).param, "typical_p");
  EXPECT_EQ(Err(R"({"model":"m","options":{"num_predict":0}})", false).param, "num_predict");
  EXPECT_EQ(Err(R"({"model":"m","options":[]})", false).param, "options");
}

TEST(OllamaApiTest, FormatAndRefusedFields) {
  EXPECT_EQ(Ok(R"({"model":"m","prompt":"x","format":"json"})", false).openai["response_format"],
            json::parse(R"({"type":"json_object"})"));
  const OllamaRequest schema =
      Ok(R"({"model":"m","prompt":"x","format":{"type":"object"}})", false);
  EXPECT_EQ(schema.openai["response_format"]["type"], "json_schema");
  EXPECT_EQ(schema.openai["response_format"]["json_schema"]["schema"],
            json::parse(R"({"type":"object"})"));
  EXPECT_EQ(Err(R"({"model":"m","format":3})", false).param, "format");
  EXPECT_EQ(Err(R"({"model":"m","context":[1,2]})", false).param, "context");
  EXPECT_EQ(Err(R"({"model":"m","images":["aGk="]})", false).param, "images");
  EXPECT_EQ(Err(R"({"model":"m","template":"{{ .Prompt }}"})", false).param, "template");
  EXPECT_EQ(Err(R"({"model":"m","think":true})", true).param, "think");
  EXPECT_EQ(Err(R"({"model":"m","promt":"x"})", false).param, "promt");
  EXPECT_EQ(Err(R"({"prompt":"x"})", false).param, "model");
  EXPECT_EQ(Err(R"({"model":"m","stream":"yes"})", false).param, "stream");
  // keep_alive is accepted (models stay loaded).
  Ok(R"({"model":"m","prompt":"x","keep_alive":"5m"})", false);
  Ok(R"({"model":"m","prompt":"x","keep_alive":300,"top_logprobs":2})", false);
}

// Found by a helper's attack (2026-12-07): values of the wrong type or range that were accepted.
TEST(OllamaApiTest, WrongTypesAndRangesAreRefused) {
  EXPECT_EQ(Err(R"({"model":"m","options":{"num_predict":18446744073709551615}})", false).param,
            "num_predict");  // was read as -1: until EOS
  EXPECT_EQ(Err(R"({"model":"m","options":{"num_ctx":"x"}})", false).param, "num_ctx");
  EXPECT_EQ(Err(R"({"model":"m","options":{"use_mmap":{}}})", false).param, "use_mmap");
  Ok(R"({"model":"m","prompt":"x","options":{"num_ctx":4096,"use_mmap":true}})", false);
  EXPECT_EQ(Err(R"({"model":"m","top_logprobs":"x"})", false).param, "top_logprobs");
  EXPECT_EQ(Err(R"({"model":"m","keep_alive":[]})", false).param, "keep_alive");
  EXPECT_EQ(
      Err(R"({"model":"m","messages":[{"role":"tool","content":"x","tool_name":5}]})", true).param,
      "messages");
  EXPECT_EQ(Err(R"({"model":"m","messages":[{"role":"assistant","content":"",
                   "tool_calls":[{"function":{"name":"","arguments":{}}}]}]})",
                true)
                .param,
            "messages");
}

// Errors of the OpenAI request a translation became name the Ollama fields.
TEST(OllamaApiTest, ErrorsAfterTheTranslationUseOllamaNames) {
  ApiError e;
  e.status = 400;
  e.param = "response_format.json_schema.schema";
  e.message = "'response_format': JSON schema: keyword 'a' is not supported at /";
  const ApiError o = InOllamaTerms(e);
  EXPECT_EQ(o.param, "format");
  EXPECT_EQ(o.message, "'format': JSON schema: keyword 'a' is not supported at /");
  e.param = "max_tokens";
  e.message = "'max_tokens' must be in [1, 4096]";
  EXPECT_EQ(InOllamaTerms(e).param, "options.num_predict");
  EXPECT_EQ(InOllamaTerms(e).message, "'options.num_predict' must be in [1, 4096]");
  e.param = "temperature";
  e.message = "'temperature' must be in [0, 2]";
  EXPECT_EQ(InOllamaTerms(e).message, e.message);
}

TEST(OllamaApiTest, ChatMessagesAndToolCalls) {
  const OllamaRequest r = Ok(R"({"model":"m","messages":[
      {"role":"user","content":"weather?","images":[]},
      {"role":"assistant","content":"","tool_calls":[
        {"function":{"name":"get_weather","arguments":{"city":"Bern"}}},
        {"function":{"name":"get_time","arguments":{}}}]},
      {"role":"tool","content":"sunny","tool_name":"get_weather"},
      {"role":"tool","content":"noon","tool_name":"get_time"}],
      "tools":[{"type":"function","function":{"name":"get_weather"}}]})",
                             true);
  ASSERT_TRUE(r.openai_chat);
  const json& m = r.openai["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_FALSE(m[0].contains("images"));
  EXPECT_EQ(m[1]["tool_calls"][0]["function"]["arguments"], R"({"city":"Bern"})");
  EXPECT_EQ(m[1]["tool_calls"][0]["type"], "function");
  // Tool results answer the calls in order.
  EXPECT_EQ(m[2]["tool_call_id"], m[1]["tool_calls"][0]["id"]);
  EXPECT_EQ(m[3]["tool_call_id"], m[1]["tool_calls"][1]["id"]);
  EXPECT_EQ(m[2]["name"], "get_weather");
  EXPECT_EQ(r.openai["tools"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(
      Err(R"({"model":"m","messages":[{"role":"user","content":"x","images":["aGk="]}]})", true)
          .param,
      "images");
  EXPECT_EQ(Err(R"({"model":"m","messages":[{"role":"user","contnt":"x"}]})", true).param,
            "contnt");
  EXPECT_EQ(Err(R"({"model":"m","messages":[{"role":"assistant","tool_calls":[
      {"function":{"name":"f","arguments":"{}"}}]}]})",
                true)
                .param,
            "messages");
}

TEST(OllamaApiTest, KeyOrderIsKeptAndLoadRequestsAreRecognized) {
  // A schema's properties keep the client's order (the grammar writes them in that order).
  const OllamaRequest r = Ok(R"({"model":"m","prompt":"x","format":{"type":"object",
      "properties":{"zname":{"type":"string"},"age":{"type":"integer"}}}})",
                             false);
  EXPECT_LT(r.openai.dump().find("zname"), r.openai.dump().find("age"));
  EXPECT_TRUE(IsOllamaLoadRequest(json::parse(R"({"model":"m"})"), false));
  EXPECT_TRUE(IsOllamaLoadRequest(json::parse(R"({"model":"m","prompt":""})"), false));
  EXPECT_FALSE(IsOllamaLoadRequest(json::parse(R"({"model":"m","prompt":"x"})"), false));
  EXPECT_FALSE(IsOllamaLoadRequest(json::parse(R"({"model":"m","suffix":"x"})"), false));
  EXPECT_TRUE(IsOllamaLoadRequest(json::parse(R"({"model":"m","messages":[]})"), true));
  EXPECT_FALSE(
      IsOllamaLoadRequest(json::parse(R"({"model":"m","messages":[{"role":"user"}]})"), true));
}

TEST(OllamaApiTest, NamesTimesAndStatistics) {
  EXPECT_EQ(OllamaModelName("llada:latest"), "llada");
  EXPECT_EQ(OllamaModelName("llada:8b"), "llada:8b");
  EXPECT_EQ(OllamaModelName(":latest"), ":latest");
  const std::string t = OllamaTime(std::chrono::system_clock::time_point(
      std::chrono::seconds(1796324211) + std::chrono::nanoseconds(5)));
  EXPECT_EQ(t, "2026-12-03T18:56:51.000000005Z");  // Python: utcfromtimestamp(1796324211)
  json line = OllamaChunk("m", true, "hi");
  EXPECT_EQ(line["message"], json::parse(R"({"role":"assistant","content":"hi"})"));
  EXPECT_EQ(line["done"], false);
  const RequestStats s{
      .prompt_tokens = 5, .completion_tokens = 7, .queue_ms = 1, .ttft_ms = 3, .total_ms = 10};
  AddOllamaStats(s, FinishReason::kLength, &line);
  EXPECT_EQ(line["done"], true);
  EXPECT_EQ(line["done_reason"], "length");
  EXPECT_EQ(line["total_duration"], 10000000);
  EXPECT_EQ(line["prompt_eval_duration"], 2000000);
  EXPECT_EQ(line["eval_duration"], 7000000);
  EXPECT_EQ(line["eval_count"], 7);
  EXPECT_EQ(line["prompt_eval_count"], 5);
}

}  // namespace
}  // namespace unmask::server
