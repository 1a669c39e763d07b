// The project's trained diffusion twin (models/unmask-tinystories-llada.gguf) against the
// independent Python reference (scripts/train/make_twin_goldens.py): token-identical generations on
// real text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "decode/decoder_diffusion.h"
#include "engine/engine.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

TEST(TwinGoldenTest, DiffusionTwinMatchesReference) {
  const std::string dir = testing::TestDataPath("golden/twins");
  int checked = 0;
  for (const char* name :
       {"llada_story.json", "llada_story_fast.json", "llada_story_infill.json"}) {
    std::ifstream in(dir + "/" + name);
    ASSERT_TRUE(in) << dir << "/" << name;
    const nlohmann::json g = nlohmann::json::parse(in);
    auto lm = LoadModel(testing::SourceDir() + "/" + g.at("model_path").get<std::string>(),
                        LoadOptions{});
    ASSERT_TRUE(lm.ok()) << lm.status().ToString();
    DiffusionParams p;
    p.gen_length = g.at("gen_length");
    p.steps = g.at("steps");
    p.block_length = g.at("block_length");
    p.temperature = g.at("temperature");
    const std::vector<int32_t> prompt = g.at("prompt_ids");
    // The CLI tokenizes the prompt text the same way the reference did.
    EXPECT_EQ(lm->tokenizer->Encode(g.at("prompt").get<std::string>(), true, false), prompt);
    // Infilling: the suffix text is tokenized without BOS, as the server and --suffix do.
    const std::vector<int32_t> suffix = g.contains("suffix_ids")
                                            ? g.at("suffix_ids").get<std::vector<int32_t>>()
                                            : std::vector<int32_t>{};
    if (!suffix.empty()) {
      EXPECT_EQ(lm->tokenizer->Encode(g.at("suffix").get<std::string>(), false, false), suffix);
    }
    const SpecialTokens& sp = lm->tokenizer->special();
    auto dec = DiffusionDecoder::Create(p, {sp.mask, sp.eos, sp.eot}, prompt,
                                        lm->model->config().context_length,
                                        lm->model->config().vocab_size, false, suffix);
    ASSERT_TRUE(dec.ok()) << dec.status().ToString();
    Decoder* const one[1] = {&*dec};
    auto stats = RunToCompletion(*lm->model, one, nullptr);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    const std::vector<int32_t> expected = g.at("output_ids");
    EXPECT_EQ(std::vector<int32_t>(dec->generated().begin(), dec->generated().end()), expected)
        << name;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

}  // namespace
}  // namespace unmask
