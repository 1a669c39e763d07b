// The project's trained AR twin (models/unmask-tinystories-ar.gguf, general.architecture = llama):
// unmask's causal forward pass against the float64 reference logits
// (scripts/train/make_twin_goldens.py).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

TEST(TwinForwardTest, ArTwinLogitsMatchReference) {
  std::ifstream in(testing::TestDataPath("golden/twins/llama_forward.json"));
  ASSERT_TRUE(in);
  const nlohmann::json g = nlohmann::json::parse(in);
  auto lm =
      LoadModel(testing::SourceDir() + "/" + g.at("model_path").get<std::string>(), LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  EXPECT_EQ(lm->model->config().architecture, "llama");
  const std::vector<int32_t> ids = g.at("input_ids");
  const std::vector<int32_t> rows = g.at("rows");
  const std::vector<std::vector<double>> expected = g.at("logits");
  const double atol = g.at("atol"), rtol = g.at("rtol");
  const int64_t v = lm->model->config().vocab_size;
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{ids, 0, rows});
  std::vector<float> out(rows.size() * static_cast<size_t>(v));
  Workspace ws;
  ASSERT_TRUE(lm->model
                  ->Forward(plan, ws,
                            TensorView{out.data(), DType::kF32,
                                       Shape{static_cast<int64_t>(rows.size()), v}},
                            nullptr)
                  .ok());
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t j = 0; j < v; ++j) {
      const double want = expected[r][static_cast<size_t>(j)];
      const double got = out[r * static_cast<size_t>(v) + static_cast<size_t>(j)];
      ASSERT_LE(std::abs(got - want), atol + rtol * std::abs(want))
          << "row " << rows[r] << " id " << j;
    }
  }
}

}  // namespace
}  // namespace unmask
