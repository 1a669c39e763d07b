// stories260K (karpathy/tinyllamas, as GGUF from ggml-org/tiny-llamas) against the llama2.c
// reference program: greedy generation must reproduce run.c's output token for token
// (../shared/data/models/stories260K_expected_greedy_runc.txt: temperature 0, 256 steps).
// run.c's conventions: the prompt is encoded with BOS; `steps` counts positions (prompt tokens
// after BOS included), so 257 - len(prompt ids) tokens are generated; it stops early when the model
// emits BOS (id 1, the story separator of its training data) and prints every token after BOS.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "decode/decoder_ar.h"
#include "engine/engine.h"
#include "format/llama2c.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

struct Case {
  std::string prompt;
  std::string text;
};

std::vector<Case> ReadExpected(const std::string& path) {
  std::ifstream in(path);
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("### prompt=[", 0) == 0) {
      const size_t end = line.find("] steps=");
      cases.push_back({line.substr(12, end - 12), ""});
    } else if (!cases.empty()) {
      cases.back().text += (cases.back().text.empty() ? "" : "\n") + line;
    }
  }
  for (Case& c : cases) {
    while (!c.text.empty() && c.text.back() == '\n') c.text.pop_back();
  }
  return cases;
}

// Greedy run.c-style generation: the committed tokens after BOS, cut before a generated BOS.
std::vector<int32_t> RunCGreedy(const LoadedModel& lm, const std::vector<int32_t>& prompt,
                                Drafter* drafter) {
  ArParams p;
  p.sampling.temperature = 0;
  p.n_predict = 257 - static_cast<int64_t>(prompt.size());
  p.ignore_eos = true;
  const ModelConfig& c = lm.model->config();
  auto dec = ArDecoder::Create(p, {}, prompt, c.context_length, c.vocab_size, drafter);
  EXPECT_TRUE(dec.ok()) << dec.status().ToString();
  Decoder* const one[1] = {&*dec};
  auto stats = RunToCompletion(*lm.model, one, nullptr);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  std::vector<int32_t> out(dec->tokens().begin() + 1, dec->tokens().end());
  const int32_t bos = lm.tokenizer->special().bos;
  for (size_t i = prompt.size() - 1; i < out.size(); ++i) {
    if (out[i] == bos) {
      out.resize(i);
      break;
    }
  }
  return out;
}

TEST(ArStories260kTest, GreedyMatchesLlama2cReference) {
  UNMASK_REQUIRE_SHARED_DATA(model, "models/stories260K.gguf");
  UNMASK_REQUIRE_SHARED_DATA(expected, "models/stories260K_expected_greedy_runc.txt");
  auto lm = LoadModel(model, LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  const std::vector<Case> cases = ReadExpected(expected);
  ASSERT_EQ(cases.size(), 4u);
  for (const Case& c : cases) {
    const std::vector<int32_t> prompt = lm->tokenizer->Encode(c.prompt, true, false);
    const std::vector<int32_t> out = RunCGreedy(*lm, prompt, nullptr);
    EXPECT_EQ(lm->tokenizer->Decode(out, true), c.text) << "prompt [" << c.prompt << "]";
  }
}

// The same from the llama2.c checkpoint itself, converted by unmask's importer (`unmask convert`).
TEST(ArStories260kTest, ConvertedLlama2cCheckpointMatchesReference) {
  UNMASK_REQUIRE_SHARED_DATA(bin, "models/stories260K.bin");
  UNMASK_REQUIRE_SHARED_DATA(tok, "models/tok512.bin");
  UNMASK_REQUIRE_SHARED_DATA(expected, "models/stories260K_expected_greedy_runc.txt");
  auto ckpt = llama2c::Checkpoint::Open(bin);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  auto vocab = llama2c::ReadTokenizer(tok, (*ckpt)->config().vocab_size);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  gguf::GgufWriter writer;
  ASSERT_TRUE(llama2c::BuildGguf(**ckpt, *vocab, {}, &writer).ok());
  const std::string path = testing::TempDir() + "/stories260K-converted.gguf";
  ASSERT_TRUE(writer.WriteFile(path).ok());
  auto lm = LoadModel(path, LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  const std::vector<Case> cases = ReadExpected(expected);
  ASSERT_EQ(cases.size(), 4u);
  for (const Case& c : cases) {
    const std::vector<int32_t> prompt = lm->tokenizer->Encode(c.prompt, true, false);
    EXPECT_EQ(lm->tokenizer->Decode(RunCGreedy(*lm, prompt, nullptr), true), c.text)
        << "prompt [" << c.prompt << "]";
  }
}

// Speculative decoding is lossless at temperature 0: the same tokens with every drafter.
TEST(ArStories260kTest, SpeculativeGreedyIsTokenIdentical) {
  UNMASK_REQUIRE_SHARED_DATA(model, "models/stories260K.gguf");
  auto lm = LoadModel(model, LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  auto draft = LoadModel(model, LoadOptions{});  // the model as its own drafter: all accepted
  ASSERT_TRUE(draft.ok());
  const std::vector<int32_t> prompt =
      lm->tokenizer->Encode("Lily and Tom went to the park.", true, false);
  const std::vector<int32_t> plain = RunCGreedy(*lm, prompt, nullptr);
  auto lookup = MakeLookupDrafter({});
  ASSERT_TRUE(lookup.ok());
  EXPECT_EQ(RunCGreedy(*lm, prompt, lookup->get()), plain);
  EXPECT_GT((*lookup)->stats().calls, 0);
  auto self = MakeModelDrafter(draft->model.get(), {});
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(RunCGreedy(*lm, prompt, self->get()), plain);
}

}  // namespace
}  // namespace unmask
