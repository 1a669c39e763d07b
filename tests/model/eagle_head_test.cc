// The EAGLE draft layer (model/eagle_head.h) against the PyTorch layer of the trainer
// (scripts/train/eagle_model.py) on a random layer for the AR twin
// (tests/data/golden/eagle, scripts/make_eagle_goldens.py): a causal pass from an empty cache,
// then a tree pass on top of it. Tolerance 2e-3 absolute + 2e-3 relative: both sides compute in
// f32 from the same f16 weights and differ only in summation order (measured max difference
// ~1e-5 on values of magnitude ~5). And the loader's refusals, each naming the key or tensor.
#include "model/eagle_head.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

std::string GoldenDir() { return testing::SourceDir() + "/tests/data/golden/eagle/"; }

nlohmann::json Golden() {
  std::ifstream in(GoldenDir() + "golden.json");
  return nlohmann::json::parse(in);
}

LoadedModel Twin() {
  auto lm = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf", LoadOptions{});
  EXPECT_TRUE(lm.ok()) << lm.status().ToString();
  return std::move(lm).value();
}

std::vector<float> Flat(const nlohmann::json& rows) {
  std::vector<float> v;
  for (const auto& r : rows) {
    for (double x : r) v.push_back(static_cast<float>(x));
  }
  return v;
}

void ExpectNear(const float* got, const std::vector<float>& want, size_t offset, size_t n,
                const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    const double w = want[offset + i];
    ASSERT_NEAR(got[i], w, 2e-3 + 2e-3 * std::fabs(w)) << what << " element " << i;
  }
}

TEST(EagleHeadTest, CausalAndTreePassesMatchPyTorch) {
  const LoadedModel lm = Twin();
  const Model& m = *lm.model;
  auto head = EagleHead::Load(GoldenDir() + "random-twin.eagle.gguf", m.config());
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  const nlohmann::json g = Golden();
  const nlohmann::json& f = g["forward"];
  const int64_t d = m.config().hidden_size;
  ASSERT_EQ((*head)->hidden_size(), d);
  ASSERT_EQ((*head)->draft_vocab_size(), g["draft_vocab"].get<int64_t>());
  const int64_t nd = (*head)->draft_vocab_size();
  const std::vector<float> feats = Flat(f["features"]);
  const std::vector<int32_t> tokens = f["tokens"].get<std::vector<int32_t>>();
  const std::vector<int32_t> pos = f["positions"].get<std::vector<int32_t>>();
  const std::vector<int32_t> parents = f["tree_parents"].get<std::vector<int32_t>>();
  const std::vector<float> guess = Flat(f["guess"]), logits = Flat(f["logits"]);
  const auto causal = f["causal_rows"].get<int64_t>();
  const auto total = static_cast<int64_t>(tokens.size());
  std::vector<float> embed(static_cast<size_t>(total * d));
  ASSERT_TRUE(m.EmbedTokens(tokens, TensorView{embed.data(), DType::kF32, Shape{total, d}}).ok());
  auto kv = (*head)->MakeKvCache(64);
  ASSERT_TRUE(kv.ok());
  EagleWorkspace ws;
  // Rows 0..9: causal from an empty cache.
  ASSERT_TRUE((*head)
                  ->Forward(std::span<const float>(embed).first(static_cast<size_t>(causal * d)),
                            std::span<const float>(feats).first(static_cast<size_t>(causal * d)),
                            std::span<const int32_t>(pos).first(static_cast<size_t>(causal)), {}, 0,
                            *kv, ws)
                  .ok());
  ExpectNear(ws.x.data(), guess, 0, static_cast<size_t>(causal * d), "causal guess");
  ExpectNear(ws.logits.data(), logits, 0, static_cast<size_t>(causal * nd), "causal logits");
  // Rows 10..14: a tree after them, in two passes (2 rows, then 3) as the drafter feeds levels.
  const int64_t tree = total - causal;
  for (auto [a, b] : {std::pair<int64_t, int64_t>{0, 2}, {2, tree}}) {
    const auto off = static_cast<size_t>((causal + a) * d);
    const auto rows = static_cast<size_t>(b - a);
    ASSERT_TRUE(
        (*head)
            ->Forward(std::span<const float>(embed).subspan(off, rows * static_cast<size_t>(d)),
                      std::span<const float>(feats).subspan(off, rows * static_cast<size_t>(d)),
                      std::span<const int32_t>(pos).subspan(static_cast<size_t>(causal + a), rows),
                      std::span<const int32_t>(parents).first(static_cast<size_t>(b)), causal, *kv,
                      ws)
            .ok());
    ExpectNear(ws.x.data(), guess, off, rows * static_cast<size_t>(d), "tree guess");
    ExpectNear(ws.logits.data(), logits, static_cast<size_t>((causal + a) * nd),
               rows * static_cast<size_t>(nd), "tree logits");
  }
  EXPECT_EQ(kv->length(0), total);
  EXPECT_GT((*head)->flops_per_row(), 0);
  EXPECT_GT((*head)->weight_bytes(), 0u);
}

// A valid EAGLE file for the twin's sizes (random f32 weights), with `edit` applied to the
// writer's keys and tensors before writing.
struct EagleFile {
  int64_t hidden = 192, ffn = 64, heads = 6, kv_heads = 6, vocab = 3072, n_draft = 40;
  std::vector<std::vector<float>> storage;
};

StatusOr<std::unique_ptr<EagleHead>> Build(
    const ModelConfig& c, const std::function<void(gguf::GgufWriter&, EagleFile&)>& edit,
    const std::vector<std::string>& skip = {}) {
  EagleFile e;
  gguf::GgufWriter w;
  w.Set("general.architecture", gguf::Value::String("eagle"));
  w.Set("eagle.embedding_length", gguf::Value::U32(static_cast<uint32_t>(e.hidden)));
  w.Set("eagle.vocab_size", gguf::Value::U32(static_cast<uint32_t>(e.vocab)));
  w.Set("eagle.feed_forward_length", gguf::Value::U32(static_cast<uint32_t>(e.ffn)));
  w.Set("eagle.attention.head_count", gguf::Value::U32(static_cast<uint32_t>(e.heads)));
  w.Set("eagle.attention.head_count_kv", gguf::Value::U32(static_cast<uint32_t>(e.kv_heads)));
  std::vector<int32_t> draft(static_cast<size_t>(e.n_draft));
  for (int64_t i = 0; i < e.n_draft; ++i)
    draft[static_cast<size_t>(i)] = static_cast<int32_t>(i * 7);
  w.Set("eagle.draft_vocab", gguf::Value::I32Array(draft));
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  auto add = [&](const std::string& name, int64_t rows, int64_t cols) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) return;
    e.storage.emplace_back(static_cast<size_t>(rows * cols));
    for (float& x : e.storage.back()) x = nd(rng);
    std::vector<int64_t> dims =
        rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows};
    w.AddTensor(name, gguf::GgmlType::kF32, dims, e.storage.back().data(),
                e.storage.back().size() * 4);
  };
  const int64_t d = e.hidden;
  add("eagle.fc.weight", d, 2 * d);
  add("eagle.attn_q.weight", d, d);
  add("eagle.attn_k.weight", d, d);
  add("eagle.attn_v.weight", d, d);
  add("eagle.attn_output.weight", d, d);
  add("eagle.ffn_norm.weight", 1, d);
  add("eagle.ffn_gate.weight", e.ffn, d);
  add("eagle.ffn_up.weight", e.ffn, d);
  add("eagle.ffn_down.weight", d, e.ffn);
  add("eagle.output.weight", e.n_draft, d);
  edit(w, e);
  auto bytes = w.WriteToBytes();
  if (!bytes.ok()) return bytes.status();
  auto file = gguf::GgufFile::FromBytes(std::move(bytes).value(), "test.eagle.gguf");
  if (!file.ok()) return file.status();
  return EagleHead::FromFile(std::move(file).value(), c);
}

TEST(EagleHeadTest, LoaderRefusesMalformedFilesNamingWhatIsWrong) {
  const LoadedModel lm = Twin();
  const ModelConfig& c = lm.model->config();
  auto none = [](gguf::GgufWriter&, EagleFile&) {};
  {
    auto ok = Build(c, none);
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ((*ok)->draft_vocab_size(), 40);
    EXPECT_EQ((*ok)->draft_id(3), 21);
  }
  auto expect = [&](const std::function<void(gguf::GgufWriter&, EagleFile&)>& edit,
                    const std::string& needle, const std::vector<std::string>& skip = {}) {
    auto r = Build(c, edit, skip);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().ToString();
  };
  expect([](gguf::GgufWriter& w,
            EagleFile&) { w.Set("general.architecture", gguf::Value::String("medusa")); },
         "expected 'eagle'");
  expect([](gguf::GgufWriter& w,
            EagleFile&) { w.Set("eagle.embedding_length", gguf::Value::U32(64)); },
         "hidden size");
  expect([](gguf::GgufWriter& w, EagleFile&) { w.Set("eagle.vocab_size", gguf::Value::U32(99)); },
         "vocabulary");
  expect([](gguf::GgufWriter& w,
            EagleFile&) { w.Set("eagle.attention.head_count", gguf::Value::U32(5)); },
         "head_count");
  expect([](gguf::GgufWriter& w,
            EagleFile&) { w.Set("eagle.attention.head_count_kv", gguf::Value::U32(4)); },
         "head_count");
  expect([](gguf::GgufWriter& w,
            EagleFile&) { w.Set("eagle.feed_forward_length", gguf::Value::U32(0)); },
         "eagle.feed_forward_length");
  expect(
      [](gguf::GgufWriter& w, EagleFile&) {
        w.Set("eagle.draft_vocab", gguf::Value::I32Array({1, 2, 2}));
      },
      "repeats id 2");
  expect(
      [](gguf::GgufWriter& w, EagleFile&) {
        w.Set("eagle.draft_vocab", gguf::Value::I32Array({1, 5000}));
      },
      "outside the vocabulary");
  expect(none, "eagle.ffn_down.weight", {"eagle.ffn_down.weight"});
  expect(none, "eagle.output.weight", {"eagle.output.weight"});
  expect(
      [](gguf::GgufWriter& w, EagleFile& e) {
        // An output of 41 rows for a draft vocabulary of 40.
        e.storage.emplace_back(static_cast<size_t>(41 * e.hidden), 0.0f);
        w.AddTensor("eagle.output.weight", gguf::GgmlType::kF32, {e.hidden, 41},
                    e.storage.back().data(), e.storage.back().size() * 4);
      },
      "eagle.output.weight", {"eagle.output.weight"});
  // A bidirectional base model: EAGLE drafts for AR models only.
  ModelConfig diffusion = c;
  diffusion.attention = AttentionKind::kBidirectional;
  auto r = Build(diffusion, none);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  // RoPE over an odd number of dimensions (or more than a head has) cannot be applied.
  for (int64_t rope_dim : {31, 34}) {
    ModelConfig odd = c;
    odd.rope_dim = rope_dim;
    auto o = Build(odd, none);
    ASSERT_FALSE(o.ok()) << rope_dim;
    EXPECT_NE(o.status().message().find("RoPE dimension"), std::string::npos)
        << o.status().ToString();
  }
  EXPECT_EQ(EagleHeadPathFor("/m/model.gguf"), "/m/model.eagle.gguf");
  EXPECT_EQ(EagleHeadPathFor("/m/folder/"), "/m/folder/eagle.gguf");
}

TEST(EagleHeadTest, ForwardRefusesBadArguments) {
  const LoadedModel lm = Twin();
  auto head = EagleHead::Load(GoldenDir() + "random-twin.eagle.gguf", lm.model->config());
  ASSERT_TRUE(head.ok());
  const int64_t d = (*head)->hidden_size();
  auto kv = (*head)->MakeKvCache(300);
  ASSERT_TRUE(kv.ok());
  EagleWorkspace ws;
  std::vector<float> row(static_cast<size_t>(2 * d), 0.1f);
  const std::vector<int32_t> two = {0, 1}, far = {0, 400};
  EXPECT_EQ((*head)->Forward(row, row, two, {}, 0, *kv, ws).code(), StatusCode::kOk);
  const std::vector<float> one(static_cast<size_t>(d));
  EXPECT_EQ((*head)->Forward(one, row, two, {}, 0, *kv, ws).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*head)->Forward(row, row, far, {}, 0, *kv, ws).code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> short_tree = {-1};
  EXPECT_EQ((*head)->Forward(row, row, two, short_tree, 0, *kv, ws).code(),
            StatusCode::kInvalidArgument);
  // A prefix past the cache's rows leaves a gap.
  EXPECT_EQ((*head)->Forward(row, row, two, {}, 5, *kv, ws).code(),
            StatusCode::kFailedPrecondition);
  auto other = KvCache::Create({1, 8, 16, 1});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*head)->Forward(row, row, two, {}, 0, *other, ws).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask
