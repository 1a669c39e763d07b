// Speculative tree verification in the forward pass (SequenceInput::tree_parents, kv_keep,
// all_features): a token tree fed in one forward gives every node the logits of feeding its
// branch on its own, bit for bit with native weights (the per-row kernels of a verification and
// the tree attention's key order: ops/attention_test.cc); moving the accepted branch's cache rows
// into place continues exactly as if only that branch had been fed; asking for every position's
// features never changes a logit. Models: the AR twin (f16) and SmolLM2-135M (Q4_1: int8
// activations) when present.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

std::vector<std::string> Models() {
  std::vector<std::string> m = {testing::SourceDir() + "/models/unmask-tinystories-ar.gguf"};
  if (auto smol = testing::FindSmolLM2()) m.push_back(*smol);
  return m;
}

LoadedModel Load(const std::string& path) {
  LoadOptions native;
  native.weight_mode = WeightMode::kOnTheFly;
  auto lm = LoadModel(path, native);
  EXPECT_TRUE(lm.ok()) << lm.status().ToString();
  return std::move(lm).value();
}

// Runs `plan` on `kv` and returns its logits.
std::vector<float> RunPlan(const Model& m, const BatchPlan& plan, KvCache* kv, Workspace& ws) {
  const int64_t v = m.config().vocab_size;
  std::vector<float> out(static_cast<size_t>(plan.num_logit_rows() * v));
  const Status s = m.Forward(
      plan, kv, ws, TensorView{out.data(), DType::kF32, Shape{plan.num_logit_rows(), v}}, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// A cache holding the prefix `ids` (prefill), and the prefill's last logits row.
KvCache Prefill(const Model& m, std::span<const int32_t> ids, Workspace& ws) {
  auto kv = m.MakeKvCache(1);
  EXPECT_TRUE(kv.ok());
  const int32_t last[1] = {static_cast<int32_t>(ids.size()) - 1};
  BatchPlan p;
  p.sequences.push_back(SequenceInput{ids, 0, last, 0});
  RunPlan(m, p, &*kv, ws);
  return std::move(kv).value();
}

// The branch of `node` (its ancestors and itself, root first).
std::vector<int32_t> Branch(const std::vector<int32_t>& parents, int32_t node) {
  std::vector<int32_t> b;
  for (int32_t a = node; a >= 0; a = parents[static_cast<size_t>(a)]) b.push_back(a);
  std::reverse(b.begin(), b.end());
  return b;
}

TEST(TreeForwardTest, EveryNodeGetsTheLogitsOfItsBranchBitForBit) {
  std::mt19937 rng(11);
  for (const std::string& path : Models()) {
    SCOPED_TRACE(path);
    LoadedModel lm = Load(path);
    const Model& m = *lm.model;
    const int64_t v = m.config().vocab_size;
    const std::vector<int32_t> prefix =
        lm.tokenizer->Encode("Once upon a time, there was a little dog named Max. He", true, false);
    for (int trial = 0; trial < 3; ++trial) {
      // The context's last token (parent -1), then 11 nodes below it.
      const int nodes = 12;
      std::vector<int32_t> tokens(nodes), parents(nodes);
      for (int i = 0; i < nodes; ++i) {
        tokens[static_cast<size_t>(i)] =
            static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, v - 1)(rng));
        parents[static_cast<size_t>(i)] =
            i == 0 ? -1 : std::uniform_int_distribution<int32_t>(0, i - 1)(rng);
      }
      Workspace ws;
      KvCache kv = Prefill(m, prefix, ws);
      std::vector<int32_t> rows(nodes);
      std::iota(rows.begin(), rows.end(), 0);
      BatchPlan tree;
      SequenceInput in{tokens, static_cast<int32_t>(prefix.size()), rows, 0};
      in.tree_parents = parents;
      tree.sequences.push_back(in);
      const std::vector<float> got = RunPlan(m, tree, &kv, ws);
      for (int32_t node = 0; node < nodes; ++node) {
        // The branch fed alone, as a chain, on a fresh cache of the same prefix.
        const std::vector<int32_t> branch = Branch(parents, node);
        std::vector<int32_t> chain;
        for (int32_t b : branch) chain.push_back(tokens[static_cast<size_t>(b)]);
        Workspace ws2;
        KvCache kv2 = Prefill(m, prefix, ws2);
        const int32_t last[1] = {static_cast<int32_t>(chain.size()) - 1};
        BatchPlan p;
        p.sequences.push_back(SequenceInput{chain, static_cast<int32_t>(prefix.size()), last, 0});
        const std::vector<float> want = RunPlan(m, p, &kv2, ws2);
        for (int64_t j = 0; j < v; ++j) {
          ASSERT_EQ(got[static_cast<size_t>(node * v + j)], want[static_cast<size_t>(j)])
              << "trial " << trial << " node " << node << " id " << j;
        }
      }
    }
  }
}

TEST(TreeForwardTest, KeepingTheAcceptedBranchContinuesAsIfOnlyItWasFed) {
  for (const std::string& path : Models()) {
    SCOPED_TRACE(path);
    LoadedModel lm = Load(path);
    const Model& m = *lm.model;
    const int64_t v = m.config().vocab_size;
    const std::vector<int32_t> prefix =
        lm.tokenizer->Encode("The sun was shining and the birds were", true, false);
    const auto p0 = static_cast<int32_t>(prefix.size());
    // Node 0 is the context's last token; accepted branch 0 -> 2 -> 5.
    const std::vector<int32_t> tokens = {11, 40, 41, 42, 43, 44, 45};
    const std::vector<int32_t> parents = {-1, 0, 0, 1, 1, 2, 3};
    Workspace ws;
    KvCache kv = Prefill(m, prefix, ws);
    std::vector<int32_t> rows(tokens.size());
    std::iota(rows.begin(), rows.end(), 0);
    BatchPlan tree;
    SequenceInput in{tokens, p0, rows, 0};
    in.tree_parents = parents;
    tree.sequences.push_back(in);
    RunPlan(m, tree, &kv, ws);
    // Keep the rows of nodes 2 and 5 (node 0 is already in place), then feed token 7 after them.
    const std::vector<int32_t> keep = {p0 + 2, p0 + 5};
    const std::vector<int32_t> next = {7, 8};
    const int32_t both[2] = {0, 1};
    BatchPlan cont;
    SequenceInput c{next, p0 + 3, both, 0};
    c.kv_keep = keep;
    cont.sequences.push_back(c);
    const std::vector<float> got = RunPlan(m, cont, &kv, ws);
    EXPECT_EQ(kv.length(0), p0 + 5);
    // Reference: prefix, then 11 41 44 7 8 as a chain.
    Workspace ws2;
    KvCache kv2 = Prefill(m, prefix, ws2);
    const std::vector<int32_t> chain = {11, 41, 44, 7, 8};
    const int32_t last_two[2] = {3, 4};
    BatchPlan ref;
    ref.sequences.push_back(SequenceInput{chain, p0, last_two, 0});
    const std::vector<float> want = RunPlan(m, ref, &kv2, ws2);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "row " << i / static_cast<size_t>(v);
    }
  }
}

TEST(TreeForwardTest, AllFeaturesKeepTheLogitsAndGiveEveryPosition) {
  for (const std::string& path : Models()) {
    SCOPED_TRACE(path);
    LoadedModel lm = Load(path);
    const Model& m = *lm.model;
    const int64_t d = m.config().hidden_size;
    const std::vector<int32_t> ids = lm.tokenizer->Encode(
        "Lily wanted to play with her friend, but it was raining.", true, false);
    const auto n = static_cast<int32_t>(ids.size());
    const int32_t last[1] = {n - 1};
    auto run = [&](bool all, Workspace& ws) {
      auto kv = m.MakeKvCache(1);
      EXPECT_TRUE(kv.ok());
      BatchPlan p;
      SequenceInput in{ids, 0, last, 0};
      in.all_features = all;
      p.sequences.push_back(in);
      return RunPlan(m, p, &*kv, ws);
    };
    Workspace plain_ws, all_ws;
    EXPECT_EQ(run(false, plain_ws), run(true, all_ws));
    // Every position's state equals what a forward asking logits of every row leaves in
    // last_normed (the same last layer over all rows).
    Workspace every_ws;
    std::vector<int32_t> rows(ids.size());
    std::iota(rows.begin(), rows.end(), 0);
    BatchPlan p;
    p.sequences.push_back(SequenceInput{ids, 0, rows, -1});
    RunPlan(m, p, nullptr, every_ws);
    for (int64_t i = 0; i < n * d; ++i) {
      ASSERT_EQ(all_ws.all_features.as<float>()[i], every_ws.last_normed.as<float>()[i])
          << "position " << i / d;
    }
  }
}

TEST(TreeForwardTest, BadTreesAndKeepsAreErrors) {
  LoadedModel lm = Load(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf");
  const Model& m = *lm.model;
  const std::vector<int32_t> prefix = {1, 20, 30, 40};
  const std::vector<int32_t> tokens = {5, 6, 7};
  const int32_t row[1] = {0};
  auto expect = [&](SequenceInput in, bool with_cache, const std::string& needle) {
    Workspace ws;
    KvCache kv = Prefill(m, prefix, ws);
    BatchPlan p;
    p.sequences.push_back(in);
    std::vector<float> out(static_cast<size_t>(m.config().vocab_size));
    const Status s =
        m.Forward(p, with_cache ? &kv : nullptr, ws,
                  TensorView{out.data(), DType::kF32, Shape{1, m.config().vocab_size}}, nullptr);
    EXPECT_FALSE(s.ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
    EXPECT_EQ(kv.length(0), 4) << "a failed forward leaves the cache as it was";
  };
  const std::vector<int32_t> good = {-1, 0, 0}, short_tree = {-1, 0}, loop = {-1, 2, 0},
                             bad_keep = {3, 2}, past_end = {9};
  SequenceInput in{tokens, 4, row, 0};
  in.tree_parents = short_tree;
  expect(in, true, "tree parents for");
  in.tree_parents = loop;
  expect(in, true, "earlier token");
  in.tree_parents = good;
  in.kv_seq = -1;
  expect(in, false, "KV cache sequence");
  in.kv_seq = 0;
  in.tree_parents = {};
  in.kv_keep = bad_keep;
  expect(in, true, "kv_keep");
  in.kv_keep = past_end;
  in.pos0 = 4;
  expect(in, true, "cannot move row 9");
}

}  // namespace
}  // namespace unmask
