// The project's trained block-diffusion twin (models/unmask-tinystories-block.gguf, sdar, and its
// HF folder models/unmask-tinystories-block-hf): unmask's block-causal forward against the float64
// logits of the training code's PyTorch model (tests/data/golden/twins/sdar_forward.json, written
// by scripts/train/check_block_twin.py), uncached and as the decoder runs it (prefill of the whole
// prompt blocks, then one block at a time against the cache), both weight modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/hf_import.h"
#include "model/loader.h"
#include "model/transformer.h"
#include "test_util.h"

namespace unmask {
namespace {

std::vector<float> Forward(const Model& m, std::span<const int32_t> tokens, int32_t pos0,
                           const std::vector<int32_t>& rows, KvCache* kv) {
  const int64_t v = m.config().vocab_size;
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{tokens, pos0, rows, kv != nullptr ? 0 : -1});
  std::vector<float> out(std::max<size_t>(rows.size(), 1) * static_cast<size_t>(v));
  Workspace ws;
  const Status st = m.Forward(
      plan, kv, ws,
      TensorView{out.data(), DType::kF32, Shape{static_cast<int64_t>(rows.size()), v}}, nullptr);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

// The GGUF through LoadModel (model and tokenizer, as `unmask generate -m` loads it); the HF folder
// through its GGUF view without the tokenizer (reading tokenizer.json is not built into every
// configuration; the forward does not need it).
StatusOr<std::unique_ptr<Model>> Load(const std::string& path, bool hf, WeightMode mode) {
  if (hf) {
    UNMASK_ASSIGN_OR_RETURN(auto view, ImportHfCheckpoint(path, false));
    std::shared_ptr<const gguf::GgufFile> file(std::move(view));
    UNMASK_ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(*file));
    UNMASK_ASSIGN_OR_RETURN(
        auto model, TransformerModel::Create(file, std::move(config), mode, ComputeType::kF32,
                                             nullptr, DefaultBackend()));
    return std::unique_ptr<Model>(std::move(model));
  }
  LoadOptions opt;
  opt.weight_mode = mode;
  UNMASK_ASSIGN_OR_RETURN(LoadedModel lm, LoadModel(path, opt));
  EXPECT_EQ(lm.tokenizer->special().mask, 3);
  return std::move(lm.model);
}

TEST(BlockTwinForwardTest, LogitsMatchPyTorch) {
  std::ifstream in(testing::TestDataPath("golden/twins/sdar_forward.json"));
  ASSERT_TRUE(in);
  const nlohmann::json g = nlohmann::json::parse(in);
  const std::vector<int32_t> ids = g.at("input_ids");
  const std::vector<std::vector<double>> want = g.at("logits");
  const int32_t b = g.at("block_length"), prefill = g.at("prefill_length");
  const double atol = g.at("atol"), rtol = g.at("rtol");
  const int32_t n = static_cast<int32_t>(ids.size());
  for (const char* key : {"model_path", "hf_folder"}) {
    for (WeightMode mode : {WeightMode::kPacked, WeightMode::kOnTheFly}) {
      const std::string path = testing::SourceDir() + "/" + g.at(key).get<std::string>();
      auto lm = Load(path, std::string(key) == "hf_folder", mode);
      ASSERT_TRUE(lm.ok()) << lm.status().ToString();
      const Model& m = **lm;
      EXPECT_EQ(m.config().architecture, "sdar");
      EXPECT_EQ(m.config().block_length, b);
      const int64_t v = m.config().vocab_size;
      double worst = 0;
      auto check = [&](const std::vector<float>& got, int32_t got_row, int32_t pos,
                       const char* what) {
        for (int64_t j = 0; j < v; ++j) {
          const double w = want[static_cast<size_t>(pos)][static_cast<size_t>(j)];
          const double e = std::abs(
              got[static_cast<size_t>(got_row) * static_cast<size_t>(v) + static_cast<size_t>(j)] -
              w);
          worst = std::max(worst, e);
          ASSERT_LE(e, atol + rtol * std::abs(w))
              << path << " " << what << " position " << pos << " id " << j;
        }
      };
      std::vector<int32_t> rows(static_cast<size_t>(n));
      for (int32_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = i;
      const std::vector<float> full = Forward(m, ids, 0, rows, nullptr);
      for (int32_t i = 0; i < n; ++i) check(full, i, i, "uncached");
      auto kv = m.MakeKvCache(1);
      ASSERT_TRUE(kv.ok());
      const std::span<const int32_t> all(ids);
      Forward(m, all.first(static_cast<size_t>(prefill)), 0, {}, &*kv);
      for (int32_t s = prefill; s < n; s += b) {
        const int32_t len = std::min(b, n - s);
        std::vector<int32_t> block_rows(static_cast<size_t>(len));
        for (int32_t i = 0; i < len; ++i) block_rows[static_cast<size_t>(i)] = i;
        const std::vector<float> got = Forward(
            m, all.subspan(static_cast<size_t>(s), static_cast<size_t>(len)), s, block_rows, &*kv);
        for (int32_t i = 0; i < len; ++i) check(got, i, s + i, "cached");
      }
      std::printf("%s, %s weights: max |unmask - PyTorch f64| = %.3g over %d x %lld logits\n",
                  g.at(key).get<std::string>().c_str(),
                  mode == WeightMode::kPacked ? "packed" : "native", worst, 2 * n,
                  static_cast<long long>(v));
    }
  }
}

}  // namespace
}  // namespace unmask
