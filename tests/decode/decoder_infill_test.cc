// Infilling (a suffix after the generated span) in the LLaDA and Dream decoders and the decoder
// factory: the canvas layout, what is fed and decoded, early stop and CFG around the suffix, the
// errors, and which decoders refuse a suffix. The tokens themselves are checked against the Python
// reference by the golden cases tests/data/golden/llada/*infill* (llada_golden_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "decode/decoder_diffusion.h"
#include "decode/decoder_dream.h"
#include "decode/decoder_factory.h"

namespace unmask {
namespace {

constexpr int64_t kVocab = 16;
constexpr int32_t kMask = 15, kEos = 14, kEot = 13;

// Feeds logits whose argmax is `token` for every requested row; returns the plan's sequences.
void StepAll(Decoder& d, int token) {
  const BatchPlan& plan = *d.Plan().value();
  const int64_t rows = std::max<int64_t>(plan.num_logit_rows(), 1);
  std::vector<float> logits(static_cast<size_t>(rows * kVocab), 0.0f);
  for (int64_t r = 0; r < rows; ++r) logits[static_cast<size_t>(r * kVocab + token)] = 5.0f;
  DecodeStep result;
  ASSERT_TRUE(d.Update(TensorView{logits.data(), DType::kF32, Shape{rows, kVocab}}, &result).ok());
}

DiffusionParams Params(int64_t gen, int64_t block, int64_t steps) {
  return DiffusionParams{.gen_length = gen, .steps = steps, .block_length = block};
}

TEST(DiffusionInfillTest, CanvasIsPromptMasksSuffixAndOnlyTheMasksAreDecoded) {
  const std::vector<int32_t> prompt = {1, 2}, suffix = {7, 8, 9};
  auto d = DiffusionDecoder::Create(Params(4, 2, 4), {kMask, kEos, kEot}, prompt, 64, kVocab, false,
                                    suffix);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(std::vector<int32_t>(d->canvas().begin(), d->canvas().end()),
            (std::vector<int32_t>{1, 2, kMask, kMask, kMask, kMask, 7, 8, 9}));
  EXPECT_EQ(d->generated().size(), 4u);
  // The first forward sees the whole canvas, suffix included; only block 0's masks get logits.
  const BatchPlan& plan = *d->Plan().value();
  ASSERT_EQ(plan.sequences.size(), 1u);
  EXPECT_EQ(plan.sequences[0].tokens.size(), 9u);
  EXPECT_EQ(std::vector<int32_t>(plan.sequences[0].logit_rows.begin(),
                                 plan.sequences[0].logit_rows.end()),
            (std::vector<int32_t>{2, 3}));
  while (!d->Done()) StepAll(*d, 4);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            (std::vector<int32_t>{4, 4, 4, 4}));
  EXPECT_EQ(std::vector<int32_t>(d->canvas().end() - 3, d->canvas().end()), suffix);
}

TEST(DiffusionInfillTest, EarlyStopFillsTheSpanNotTheSuffix) {
  DiffusionParams p = Params(4, 2, 4);
  p.early_stop = true;
  const std::vector<int32_t> suffix = {7, 8};
  auto d = DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{1}, 64, kVocab,
                                    false, suffix);
  ASSERT_TRUE(d.ok());
  while (!d->Done()) StepAll(*d, kEos);
  EXPECT_EQ(d->finish(), DecodeFinish::kEos);
  EXPECT_EQ(std::vector<int32_t>(d->canvas().begin(), d->canvas().end()),
            (std::vector<int32_t>{1, kEos, kEos, kEos, kEos, 7, 8}));
}

TEST(DiffusionInfillTest, UnconditionalCanvasMasksPromptAndSuffix) {
  DiffusionParams p = Params(2, 2, 2);
  p.cfg_scale = 1.0;
  auto d = DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{1, 2}, 64, kVocab,
                                    false, std::vector<int32_t>{7, 8});
  ASSERT_TRUE(d.ok());
  const BatchPlan& plan = *d->Plan().value();
  ASSERT_EQ(plan.sequences.size(), 2u);
  EXPECT_EQ(std::vector<int32_t>(plan.sequences[1].tokens.begin(), plan.sequences[1].tokens.end()),
            (std::vector<int32_t>(6, kMask)));
  EXPECT_EQ(std::vector<int32_t>(plan.sequences[0].tokens.begin(), plan.sequences[0].tokens.end()),
            (std::vector<int32_t>{1, 2, kMask, kMask, 7, 8}));
}

TEST(DiffusionInfillTest, BadSuffixesAreErrors) {
  const DiffusionParams p = Params(4, 4, 4);
  const std::vector<int32_t> prompt = {1};
  auto with = [&](std::vector<int32_t> suffix, int64_t context) {
    return DiffusionDecoder::Create(p, {kMask, kEos, kEot}, prompt, context, kVocab, false, suffix)
        .status();
  };
  EXPECT_EQ(with({3, kMask}, 64).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(with({3, kMask}, 64).message().find("mask token (index 1)"), std::string::npos);
  EXPECT_EQ(with({3, 16}, 64).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with({-1}, 64).code(), StatusCode::kInvalidArgument);
  // 1 + 4 + 3 = 8 positions: a context of 7 cannot hold them, 8 can.
  EXPECT_EQ(with({3, 3, 3}, 7).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(with({3, 3, 3}, 8).ok());
}

TEST(DreamInfillTest, CanvasHoldsTheSuffixAndTheSpanIsDecoded) {
  DreamParams p;
  p.gen_length = 3;
  p.steps = 3;
  const std::vector<int32_t> suffix = {7, 8};
  auto d = DreamDecoder::Create(p, kMask, /*shift_logits=*/true, std::vector<int32_t>{1, 2}, 64,
                                kVocab, suffix);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(std::vector<int32_t>(d->canvas().begin(), d->canvas().end()),
            (std::vector<int32_t>{1, 2, kMask, kMask, kMask, 7, 8}));
  while (!d->Done()) StepAll(*d, 5);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            (std::vector<int32_t>{5, 5, 5}));
  EXPECT_EQ(std::vector<int32_t>(d->canvas().end() - 2, d->canvas().end()), suffix);
  EXPECT_EQ(DreamDecoder::Create(p, kMask, true, std::vector<int32_t>{1}, 64, kVocab,
                                 std::vector<int32_t>{kMask})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

ModelConfig Config(const std::string& arch, AttentionKind attention) {
  ModelConfig c;
  c.architecture = arch;
  c.vocab_size = 64;
  c.context_length = 256;
  c.block_length = 4;
  c.attention = attention;
  c.shift_logits = arch == "dream";
  return c;
}

TEST(DecoderFactoryInfillTest, OneBlockOfMaxTokensOrWholeBlocksOfTheGivenLength) {
  const ModelConfig llada = Config("llada", AttentionKind::kBidirectional);
  const DecoderModel model{&llada, {63, 62, 61}, "llada"};
  DecodeOptions o;
  o.max_tokens = 10;
  o.suffix = {5, 6};
  o.given = {{"suffix", "suffix"}};
  auto built = MakeDecoder(model, std::vector<int32_t>{1, 2, 3}, o);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(built->diffusion.gen_length, 10);
  EXPECT_EQ(built->diffusion.block_length, 10);
  // A block length given: the canvas rule as without a suffix (rounded up to whole blocks).
  o.diffusion.block_length = 4;
  o.given.push_back({"block_length", "block_length"});
  o.max_tokens = 12;
  built = MakeDecoder(model, std::vector<int32_t>{1, 2, 3}, o);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(built->diffusion.gen_length, 12);
  // One that does not divide max_tokens: the rounded-up canvas would not join the suffix.
  o.max_tokens = 10;
  const Status s = MakeDecoder(model, std::vector<int32_t>{1, 2, 3}, o).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("must end where the suffix begins"), std::string::npos) << s.message();
}

TEST(DecoderFactoryInfillTest, CausalAndBlockCausalDecodersRefuseASuffix) {
  for (const auto& [arch, attention] : {std::pair{"llama", AttentionKind::kCausal},
                                        std::pair{"sdar", AttentionKind::kBlockCausal}}) {
    const ModelConfig c = Config(arch, attention);
    const DecoderModel model{&c, {63, 62, 61}, arch};
    DecodeOptions o;
    o.max_tokens = 8;
    o.suffix = {5};
    o.given = {{"suffix", "--suffix"}};
    const Status s = MakeDecoder(model, std::vector<int32_t>{1, 2}, o).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << arch;
    EXPECT_NE(s.message().find("--suffix (infilling) needs a diffusion model with bidirectional"),
              std::string::npos)
        << s.message();
  }
}

}  // namespace
}  // namespace unmask
