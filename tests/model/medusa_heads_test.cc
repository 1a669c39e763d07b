// Medusa heads (model/medusa_heads.h): the loader's checks, and Predict against a scalar double
// reference of r = h + SiLU(W r + b), logits = W_out r over random weights.
#include "model/medusa_heads.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace unmask {
namespace {

constexpr int64_t kHidden = 8;
constexpr int64_t kVocab = 16;

// The parts of a heads file, editable before it is written.
struct HeadsSpec {
  std::string arch = "medusa";
  int64_t heads = 2;
  int64_t layers = 2;
  int64_t hidden = kHidden;
  int64_t vocab = kVocab;
  std::vector<int32_t> draft_vocab;  // empty: none
  int64_t output_rows = kVocab;
  int64_t block_cols = kHidden;
  bool skip_bias = false;
  std::vector<std::vector<float>> storage;  // the tensors' data
};

std::vector<float> Random(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

StatusOr<std::unique_ptr<MedusaHeads>> Build(HeadsSpec& s) {
  std::mt19937 rng(7);
  gguf::GgufWriter w;
  w.Set("general.architecture", gguf::Value::String(s.arch));
  w.Set("medusa.head_count", gguf::Value::U32(static_cast<uint32_t>(s.heads)));
  w.Set("medusa.layer_count", gguf::Value::U32(static_cast<uint32_t>(s.layers)));
  w.Set("medusa.embedding_length", gguf::Value::U32(static_cast<uint32_t>(s.hidden)));
  w.Set("medusa.vocab_size", gguf::Value::U32(static_cast<uint32_t>(s.vocab)));
  if (!s.draft_vocab.empty()) w.Set("medusa.draft_vocab", gguf::Value::I32Array(s.draft_vocab));
  s.storage.clear();
  s.storage.reserve(64);
  auto add = [&](const std::string& name, std::vector<int64_t> dims, float scale) {
    size_t n = 1;
    for (int64_t d : dims) n *= static_cast<size_t>(d);
    s.storage.push_back(Random(n, rng, scale));
    w.AddTensor(name, gguf::GgmlType::kF32, dims, s.storage.back().data(), n * 4);
  };
  for (int64_t k = 0; k < std::max<int64_t>(s.heads, 0); ++k) {
    for (int64_t j = 0; j < std::max<int64_t>(s.layers, 0); ++j) {
      const std::string stem = "medusa.blk." + std::to_string(k) + ".res." + std::to_string(j);
      add(stem + ".weight", {s.block_cols, kHidden}, 0.5f);
      if (!s.skip_bias) add(stem + ".bias", {kHidden}, 0.5f);
    }
  }
  add("medusa.output.weight", {kHidden, s.output_rows}, 1.0f);
  auto bytes = w.WriteToBytes();
  if (!bytes.ok()) return bytes.status();
  auto file = gguf::GgufFile::FromBytes(std::move(bytes).value(), "heads.gguf");
  if (!file.ok()) return file.status();
  ModelConfig base;
  base.hidden_size = kHidden;
  base.vocab_size = kVocab;
  return MedusaHeads::FromFile(std::move(file).value(), base);
}

// Scalar reference of head k (storage order of Build: per head, per layer weight then bias;
// the output last).
MedusaGuess Reference(const HeadsSpec& s, const std::vector<float>& h, int64_t k) {
  std::vector<double> r(h.begin(), h.end());
  const size_t per_layer = 2;
  for (int64_t j = 0; j < s.layers; ++j) {
    const auto& W = s.storage[static_cast<size_t>((k * s.layers + j)) * per_layer];
    const auto& b = s.storage[static_cast<size_t>((k * s.layers + j)) * per_layer + 1];
    std::vector<double> t(kHidden);
    for (int64_t o = 0; o < kHidden; ++o) {
      double z = b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < kHidden; ++i) {
        z += static_cast<double>(W[static_cast<size_t>(o * kHidden + i)]) *
             r[static_cast<size_t>(i)];
      }
      t[static_cast<size_t>(o)] = z / (1.0 + std::exp(-z));
    }
    for (int64_t i = 0; i < kHidden; ++i) r[static_cast<size_t>(i)] += t[static_cast<size_t>(i)];
  }
  const auto& out = s.storage.back();
  std::vector<double> logits(static_cast<size_t>(s.output_rows));
  size_t best = 0;
  for (int64_t v = 0; v < s.output_rows; ++v) {
    double z = 0;
    for (int64_t i = 0; i < kHidden; ++i) {
      z += static_cast<double>(out[static_cast<size_t>(v * kHidden + i)]) *
           r[static_cast<size_t>(i)];
    }
    logits[static_cast<size_t>(v)] = z;
    if (z > logits[best]) best = static_cast<size_t>(v);
  }
  double sum = 0;
  for (double z : logits) sum += std::exp(z - logits[best]);
  MedusaGuess g;
  g.token = s.draft_vocab.empty() ? static_cast<int32_t>(best) : s.draft_vocab[best];
  g.prob = 1.0 / sum;
  return g;
}

TEST(MedusaHeadsTest, PredictMatchesTheScalarReference) {
  for (bool draft_vocab : {false, true}) {
    HeadsSpec s;
    if (draft_vocab) {
      s.draft_vocab = {15, 3, 9, 0, 7, 12};
      s.output_rows = 6;
    }
    auto heads = Build(s);
    ASSERT_TRUE(heads.ok()) << heads.status().ToString();
    EXPECT_EQ((*heads)->head_count(), 2);
    EXPECT_EQ((*heads)->layer_count(), 2);
    EXPECT_EQ((*heads)->draft_vocab_size(), s.output_rows);
    EXPECT_EQ((*heads)->weight_bytes(),
              static_cast<size_t>(2 * 2 * (64 + 8) + s.output_rows * 8) * 4);
    EXPECT_DOUBLE_EQ((*heads)->flops_per_head(), 2.0 * (2 * 64 + s.output_rows * 8));
    std::mt19937 rng(11);
    MedusaScratch scratch;
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<float> h = Random(kHidden, rng, 1.0f);
      for (int32_t k = 0; k < 2; ++k) {
        MedusaGuess got;
        ASSERT_TRUE((*heads)->Predict(h, k, scratch, &got).ok());
        const MedusaGuess want = Reference(s, h, k);
        // f32 against double over 8-wide sums: the argmax can only differ on a near tie, which
        // these random weights do not produce; the probability agrees to f32 rounding.
        EXPECT_EQ(got.token, want.token) << "trial " << trial << " head " << k;
        EXPECT_NEAR(got.prob, want.prob, 1e-5);
      }
      // The chain (every head, one pass over the output projection) gives the same guesses.
      std::vector<MedusaGuess> chain;
      ASSERT_TRUE((*heads)->PredictChain(h, 2, scratch, &chain).ok());
      ASSERT_EQ(chain.size(), 2u);
      for (int32_t k = 0; k < 2; ++k) {
        const MedusaGuess want = Reference(s, h, k);
        EXPECT_EQ(chain[k].token, want.token) << "trial " << trial << " chain head " << k;
        EXPECT_NEAR(chain[k].prob, want.prob, 1e-5);
      }
    }
    std::vector<MedusaGuess> chain;
    EXPECT_EQ((*heads)->PredictChain(std::vector<float>(kHidden), 0, scratch, &chain).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ((*heads)->PredictChain(std::vector<float>(kHidden), 3, scratch, &chain).code(),
              StatusCode::kInvalidArgument);
    MedusaGuess g;
    EXPECT_EQ((*heads)->Predict(std::vector<float>(kHidden), 2, scratch, &g).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ((*heads)->Predict(std::vector<float>(kHidden - 1), 0, scratch, &g).code(),
              StatusCode::kInvalidArgument);
  }
}

// Each malformed file gives InvalidArgument (or NotFound for a missing tensor) whose message
// names what is wrong.
TEST(MedusaHeadsTest, MalformedFilesAreRefusedWithTheirReason) {
  struct Case {
    const char* what;
    void (*edit)(HeadsSpec&);
    const char* needle;
  };
  const Case cases[] = {
      {"another architecture", [](HeadsSpec& s) { s.arch = "llama"; }, "expected 'medusa'"},
      {"no heads", [](HeadsSpec& s) { s.heads = 0; }, "medusa.head_count"},
      {"too many heads", [](HeadsSpec& s) { s.heads = 16; }, "medusa.head_count"},
      {"no layers", [](HeadsSpec& s) { s.layers = 0; }, "medusa.layer_count"},
      {"another hidden size", [](HeadsSpec& s) { s.hidden = 16; }, "hidden size"},
      {"another vocabulary", [](HeadsSpec& s) { s.vocab = 17; }, "vocabulary"},
      {"a draft id outside",
       [](HeadsSpec& s) {
         s.draft_vocab = {1, 16};
         s.output_rows = 2;
       },
       "outside the vocabulary"},
      {"a negative draft id",
       [](HeadsSpec& s) {
         s.draft_vocab = {-1, 2};
         s.output_rows = 2;
       },
       "outside the vocabulary"},
      {"a repeated draft id",
       [](HeadsSpec& s) {
         s.draft_vocab = {4, 4};
         s.output_rows = 2;
       },
       "repeats id 4"},
      {"an output of another size", [](HeadsSpec& s) { s.output_rows = 15; },
       "medusa.output.weight"},
      {"a block of another shape", [](HeadsSpec& s) { s.block_cols = 4; },
       "medusa.blk.0.res.0.weight"},
      {"a missing bias", [](HeadsSpec& s) { s.skip_bias = true; }, "medusa.blk.0.res.0.bias"},
  };
  for (const Case& c : cases) {
    HeadsSpec s;
    c.edit(s);
    auto heads = Build(s);
    ASSERT_FALSE(heads.ok()) << c.what;
    EXPECT_NE(heads.status().message().find(c.needle), std::string::npos)
        << c.what << ": " << heads.status().ToString();
  }
  ModelConfig base;
  base.hidden_size = kHidden;
  base.vocab_size = kVocab;
  EXPECT_EQ(MedusaHeads::Load("/nonexistent/heads.medusa.gguf", base).status().code(),
            StatusCode::kNotFound);
  EXPECT_FALSE(MedusaHeads::FromFile(nullptr, base).ok());
}

TEST(MedusaHeadsTest, HeadsLiveBesideTheirModel) {
  EXPECT_EQ(MedusaHeadsPathFor("models/unmask-tinystories-ar.gguf"),
            "models/unmask-tinystories-ar.medusa.gguf");
  EXPECT_EQ(MedusaHeadsPathFor("/ckpt/SmolLM2-135M/"), "/ckpt/SmolLM2-135M/medusa.gguf");
  EXPECT_EQ(MedusaHeadsPathFor("/ckpt/folder"), "/ckpt/folder/medusa.gguf");
}

}  // namespace
}  // namespace unmask
