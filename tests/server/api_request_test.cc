// OpenAI request parsing (tools/server/api_request.h): accepted forms, defaults, extensions, and a
// 400 naming the field for every malformed input.
#include "server/api_request.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "server/api_response.h"

namespace unmask::server {
namespace {

std::optional<ApiError> Parse(const std::string& body, bool chat = false,
                              ApiRequest* out = nullptr) {
  ApiRequest r;
  auto e = ParseApiRequest(body, chat, out ? out : &r);
  return e;
}

TEST(ApiRequestTest, CompletionDefaultsAndFields) {
  ApiRequest r;
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"hi"})", false, &r));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt_text, "hi");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_FALSE(r.temperature);
  EXPECT_FALSE(r.stream);
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"hi","max_tokens":7,"temperature":0,"top_p":0.5,
      "top_k":5,"stop":["a","b"],"seed":42,"stream":true,"stream_options":{"include_usage":true},
      "n":1,"steps":8,"block_length":4,"cache":"dual","threshold":0.9,"x_canvas":true,
      "latency_target_ms":100,"timeout":2.5,"user":"u","speculative":"lookup"})",
                     false, &r));
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(*r.temperature, 0);
  EXPECT_EQ(*r.top_p, 0.5);
  EXPECT_EQ(*r.top_k, 5);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*r.seed, 42u);
  EXPECT_TRUE(r.stream && r.include_usage && r.x_canvas);
  EXPECT_EQ(*r.steps, 8);
  EXPECT_EQ(*r.block_length, 4);
  EXPECT_EQ(*r.cache, "dual");
  EXPECT_EQ(*r.latency_target_ms, 100);
  EXPECT_EQ(*r.timeout_s, 2.5);
  EXPECT_EQ(*r.speculative, "lookup");
  for (const char* mode : {"none", "lookup", "medusa"}) {
    ASSERT_FALSE(Parse(std::string(R"({"model":"m","prompt":"x","speculative":")") + mode + "\"}",
                       false, &r))
        << mode;
    EXPECT_EQ(*r.speculative, mode);
  }
}

TEST(ApiRequestTest, PromptForms) {
  ApiRequest r;
  // No model: the server's only one (llama-server), decided by the server.
  ASSERT_FALSE(Parse(R"({"prompt":"x"})", false, &r));
  EXPECT_EQ(r.model, "");
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":[1,2,3]})", false, &r));
  EXPECT_TRUE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":["one"]})", false, &r));
  EXPECT_EQ(r.prompt_text, "one");
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":[[4,5]]})", false, &r));
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{4, 5}));
}

TEST(ApiRequestTest, ChatMessagesAndMaxCompletionTokens) {
  ApiRequest r;
  ASSERT_FALSE(Parse(R"({"model":"m","messages":[{"role":"system","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
      "max_completion_tokens":9})",
                     true, &r));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.max_tokens, 9);
  // A part whose type is not a string is a 400, not an exception.
  EXPECT_TRUE(Parse(
      R"({"model":"m","messages":[{"role":"user","content":[{"type":5,"text":"a"}]}]})", true, &r));
  EXPECT_TRUE(
      Parse(R"({"model":"m","messages":[{"role":"user","content":[{"text":"a"}]}]})", true, &r));
  // A chat request without a length runs until EOS or the context (vLLM, llama-server).
  ASSERT_FALSE(Parse(R"({"model":"m","messages":[{"role":"user","content":"x"}]})", true, &r));
  EXPECT_EQ(r.max_tokens, ApiRequest::kUntilDone);
}

TEST(ApiRequestTest, UnknownFieldsAreRefusedWithTheClosestName) {
  auto e = Parse(R"({"model":"m","prompt":"x","max_token":5})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "max_token");
  EXPECT_EQ(e->code, "unknown_parameter");
  EXPECT_NE(e->message.find("did you mean 'max_tokens'?"), std::string::npos) << e->message;
  e = Parse(R"({"model":"m","prompt":"x","mirostat":2})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "mirostat");
  EXPECT_EQ(e->message.find("did you mean"), std::string::npos) << e->message;
  // A huge unknown name (found by fuzz/openai_request_fuzz.cc: slow to compare) is refused at once
  // and echoed cut at a character boundary ("é" is two bytes: byte 64 is inside one).
  const std::string huge = "x" + std::string(1 << 20, 'q');
  e = Parse(R"({"model":"m","prompt":"x",")" + huge + R"(":1})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "unknown_parameter");
  EXPECT_EQ(e->param, "x" + std::string(63, 'q') + "...");
  std::string accented = "x";
  for (int i = 0; i < 40; ++i) accented += "\u00e9";
  e = Parse(R"({"model":"m","prompt":"x",")" + accented + R"(":1})");
  ASSERT_TRUE(e);
  std::string want = "x";
  for (int i = 0; i < 31; ++i) want += "\xc3\xa9";
  EXPECT_EQ(e->param, want + "...");
  // The accepted list is sorted (binary search) and holds every field the parser reads.
  const auto fields = AcceptedFields();
  EXPECT_TRUE(std::is_sorted(fields.begin(), fields.end()));
  for (const char* f : {"repeat_penalty", "repetition_penalty", "ignore_eos", "n_predict",
                        "response_format", "tools", "cache_prompt", "user", "steps"}) {
    EXPECT_TRUE(std::binary_search(fields.begin(), fields.end(), f)) << f;
  }
}

// Fields that change what a request means are honoured or refused, never dropped: the
// llama-server / vLLM extensions unmask honours, and a 400 with code unsupported_parameter for the
// values it cannot honour.
TEST(ApiRequestTest, MeaningfulFieldsAreHonouredOrRefused) {
  ApiRequest r;
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x","repeat_penalty":1.3,"repeat_last_n":16,
      "ignore_eos":true,"user":"alice","cache_prompt":true,"skip_special_tokens":true,
      "response_format":{"type":"text"},"tools":[],"tool_choice":"none","logit_bias":{},
      "logprobs":false,"echo":false,"top_logprobs":0,"parallel_tool_calls":true})",
                     false, &r));
  EXPECT_EQ(*r.repeat_penalty, 1.3);
  EXPECT_EQ(*r.repeat_last_n, 16);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_EQ(r.user, "alice");
  // vLLM's repetition_penalty looks over the whole history.
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x","repetition_penalty":1.1})", false, &r));
  EXPECT_EQ(*r.repeat_penalty, 1.1);
  EXPECT_EQ(*r.repeat_last_n, -1);
  // llama-server's n_predict; -1 runs until EOS or the context.
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x","n_predict":-1})", false, &r));
  EXPECT_EQ(r.max_tokens, ApiRequest::kUntilDone);
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x","n_predict":12})", false, &r));
  EXPECT_EQ(r.max_tokens, 12);
  // The same length twice is fine; seed -1 is random (llama-server).
  ASSERT_FALSE(
      Parse(R"({"model":"m","prompt":"x","max_tokens":7,"n_predict":7,"seed":-1})", false, &r));
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FALSE(r.seed);
  // n choices and echo (completions).
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x","n":3,"echo":true})", false, &r));
  EXPECT_EQ(r.n, 3);
  EXPECT_TRUE(r.echo);
  auto chat_echo =
      Parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],"echo":true})", true);
  ASSERT_TRUE(chat_echo);
  EXPECT_EQ(chat_echo->param, "echo");
  EXPECT_EQ(chat_echo->code, "unsupported_parameter");
  // logprobs: completions take k, chat a boolean and top_logprobs.
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x","logprobs":5})", false, &r));
  EXPECT_EQ(r.logprobs, 5);
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x"})", false, &r));
  EXPECT_EQ(r.logprobs, -1);
  ASSERT_FALSE(Parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":true,
      "top_logprobs":4})",
                     true, &r));
  EXPECT_EQ(r.logprobs, 4);
  auto top_alone = Parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],
      "top_logprobs":4})",
                         true);
  ASSERT_TRUE(top_alone);
  EXPECT_EQ(top_alone->param, "top_logprobs");
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"("tools":[{"type":"function","function":{"name":"f"}}])", "tools"},  // a chat field
      {R"("tool_choice":"required")", "tool_choice"},
      {R"("logit_bias":{"50256":-100})", "logit_bias"},
      {R"("skip_special_tokens":false)", "skip_special_tokens"},
      {R"("top_logprobs":3)", "top_logprobs"},  // a chat field
      {R"("echo":true,"logprobs":2)", "logprobs"},
      {R"("echo":true,"suffix":"end")", "suffix"},
  };
  for (const auto& [field, param] : refused) {
    const std::string body = R"({"model":"m","prompt":"x",)" + field + "}";
    const auto e = Parse(body);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400) << body;
    EXPECT_EQ(e->param, param) << body;
    EXPECT_EQ(e->code, "unsupported_parameter") << body;
  }
  // Infilling: a string suffix on completions; chat refuses it (above: with echo).
  ApiRequest infill;
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x","suffix":" end."})", false, &infill));
  EXPECT_EQ(infill.suffix, std::optional<std::string>(" end."));
  ASSERT_FALSE(Parse(R"({"model":"m","prompt":"x","suffix":null})", false, &infill));
  auto chat_suffix = Parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],
      "suffix":"y"})",
                           true);
  ASSERT_TRUE(chat_suffix);
  EXPECT_EQ(chat_suffix->param, "suffix");
  const std::vector<std::pair<std::string, std::string>> malformed = {
      {R"("suffix":3)", "suffix"},
      {R"("response_format":"json")", "response_format"},
      {R"("tools":{})", "tools"},
      {R"("ignore_eos":1)", "ignore_eos"},
      {R"("repeat_penalty":0)", "repeat_penalty"},
      {R"("repeat_last_n":-2)", "repeat_last_n"},
      {R"("repeat_penalty":1.2,"repetition_penalty":1.1)", "repetition_penalty"},
      {R"("n_predict":0)", "n_predict"},
      {R"("max_tokens":3,"max_completion_tokens":5)", "max_completion_tokens"},
      {R"("max_tokens":3,"n_predict":5)", "n_predict"},
      {R"("seed":-2)", "seed"},
      {R"("user":5)", "user"},
  };
  for (const auto& [field, param] : malformed) {
    const std::string body = R"({"model":"m","prompt":"x",)" + field + "}";
    const auto e = Parse(body);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->param, param) << body;
    EXPECT_TRUE(e->code.empty()) << body;
  }
}

TEST(ApiRequestTest, EveryMalformedInputIsA400NamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", ""},
      {"[1]", ""},
      {R"({"model":5,"prompt":"x"})", "model"},
      {R"({"model":"m"})", "prompt"},
      {R"({"model":"m","prompt":5})", "prompt"},
      {R"({"model":"m","prompt":[]})", "prompt"},
      {R"({"model":"m","prompt":["a","b"]})", "prompt"},
      {R"({"model":"m","prompt":[1,-2]})", "prompt"},
      {R"({"model":"m","prompt":[1,99999999999]})", "prompt"},
      {R"({"model":"m","prompt":"x","max_tokens":0})", "max_tokens"},
      {R"({"model":"m","prompt":"x","max_tokens":-5})", "max_tokens"},
      {R"({"model":"m","prompt":"x","max_tokens":1.5})", "max_tokens"},
      {R"({"model":"m","prompt":"x","max_tokens":"9"})", "max_tokens"},
      {R"({"model":"m","prompt":"x","max_tokens":1e300})", "max_tokens"},
      {R"({"model":"m","prompt":"x","max_tokens":18446744073709551615})", "max_tokens"},
      {R"({"model":"m","prompt":"x","n":65})", "n"},
      {R"({"model":"m","prompt":"x","n":0})", "n"},
      {R"({"model":"m","prompt":"x","temperature":-1})", "temperature"},
      {R"({"model":"m","prompt":"x","temperature":"hot"})", "temperature"},
      {R"({"model":"m","prompt":"x","top_p":2})", "top_p"},
      {R"({"model":"m","prompt":"x","top_p":0})", "top_p"},
      {R"({"model":"m","prompt":"x","stop":5})", "stop"},
      {R"({"model":"m","prompt":"x","stop":[1]})", "stop"},
      {R"({"model":"m","prompt":"x","stop":["a","b","c","d","e"]})", "stop"},
      {R"({"model":"m","prompt":"x","seed":"s"})", "seed"},
      {R"({"model":"m","prompt":"x","stream":"yes"})", "stream"},
      {R"({"model":"m","prompt":"x","stream_options":{"include_usage":1}})",
       "stream_options.include_usage"},
      {R"({"model":"m","prompt":"x","stream_options":3})", "stream_options"},
      {R"({"model":"m","prompt":"x","steps":0})", "steps"},
      {R"({"model":"m","prompt":"x","block_length":-1})", "block_length"},
      {R"({"model":"m","prompt":"x","threshold":1.5})", "threshold"},
      {R"({"model":"m","prompt":"x","cache":7})", "cache"},
      {R"({"model":"m","prompt":"x","timeout":0})", "timeout"},
      {R"({"model":"m","prompt":"x","speculative":"eagle3"})", "speculative"},
      {R"({"model":"m","prompt":"x","echo":"yes"})", "echo"},
      {R"({"model":"m","prompt":"x","logprobs":21})", "logprobs"},
      {R"({"model":"m","prompt":"x","logprobs":"yes"})", "logprobs"},
      {R"({"model":"m","prompt":"x","best_of":2})", "best_of"},
  };
  for (const auto& [body, param] : cases) {
    const auto e = Parse(body);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400) << body;
    EXPECT_EQ(e->param, param) << body;
    EXPECT_FALSE(e->message.empty());
  }
  const std::vector<std::pair<std::string, std::string>> chat_cases = {
      {R"({"model":"m"})", "messages"},
      {R"({"model":"m","messages":[]})", "messages"},
      {R"({"model":"m","messages":[5]})", "messages[0]"},
      {R"({"model":"m","messages":[{"content":"x"}]})", "messages[0].role"},
      {R"({"model":"m","messages":[{"role":"wizard","content":"x"}]})", "messages[0].role"},
      {R"({"model":"m","prompt":"x"})", "messages"},
      {R"({"model":"m","messages":[{"role":"user","content":5}]})", "messages[0].content"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
       "messages[0].content"},
  };
  for (const auto& [body, param] : chat_cases) {
    const auto e = Parse(body, true);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->param, param) << body;
  }
}

TEST(ApiRequestTest, DeeplyNestedBodiesAreRefusedBeforeParsing) {
  EXPECT_EQ(JsonNestingDepth(R"({"a":[1,{"b":"[[[["}]})"), 3);  // brackets in strings skipped
  EXPECT_EQ(JsonNestingDepth(R"({"a":"\"[["})"), 1);
  const std::string deep =
      R"({"model":"m","prompt":)" + std::string(100000, '[') + "1" + std::string(100000, ']') + "}";
  const auto e = Parse(deep);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_NE(e->message.find("deeper"), std::string::npos);
  // 64 levels are fine (then refused for their content, not their depth).
  const std::string ok =
      R"({"model":"m","prompt":)" + std::string(63, '[') + "1" + std::string(63, ']') + "}";
  const auto e2 = Parse(ok);
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->message.find("deeper"), std::string::npos);
}

TEST(ApiRequestTest, ErrorBodyIsAnOpenAiErrorObject) {
  const auto j = nlohmann::json::parse(ErrorBody(MakeError(404, "no such model", "", "model")));
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["type"], "not_found_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_TRUE(j["error"]["code"].is_null());
  // Invalid UTF-8 in a message does not throw.
  EXPECT_NO_THROW(ErrorBody(MakeError(400, "bad \xff byte")));
}

}  // namespace
}  // namespace unmask::server
