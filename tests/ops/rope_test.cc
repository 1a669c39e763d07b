// RoPE against the double-precision reference (ops/ref/rope_ref), the table against the formula,
// and the interleaved/NEOX equivalence under llama.cpp's Q/K weight permutation.
//
// Tolerance: the table holds cos/sin rounded to f32 (relative error <= u each); the kernel
// computes fma(a, c, -(b s)) and fma(a, s, b c): one rounding of the product and one of the fma.
// So |out - ref| <= (|a| + |b|) * 2u (table) + 2u * (|a| + |b|) (arithmetic) = 4u (|a| + |b|).
#include "ops/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "op_test_util.h"
#include "ops/ref/linear_ref.h"
#include "ops/ref/rope_ref.h"

namespace unmask {
namespace {

using testing::kU;

TEST(RopeTableTest, ValuesFollowTheFormula) {
  auto table = RopeTable::Create(64, 500000.0, 300);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->rope_dim(), 64);
  EXPECT_EQ(table->max_positions(), 300);
  for (int64_t pos : {0, 1, 17, 299}) {
    for (int64_t i = 0; i < 32; ++i) {
      const double theta = static_cast<double>(pos) * std::pow(500000.0, -2.0 * i / 64.0);
      EXPECT_EQ(table->cos(pos)[i], static_cast<float>(std::cos(theta))) << pos << " " << i;
      EXPECT_EQ(table->sin(pos)[i], static_cast<float>(std::sin(theta))) << pos << " " << i;
    }
  }
  EXPECT_EQ(table->cos(0)[5], 1.0f);
  EXPECT_EQ(table->sin(0)[5], 0.0f);
}

TEST(RopeTableTest, CreateErrors) {
  for (int64_t dim : {0, -2, 7}) {
    auto t = RopeTable::Create(dim, 10000.0, 16);
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << dim;
    EXPECT_NE(t.status().message().find("rope_dim"), std::string::npos);
  }
  for (double base : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                      std::numeric_limits<double>::infinity()}) {
    auto t = RopeTable::Create(8, base, 16);
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << base;
    EXPECT_NE(t.status().message().find("base"), std::string::npos);
  }
  for (int64_t max_pos : {int64_t{0}, int64_t{-5}, int64_t{1} << 40}) {
    auto t = RopeTable::Create(8, 10000.0, max_pos);
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << max_pos;
    EXPECT_NE(t.status().message().find("max_positions"), std::string::npos);
  }
}

struct RopeCase {
  RopeLayout layout;
  int64_t head_dim;
  int64_t rope_dim;
};
void PrintTo(const RopeCase& c, std::ostream* os) {
  *os << (c.layout == RopeLayout::kNeox ? "neox" : "interleaved") << "_head" << c.head_dim
      << "_rope" << c.rope_dim;
}

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesReference) {
  const RopeCase c = GetParam();
  const double base = 10000.0;
  auto table = RopeTable::Create(c.rope_dim, base, 4096);
  ASSERT_TRUE(table.ok());
  for (int64_t m : {0, 1, 5, 33}) {
    for (int64_t heads : {1, 3}) {
      SCOPED_TRACE("m=" + std::to_string(m) + " heads=" + std::to_string(heads));
      std::vector<float> x =
          testing::RandomFloats(static_cast<size_t>(m * heads * c.head_dim), 7, -2.0f, 2.0f);
      std::vector<int32_t> positions(static_cast<size_t>(m));
      for (int64_t i = 0; i < m; ++i)
        positions[static_cast<size_t>(i)] = static_cast<int32_t>((i * 997) % 4096);
      std::vector<float> want(x);
      ref::ApplyRope(want.data(), m, heads, c.head_dim, positions.data(), c.rope_dim, base,
                     c.layout);
      const std::vector<float> before(x);
      ASSERT_TRUE(
          ApplyRope(testing::View(x, Shape{m, heads, c.head_dim}), positions, *table, c.layout)
              .ok());
      const int64_t half = c.rope_dim / 2;
      for (int64_t r = 0; r < m * heads; ++r) {
        const float* in = before.data() + r * c.head_dim;
        for (int64_t d = 0; d < c.head_dim; ++d) {
          const size_t o = static_cast<size_t>(r * c.head_dim + d);
          if (d >= c.rope_dim) {
            ASSERT_EQ(x[o], in[d]) << "dims >= rope_dim must be unchanged";
            continue;
          }
          // The pair partner of d.
          int64_t pair_i;
          if (c.layout == RopeLayout::kInterleaved) {
            pair_i = d / 2;
          } else {
            pair_i = d % half;
          }
          const int64_t ia = c.layout == RopeLayout::kInterleaved ? 2 * pair_i : pair_i;
          const int64_t ib = c.layout == RopeLayout::kInterleaved ? 2 * pair_i + 1 : pair_i + half;
          const double tol = 4 * kU * (std::fabs(in[ia]) + std::fabs(in[ib]));
          ASSERT_LE(std::fabs(static_cast<double>(x[o]) - want[o]), tol)
              << "row " << r << " dim " << d << " got " << x[o] << " want " << want[o];
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    LayoutsAndHeadDims, RopeTest,
    ::testing::Values(RopeCase{RopeLayout::kInterleaved, 16, 16},
                      RopeCase{RopeLayout::kInterleaved, 64, 64},
                      RopeCase{RopeLayout::kInterleaved, 96, 96},
                      RopeCase{RopeLayout::kInterleaved, 128, 128},
                      RopeCase{RopeLayout::kInterleaved, 128, 64},  // partial rotary
                      RopeCase{RopeLayout::kNeox, 16, 16}, RopeCase{RopeLayout::kNeox, 64, 64},
                      RopeCase{RopeLayout::kNeox, 96, 96}, RopeCase{RopeLayout::kNeox, 128, 128},
                      RopeCase{RopeLayout::kNeox, 96, 32}),
    [](const ::testing::TestParamInfo<RopeCase>& p) {
      return std::string(p.param.layout == RopeLayout::kInterleaved ? "interleaved" : "neox") +
             "_d" + std::to_string(p.param.head_dim) + "_r" + std::to_string(p.param.rope_dim);
    });

// llama.cpp's converter (convert_hf_to_gguf.py, LlamaModel.permute) stores Q/K weights as
//   w.reshape(n_head, 2, head_dim / 2, K).swapaxes(1, 2).reshape(w.shape)
// so GGUF row h * head_dim + 2i + j holds HF row h * head_dim + j * head_dim / 2 + i. Interleaved
// RoPE on the GGUF projection must equal NEOX ("rotate_half") RoPE on the HF projection, permuted
// the same way: bit for bit, since both layouts do the same arithmetic on the same pairs.
TEST(RopeEquivalenceTest, InterleavedOnPermutedWeightsEqualsNeox) {
  const int64_t n_head = 3, head_dim = 64, k = 40, m = 9;
  const int64_t n = n_head * head_dim;
  const std::vector<float> w_hf = testing::RandomFloats(static_cast<size_t>(n * k), 1);
  std::vector<float> w_gguf(w_hf.size());
  auto gguf_row = [&](int64_t h, int64_t j, int64_t i) { return h * head_dim + 2 * i + j; };
  auto hf_row = [&](int64_t h, int64_t j, int64_t i) {
    return h * head_dim + j * head_dim / 2 + i;
  };
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i = 0; i < head_dim / 2; ++i) {
        std::copy_n(w_hf.data() + hf_row(h, j, i) * k, k, w_gguf.data() + gguf_row(h, j, i) * k);
      }
    }
  }
  const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * k), 2);
  std::vector<float> q_hf(static_cast<size_t>(m * n)), q_gguf(static_cast<size_t>(m * n));
  ref::Linear(x.data(), m, k, w_hf.data(), n, q_hf.data());
  ref::Linear(x.data(), m, k, w_gguf.data(), n, q_gguf.data());
  auto table = RopeTable::Create(head_dim, 500000.0, 1000);
  ASSERT_TRUE(table.ok());
  std::vector<int32_t> positions(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) positions[static_cast<size_t>(i)] = static_cast<int32_t>(i * 111);
  ASSERT_TRUE(ApplyRope(testing::View(q_hf, Shape{m, n_head, head_dim}), positions, *table,
                        RopeLayout::kNeox)
                  .ok());
  ASSERT_TRUE(ApplyRope(testing::View(q_gguf, Shape{m, n_head, head_dim}), positions, *table,
                        RopeLayout::kInterleaved)
                  .ok());
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t h = 0; h < n_head; ++h) {
      for (int64_t j = 0; j < 2; ++j) {
        for (int64_t i = 0; i < head_dim / 2; ++i) {
          ASSERT_EQ(q_gguf[static_cast<size_t>(r * n + gguf_row(h, j, i))],
                    q_hf[static_cast<size_t>(r * n + hf_row(h, j, i))])
              << "row " << r << " head " << h << " pair " << i << " half " << j;
        }
      }
    }
  }
}

TEST(RopeTest, ApplyErrors) {
  auto table = RopeTable::Create(16, 10000.0, 8);
  ASSERT_TRUE(table.ok());
  std::vector<float> x(2 * 2 * 16);
  const TensorView xv = testing::View(x, Shape{2, 2, 16});
  const std::vector<int32_t> pos = {0, 7};
  auto expect_invalid = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_invalid(ApplyRope(xv, std::vector<int32_t>{0}, *table, RopeLayout::kNeox), "1 positions");
  expect_invalid(ApplyRope(xv, std::vector<int32_t>{0, 8}, *table, RopeLayout::kNeox),
                 "position 8");
  expect_invalid(ApplyRope(xv, std::vector<int32_t>{-1, 0}, *table, RopeLayout::kInterleaved),
                 "position -1");
  expect_invalid(ApplyRope(testing::View(x, Shape{2, 4, 8}), pos, *table, RopeLayout::kNeox),
                 "exceeds head_dim");
  expect_invalid(ApplyRope(testing::View(x, Shape{4, 16}), pos, *table, RopeLayout::kNeox),
                 "rank 3");
  expect_invalid(
      ApplyRope(TensorView{x.data(), DType::kF16, Shape{2, 2, 16}}, pos, *table, RopeLayout::kNeox),
      "f32");
  expect_invalid(ApplyRope(xv, pos, RopeTable(), RopeLayout::kNeox), "empty");
  expect_invalid(ApplyRope(xv, pos, *table, static_cast<RopeLayout>(9)), "RopeLayout");
  EXPECT_TRUE(
      ApplyRope(TensorView{nullptr, DType::kF32, Shape{0, 2, 16}}, {}, *table, RopeLayout::kNeox)
          .ok());
}

}  // namespace
}  // namespace unmask
