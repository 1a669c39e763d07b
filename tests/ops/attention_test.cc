// Attention against the double-precision reference (ops/ref/attention_ref), per GEMM provider,
// over head_dim 16/64/96/128, GQA ratios 1/2/4, bidirectional and causal (q_pos0 0 and > 0),
// sizes on both the direct-loop and the Sgemm path.
//
// Tolerance, per output element (query i, head h, channel c), following the error propagation:
//  * scores s_j = scale * q.k_j from an f32 GEMM: |ds_j| <= delta = gamma_{D+1} scale |q|_2 |k|max
//    (Cauchy-Schwarz on the dot-product bound; +1 for the scaling);
//  * softmax of perturbed scores moves each p_j by <= 2 delta p_j (exp(2 delta) - 1, first
//    order), i.e. sum_j |dp_j| <= 2 delta; softmax's own rounding adds <= (2S + 16) u in total
//    (see softmax_test.cc: u + (S + 16) u p_j per entry, summed over S entries);
//  * out = sum_j p_j v_j from an f32 GEMM adds gamma_S |v|max.
// So |out - ref| <= |v|max (2 delta + (2S + 16) u + gamma_S); we allow 2x for second-order terms.
// Second check: NMSE <= 1e-7 (llama.cpp test-backend-ops default).
#include "ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/ref/attention_ref.h"

namespace unmask {
namespace {

using testing::Gamma;
using testing::kU;

struct AttnCase {
  int64_t t, s, heads, kv_heads, d;
  AttentionMask mask;
  int64_t q_pos0;
  int64_t block_length = 0;           // kBlockCausal
  std::vector<int32_t> parents = {};  // kTree: the nodes' parents (keys from q_pos0 on)
  int64_t tree_q0 = 0;                // kTree: the node of query 0
};

std::string CaseName(const AttnCase& c) {
  return "t=" + std::to_string(c.t) + " s=" + std::to_string(c.s) +
         " h=" + std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) +
         " d=" + std::to_string(c.d) +
         (c.mask == AttentionMask::kCausal ? " causal q_pos0=" + std::to_string(c.q_pos0) : "") +
         (c.mask == AttentionMask::kBlockCausal
              ? " block-causal q_pos0=" + std::to_string(c.q_pos0) +
                    " block=" + std::to_string(c.block_length)
              : "") +
         (c.mask == AttentionMask::kTree
              ? " tree of " + std::to_string(c.parents.size()) + " nodes after " +
                    std::to_string(c.q_pos0) + ", queries from node " + std::to_string(c.tree_q0)
              : "");
}

void CheckCase(const AttnCase& c, uint64_t seed) {
  SCOPED_TRACE(CaseName(c));
  const auto q = testing::RandomFloats(static_cast<size_t>(c.t * c.heads * c.d), seed, -2, 2);
  const auto k =
      testing::RandomFloats(static_cast<size_t>(c.s * c.kv_heads * c.d), seed + 1, -2, 2);
  const auto v =
      testing::RandomFloats(static_cast<size_t>(c.s * c.kv_heads * c.d), seed + 2, -1, 1);
  AttentionParams params;
  params.scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  params.mask = c.mask;
  params.q_pos0 = c.q_pos0;
  params.block_length = c.block_length;
  params.tree_parents = c.parents;
  params.tree_q0 = c.tree_q0;
  std::vector<float> out(q.size(), std::numeric_limits<float>::quiet_NaN()), want(q.size());
  const Status st = Attention(testing::View(q, Shape{c.t, c.heads, c.d}),
                              testing::View(k, Shape{c.s, c.kv_heads, c.d}),
                              testing::View(v, Shape{c.s, c.kv_heads, c.d}), params,
                              testing::View(out, Shape{c.t, c.heads, c.d}));
  ASSERT_TRUE(st.ok()) << st.ToString();
  ref::Attention(q.data(), k.data(), v.data(), c.t, c.s, c.heads, c.kv_heads, c.d, params,
                 want.data());
  double k_max = 0.0, v_max = 0.0;
  for (int64_t j = 0; j < c.s * c.kv_heads; ++j) {
    double norm = 0.0;
    for (int64_t e = 0; e < c.d; ++e) norm += std::pow(k[static_cast<size_t>(j * c.d + e)], 2);
    k_max = std::max(k_max, std::sqrt(norm));
  }
  for (float x : v) v_max = std::max(v_max, static_cast<double>(std::fabs(x)));
  int failures = 0;
  for (int64_t row = 0; row < c.t * c.heads; ++row) {
    double q_norm = 0.0;
    for (int64_t e = 0; e < c.d; ++e) q_norm += std::pow(q[static_cast<size_t>(row * c.d + e)], 2);
    const double delta = Gamma(c.d + 1) * params.scale * std::sqrt(q_norm) * k_max;
    const double tol =
        2 * v_max * (2 * delta + static_cast<double>(2 * c.s + 16) * kU + Gamma(c.s));
    for (int64_t e = 0; e < c.d; ++e) {
      const size_t o = static_cast<size_t>(row * c.d + e);
      const double err = std::fabs(static_cast<double>(out[o]) - want[o]);
      if (!(err <= tol) && failures++ < 5) {
        ADD_FAILURE() << "query " << row / c.heads << " head " << row % c.heads << " dim " << e
                      << ": got " << out[o] << " want " << want[o] << " |err| " << err << " > tol "
                      << tol;
      }
    }
  }
  EXPECT_LE(testing::Nmse(out, want), 1e-7);
}

class AttentionTest : public testing::ProviderTest {};

TEST_P(AttentionTest, MatchesReference) {
  uint64_t seed = 1;
  for (int64_t d : {16, 64, 96, 128}) {
    for (int64_t ratio : {1, 2, 4}) {
      const int64_t kv = 2, h = kv * ratio;
      for (AttentionMask mask : {AttentionMask::kNone, AttentionMask::kCausal}) {
        for (int64_t q_pos0 : {0, 5}) {
          if (mask == AttentionMask::kNone && q_pos0 != 0) continue;
          // Direct loops (t * s * d <= 32K) and the Sgemm path (incl. 2 query blocks at t = 160).
          CheckCase({3, 7 + q_pos0, h, kv, d, mask, q_pos0}, seed += 3);
          CheckCase({37, 45 + q_pos0, h, kv, d, mask, q_pos0}, seed += 3);
          if (d == 64 && ratio == 2)
            CheckCase({160, 160 + q_pos0, h, kv, d, mask, q_pos0}, seed += 3);
        }
      }
    }
  }
  // Decode-like shapes: one query against many keys; a query past the last key sees them all.
  CheckCase({1, 300, 8, 2, 64, AttentionMask::kCausal, 299}, 900);
  CheckCase({2, 100, 4, 4, 128, AttentionMask::kNone, 0}, 901);
  CheckCase({4, 10, 4, 1, 32, AttentionMask::kCausal, 20}, 902);
  // Block-causal (SDAR prefill and block steps): blocks aligned to absolute position 0, queries
  // starting mid-block, the direct loops and the Sgemm path, a block longer than the keys.
  for (int64_t block : {1, 4, 8, 32}) {
    for (int64_t q_pos0 : {0, 4, 6}) {
      CheckCase({3, 16 + q_pos0, 4, 2, 16, AttentionMask::kBlockCausal, q_pos0, block}, seed += 3);
      CheckCase({40, 48 + q_pos0, 4, 2, 64, AttentionMask::kBlockCausal, q_pos0, block}, seed += 3);
      CheckCase({160, 168 + q_pos0, 4, 2, 64, AttentionMask::kBlockCausal, q_pos0, block},
                seed += 3);
    }
  }
}

TEST_P(AttentionTest, BlockCausalEqualsCausalAtBlockOneAndNoneWithinOneBlock) {
  // block_length 1 is causal; one block covering every key is bidirectional: bit-identical.
  const int64_t t = 24, s = 24, h = 4, kv = 2, d = 32;
  const auto q = testing::RandomFloats(static_cast<size_t>(t * h * d), 71);
  const auto k = testing::RandomFloats(static_cast<size_t>(s * kv * d), 72);
  const auto v = testing::RandomFloats(static_cast<size_t>(s * kv * d), 73);
  auto run = [&](AttentionMask mask, int64_t block) {
    std::vector<float> out(q.size());
    AttentionParams p{0.2f, mask, 0, block};
    EXPECT_TRUE(Attention(testing::View(q, Shape{t, h, d}), testing::View(k, Shape{s, kv, d}),
                          testing::View(v, Shape{s, kv, d}), p, testing::View(out, Shape{t, h, d}))
                    .ok());
    return out;
  };
  EXPECT_EQ(run(AttentionMask::kBlockCausal, 1), run(AttentionMask::kCausal, 0));
  EXPECT_EQ(run(AttentionMask::kBlockCausal, 32), run(AttentionMask::kNone, 0));
}

TEST_P(AttentionTest, CausalFirstQueryCopiesFirstValue) {
  // Query 0 at position 0 sees only key 0: its output is v[0] exactly (softmax of one entry = 1).
  const int64_t s = 50, d = 64;
  const auto q = testing::RandomFloats(static_cast<size_t>(40 * 2 * d), 1);
  const auto k = testing::RandomFloats(static_cast<size_t>(s * 2 * d), 2);
  const auto v = testing::RandomFloats(static_cast<size_t>(s * 2 * d), 3);
  std::vector<float> out(q.size());
  AttentionParams params{0.125f, AttentionMask::kCausal, 0};
  ASSERT_TRUE(Attention(testing::View(q, Shape{40, 2, d}), testing::View(k, Shape{s, 2, d}),
                        testing::View(v, Shape{s, 2, d}), params,
                        testing::View(out, Shape{40, 2, d}))
                  .ok());
  for (int64_t e = 0; e < 2 * d; ++e)
    EXPECT_EQ(out[static_cast<size_t>(e)], v[static_cast<size_t>(e)]);
}

// A random tree of `nodes` nodes: each node's parent is -1 (a child of the prefix) or an earlier
// node, so trees of every shape come up (chains, stars, several roots).
std::vector<int32_t> RandomTree(int64_t nodes, std::mt19937_64& rng) {
  std::vector<int32_t> parents;
  for (int64_t r = 0; r < nodes; ++r) {
    parents.push_back(static_cast<int32_t>(std::uniform_int_distribution<int64_t>(-1, r - 1)(rng)));
  }
  return parents;
}

TEST_P(AttentionTest, TreeMaskMatchesReferenceOverRandomTrees) {
  std::mt19937_64 rng(2026);
  uint64_t seed = 5000;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t nodes = std::uniform_int_distribution<int64_t>(1, 16)(rng);
    const int64_t prefix = std::uniform_int_distribution<int64_t>(0, 40)(rng);
    const int64_t q0 = std::uniform_int_distribution<int64_t>(0, nodes - 1)(rng);
    const int64_t t = std::uniform_int_distribution<int64_t>(1, nodes - q0)(rng);
    const int64_t d = trial % 3 == 0 ? 64 : 32;
    const int64_t kv = 1 + trial % 2, h = kv * (1 + trial % 4);
    // Keys past the tree (a longer cache) are never seen.
    const int64_t extra = trial % 5 == 0 ? 3 : 0;
    CheckCase({t, prefix + nodes + extra, h, kv, d, AttentionMask::kTree, prefix, 0,
               RandomTree(nodes, rng), q0},
              seed += 3);
  }
}

TEST_P(AttentionTest, TreeQueryEqualsCausalQueryOverItsKeysBitForBit) {
  // What makes tree verification exact: a node's output is the causal output of one query at the
  // end of the gathered keys (prefix + ancestors + itself), bit for bit; a chain is the causal
  // mask.
  std::mt19937_64 rng(7);
  const int64_t h = 6, kv = 2, d = 32;
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t nodes = std::uniform_int_distribution<int64_t>(1, 16)(rng);
    const int64_t prefix = std::uniform_int_distribution<int64_t>(0, 30)(rng);
    const int64_t s = prefix + nodes;
    std::vector<int32_t> parents = RandomTree(nodes, rng);
    if (trial % 4 == 0) {
      for (int64_t r = 0; r < nodes; ++r)
        parents[static_cast<size_t>(r)] = static_cast<int32_t>(r - 1);
    }
    const auto q = testing::RandomFloats(static_cast<size_t>(nodes * h * d), 100 + trial);
    const auto k = testing::RandomFloats(static_cast<size_t>(s * kv * d), 200 + trial);
    const auto v = testing::RandomFloats(static_cast<size_t>(s * kv * d), 300 + trial);
    AttentionParams tp{0.17f, AttentionMask::kTree, prefix};
    tp.tree_parents = parents;
    std::vector<float> out(q.size());
    ASSERT_TRUE(Attention(testing::View(q, Shape{nodes, h, d}), testing::View(k, Shape{s, kv, d}),
                          testing::View(v, Shape{s, kv, d}), tp,
                          testing::View(out, Shape{nodes, h, d}))
                    .ok());
    std::vector<int64_t> tree;
    for (int64_t m = 0; m < nodes; ++m) {
      TreeKeys(tp, m, &tree);
      std::vector<int64_t> keys;
      for (int64_t j = 0; j < prefix; ++j) keys.push_back(j);
      keys.insert(keys.end(), tree.begin(), tree.end());
      const auto n = static_cast<int64_t>(keys.size());
      std::vector<float> kg, vg;
      for (int64_t key : keys) {
        kg.insert(kg.end(), k.begin() + key * kv * d, k.begin() + (key + 1) * kv * d);
        vg.insert(vg.end(), v.begin() + key * kv * d, v.begin() + (key + 1) * kv * d);
      }
      const std::vector<float> qm(q.begin() + m * h * d, q.begin() + (m + 1) * h * d);
      std::vector<float> one(static_cast<size_t>(h * d));
      ASSERT_TRUE(Attention(testing::View(qm, Shape{1, h, d}), testing::View(kg, Shape{n, kv, d}),
                            testing::View(vg, Shape{n, kv, d}),
                            AttentionParams{0.17f, AttentionMask::kCausal, n - 1},
                            testing::View(one, Shape{1, h, d}))
                      .ok());
      for (int64_t e = 0; e < h * d; ++e) {
        ASSERT_EQ(out[static_cast<size_t>(m * h * d + e)], one[static_cast<size_t>(e)])
            << "trial " << trial << " node " << m << " element " << e;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllProviders, AttentionTest, ::testing::ValuesIn(testing::AllProviders()),
                         testing::ProviderName);

TEST(AttentionErrorsTest, InvalidArguments) {
  std::vector<float> q(4 * 4 * 8), k(6 * 2 * 8), v(6 * 2 * 8), out(4 * 4 * 8);
  const TensorView qv = testing::View(q, Shape{4, 4, 8});
  const TensorView kv = testing::View(k, Shape{6, 2, 8});
  const TensorView vv = testing::View(v, Shape{6, 2, 8});
  const TensorView ov = testing::View(out, Shape{4, 4, 8});
  const AttentionParams ok_params{0.3f, AttentionMask::kNone, 0};
  auto expect_invalid = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  EXPECT_TRUE(Attention(qv, kv, vv, ok_params, ov).ok());
  expect_invalid(Attention(testing::View(q, Shape{16, 8}), kv, vv, ok_params, ov), "rank 3");
  expect_invalid(Attention(qv, testing::View(k, Shape{6, 2, 4, 2}), vv, ok_params, ov), "rank 3");
  expect_invalid(Attention(qv, testing::View(k, Shape{12, 2, 4}), testing::View(v, Shape{12, 2, 4}),
                           ok_params, ov),
                 "head_dim");
  expect_invalid(Attention(qv, kv, testing::View(v, Shape{3, 4, 8}), ok_params, ov), "shape of k");
  expect_invalid(Attention(qv, kv, vv, ok_params, testing::View(out, Shape{4, 2, 16})),
                 "shape of q");
  expect_invalid(Attention(testing::View(q, Shape{4, 3, 8}), kv, vv, ok_params,
                           testing::View(out, Shape{4, 3, 8})),
                 "multiple of num_kv_heads");
  expect_invalid(Attention(qv, testing::View(k, Shape{6, 0, 8}), testing::View(v, Shape{6, 0, 8}),
                           ok_params, ov),
                 "num_kv_heads");
  expect_invalid(Attention(qv, testing::View(k, Shape{0, 2, 8}), testing::View(v, Shape{0, 2, 8}),
                           ok_params, ov),
                 "no keys");
  expect_invalid(
      Attention(TensorView{q.data(), DType::kF16, Shape{4, 4, 8}}, kv, vv, ok_params, ov), "f32");
  expect_invalid(
      Attention(qv, kv, vv, AttentionParams{0.3f, AttentionMask::kBlockCausal, 0, 0}, ov),
      "block_length");
  expect_invalid(Attention(qv, kv, vv, AttentionParams{0.3f, AttentionMask::kCausal, -1}, ov),
                 "q_pos0");
  expect_invalid(Attention(qv, kv, vv, AttentionParams{0.3f, static_cast<AttentionMask>(7), 0}, ov),
                 "AttentionMask");
  expect_invalid(
      Attention(qv, kv, vv,
                AttentionParams{std::numeric_limits<float>::quiet_NaN(), AttentionMask::kNone, 0},
                ov),
      "scale");
  expect_invalid(
      Attention(qv, kv, vv,
                AttentionParams{std::numeric_limits<float>::infinity(), AttentionMask::kNone, 0},
                ov),
      "scale");
  // Tree masks: a parent that is not an earlier node, queries past the last node, nodes past the
  // keys.
  const std::vector<int32_t> good_tree = {-1, 0, 0, 1}, self_parent = {-1, 1, 0, 1},
                             late_parent = {-1, 2, 0, 1}, bad_parent = {-2, 0, 0, 1};
  AttentionParams tree{0.3f, AttentionMask::kTree, 2};
  tree.tree_parents = good_tree;
  EXPECT_TRUE(Attention(qv, kv, vv, tree, ov).ok());
  for (const auto* parents : {&self_parent, &late_parent, &bad_parent}) {
    tree.tree_parents = *parents;
    expect_invalid(Attention(qv, kv, vv, tree, ov), "earlier node");
  }
  tree.tree_parents = good_tree;
  tree.tree_q0 = 1;
  expect_invalid(Attention(qv, kv, vv, tree, ov), "tree queries");
  tree.tree_q0 = 0;
  tree.q_pos0 = 3;
  expect_invalid(Attention(qv, kv, vv, tree, ov), "needs that many keys");
  expect_invalid(Attention(qv, kv, vv, ok_params, qv), "must not overlap");
  expect_invalid(
      Attention(qv, kv, vv, ok_params, TensorView{k.data(), DType::kF32, Shape{4, 4, 8}}),
      "must not overlap");
  expect_invalid(Attention(qv, kv, vv, ok_params, TensorView{nullptr, DType::kF32, Shape{4, 4, 8}}),
                 "null data");
  // No queries: valid, nothing to do (even with no keys).
  EXPECT_TRUE(Attention(TensorView{nullptr, DType::kF32, Shape{0, 4, 8}},
                        testing::View(k, Shape{0, 2, 8}), testing::View(v, Shape{0, 2, 8}),
                        ok_params, TensorView{nullptr, DType::kF32, Shape{0, 4, 8}})
                  .ok());
}

}  // namespace
}  // namespace unmask
