// Helpers shared by the golden-file tests (LLaDA and Dream decoders, forward passes): listing the
// cases of tests/data/golden/<dir>, loading each test model once, and comparing a full forward's
// logits with a reference's.
#ifndef UNMASK_TESTS_GOLDEN_UTIL_H_
#define UNMASK_TESTS_GOLDEN_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/hf_import.h"
#include "model/loader.h"
#include "model/transformer.h"
#include "test_util.h"

namespace unmask::testing {

// Sorted file names of tests/data/golden/<dir>/*.json; empty when the folder is missing.
inline std::vector<std::string> GoldenFiles(const std::string& dir) {
  std::vector<std::string> out;
  const std::string path = TestDataPath("golden/" + dir);
  if (!std::filesystem::exists(path)) return out;
  for (const auto& e : std::filesystem::directory_iterator(path)) {
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A gtest parameter name for a golden file: its name without ".json", other characters than letters
// and digits as '_'.
inline std::string GoldenCaseName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.substr(0, info.param.size() - 5);
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

inline nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// tests/data/models/<name>, loaded once per test binary.
inline const LoadedModel& CachedModel(const std::string& name) {
  static std::map<std::string, std::unique_ptr<LoadedModel>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto m = LoadModel(TestDataPath("models/" + name), LoadOptions{});
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    it = cache.emplace(name, std::make_unique<LoadedModel>(std::move(m).value())).first;
  }
  return *it->second;
}

// The model of the Hugging Face checkpoint folder tests/data/hf/<name> (its GGUF view, without
// the tokenizer), with `mode` weights on the default backend.
inline StatusOr<std::unique_ptr<Model>> LoadHfModel(const std::string& name, WeightMode mode) {
  UNMASK_ASSIGN_OR_RETURN(auto view, ImportHfCheckpoint(TestDataPath("hf/" + name), false));
  std::shared_ptr<const gguf::GgufFile> file(std::move(view));
  UNMASK_ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(*file));
  UNMASK_ASSIGN_OR_RETURN(auto model,
                          TransformerModel::Create(file, std::move(config), mode, ComputeType::kF32,
                                                   nullptr, DefaultBackend()));
  return std::unique_ptr<Model>(std::move(model));
}

// Checks one uncached forward of `ids` (logits of every position) against `expected`
// [positions][vocab]: |got - want| <= atol + rtol |want|. Returns the largest error (or -1 after a
// reported failure).
inline double ExpectForwardNear(const Model& model, const std::vector<int32_t>& ids,
                                const std::vector<std::vector<double>>& expected, double atol,
                                double rtol, const std::string& what) {
  std::vector<int32_t> rows(ids.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{ids, 0, rows});
  const int64_t v = model.config().vocab_size;
  std::vector<float> out(ids.size() * static_cast<size_t>(v));
  Workspace ws;
  const Status st = model.Forward(
      plan, ws, TensorView{out.data(), DType::kF32, Shape{static_cast<int64_t>(ids.size()), v}},
      nullptr);
  if (!st.ok() || expected.size() != ids.size()) {
    ADD_FAILURE() << what << ": " << st.ToString() << ", " << expected.size()
                  << " reference rows for " << ids.size() << " positions";
    return -1;
  }
  double worst = 0;
  for (size_t r = 0; r < ids.size(); ++r) {
    if (expected[r].size() != static_cast<size_t>(v)) {
      ADD_FAILURE() << what << " row " << r << ": reference has " << expected[r].size() << " ids";
      return -1;
    }
    for (int64_t j = 0; j < v; ++j) {
      const double want = expected[r][static_cast<size_t>(j)];
      const double err = std::abs(out[r * static_cast<size_t>(v) + static_cast<size_t>(j)] - want);
      worst = std::max(worst, err);
      if (err > atol + rtol * std::abs(want)) {
        ADD_FAILURE() << what << " row " << r << " id " << j << ": error " << err;
        return -1;
      }
    }
  }
  return worst;
}

}  // namespace unmask::testing

#endif  // UNMASK_TESTS_GOLDEN_UTIL_H_
