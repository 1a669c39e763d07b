// Medusa drafting on the AR twin (models/unmask-tinystories-ar.gguf) with the heads the project
// trained for it (models/unmask-tinystories-ar.medusa.gguf, scripts/train/train_medusa.py) and
// with random heads of its shape: at temperature 0 the output is the plain greedy tokens whatever
// the heads propose, through the decoder factory as through a hand-made drafter.
#include <gtest/gtest.h>

#include <random>

#include "decode/decoder_ar.h"
#include "decode/decoder_factory.h"
#include "engine/engine.h"
#include "model/loader.h"
#include "model/medusa_heads.h"
#include "test_util.h"
#include "twin_generate.h"

namespace unmask {
namespace {

const char* const kPrompts[] = {
    "Once upon a time, there was a little girl named",
    "Tom and his dog went to the park. They",
    "The sun was shining and the birds were singing.",
    "Lily wanted to play with her friend, but",
};

// Heads of the twin's shape with random weights (a drafter that is mostly wrong).
std::unique_ptr<MedusaHeads> RandomHeads(const ModelConfig& c, int64_t k,
                                         std::vector<float>* data) {
  gguf::GgufWriter w;
  w.Set("general.architecture", gguf::Value::String("medusa"));
  w.Set("medusa.head_count", gguf::Value::U32(static_cast<uint32_t>(k)));
  w.Set("medusa.layer_count", gguf::Value::U32(1));
  w.Set("medusa.embedding_length", gguf::Value::U32(static_cast<uint32_t>(c.hidden_size)));
  w.Set("medusa.vocab_size", gguf::Value::U32(static_cast<uint32_t>(c.vocab_size)));
  const size_t hh = static_cast<size_t>(c.hidden_size * c.hidden_size);
  const size_t h = static_cast<size_t>(c.hidden_size);
  const size_t out = static_cast<size_t>(c.vocab_size) * h;
  data->assign(static_cast<size_t>(k) * (hh + h) + out, 0.0f);
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 0.1f);
  for (float& x : *data) x = d(rng);
  float* p = data->data();
  for (int64_t i = 0; i < k; ++i) {
    const std::string stem = "medusa.blk." + std::to_string(i) + ".res.0.";
    w.AddTensor(stem + "weight", gguf::GgmlType::kF32, {c.hidden_size, c.hidden_size}, p, hh * 4);
    p += hh;
    w.AddTensor(stem + "bias", gguf::GgmlType::kF32, {c.hidden_size}, p, h * 4);
    p += h;
  }
  w.AddTensor("medusa.output.weight", gguf::GgmlType::kF32, {c.hidden_size, c.vocab_size}, p,
              out * 4);
  auto bytes = w.WriteToBytes();
  EXPECT_TRUE(bytes.ok());
  auto file = gguf::GgufFile::FromBytes(std::move(bytes).value(), "random.medusa.gguf");
  EXPECT_TRUE(file.ok());
  auto heads = MedusaHeads::FromFile(std::move(file).value(), c);
  EXPECT_TRUE(heads.ok()) << heads.status().ToString();
  return std::move(heads).value();
}

TEST(TwinMedusaTest, GreedyOutputIsPlainDecodingWithTrainedAndRandomHeads) {
  const std::string base = testing::SourceDir() + "/models/unmask-tinystories-ar.gguf";
  auto ar = LoadModel(base, LoadOptions{});
  ASSERT_TRUE(ar.ok()) << ar.status().ToString();
  const ModelConfig& c = ar->model->config();
  auto trained = MedusaHeads::Load(MedusaHeadsPathFor(base), c);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  std::vector<float> storage;
  const std::unique_ptr<MedusaHeads> random = RandomHeads(c, 4, &storage);
  int64_t accepted_trained = 0;
  for (const char* text : kPrompts) {
    const std::vector<int32_t> prompt = ar->tokenizer->Encode(text, true, false);
    const GenRun plain = GreedyGenerate(*ar, prompt, nullptr, 1, 64);
    ASSERT_FALSE(plain.tokens.empty());
    for (int32_t draft_max : {1, 2, 4}) {
      for (const MedusaHeads* heads : {trained->get(), random.get()}) {
        auto drafter = MakeMedusaDrafter(heads, {});
        ASSERT_TRUE(drafter.ok());
        const GenRun r = GreedyGenerate(*ar, prompt, drafter->get(), draft_max, 64);
        EXPECT_EQ(r.tokens, plain.tokens)
            << text << ", draft_max " << draft_max << ", " << heads->path();
        // Every step after the prefill drafts (min(draft_max, heads) tokens while room is left).
        EXPECT_GT(r.stats.speculative.drafted, 0);
        EXPECT_LE(r.stats.speculative.drafted,
                  static_cast<int64_t>(r.stats.drafter.calls) * std::min<int64_t>(draft_max, 4));
        EXPECT_GT(r.stats.drafter.flops, 0);
        EXPECT_EQ(r.stats.drafter.forwards, 0);  // no draft model
        if (heads == trained->get()) accepted_trained += r.stats.speculative.accepted;
      }
    }
  }
  EXPECT_GT(accepted_trained, 0) << "the trained heads should be right some of the time";
}

TEST(TwinMedusaTest, TheFactoryMakesAMedusaDrafterPerDecoder) {
  const std::string base = testing::SourceDir() + "/models/unmask-tinystories-ar.gguf";
  auto ar = LoadModel(base, LoadOptions{});
  ASSERT_TRUE(ar.ok());
  auto heads = MedusaHeads::Load(MedusaHeadsPathFor(base), ar->model->config());
  ASSERT_TRUE(heads.ok());
  const std::vector<int32_t> prompt = ar->tokenizer->Encode(kPrompts[1], true, false);
  const GenRun plain = GreedyGenerate(*ar, prompt, nullptr, 1, 40);
  // Two requests at once in one continuous batch, each with its own drafter.
  DecodeOptions o;
  o.max_tokens = 40;
  o.ar.sampling.temperature = 0;
  o.ar.draft_max = 3;
  o.medusa_heads = heads->get();
  std::vector<BuiltDecoder> built;
  for (int32_t seq = 0; seq < 2; ++seq) {
    o.kv_seq = seq;
    const SpecialTokens& sp = ar->tokenizer->special();
    const DecoderModel dm{&ar->model->config(), {sp.mask, sp.eos, sp.eot, sp.pad}, "ar"};
    auto b = MakeDecoder(dm, prompt, o);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    built.push_back(std::move(b).value());
  }
  Decoder* const both[2] = {built[0].decoder.get(), built[1].decoder.get()};
  auto stats = RunToCompletion(*ar->model, both, nullptr);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  for (const BuiltDecoder& b : built) {
    const auto& d = static_cast<const ArDecoder&>(*b.decoder);
    ASSERT_NE(d.drafter(), nullptr);
    EXPECT_EQ(d.drafter()->name(), "medusa");
    EXPECT_EQ(std::vector<int32_t>(d.generated().begin(), d.generated().end()), plain.tokens);
    EXPECT_GT(d.speculative().drafted, 0);
  }
  EXPECT_FALSE(MakeMedusaDrafter(nullptr, {}).ok());
  EXPECT_FALSE(MakeMedusaDrafter(heads->get(), {1.5}).ok());
  // Heads of another model are refused by the loader (the draft model: hidden 64).
  auto small =
      LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar-draft.gguf", LoadOptions{});
  ASSERT_TRUE(small.ok());
  auto wrong = MedusaHeads::Load(MedusaHeadsPathFor(base), small->model->config());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("hidden size"), std::string::npos);
}

}  // namespace
}  // namespace unmask
