// The loaded model owns its backend: LoadOptions::backend is the model's (Model::backend(),
// LoadedModel::backend), DefaultBackend() when none is given, and the logits of a forward must
// be on the backend's device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/tiny_llada.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

std::string WriteTiny(const std::string& name) {
  const std::string path = testing::TempDir() + "/" + name + ".gguf";
  EXPECT_EQ(testing::WriteTinyLlada(testing::TinyLladaSpec{}, path), "");
  return path;
}

TEST(ModelBackendTest, TheGivenBackendIsTheModels) {
  auto backend = CreateBackend({});
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  LoadOptions o;
  o.backend = *backend;
  auto lm = LoadModel(WriteTiny("given_backend"), o);
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  EXPECT_EQ(&lm->model->backend(), backend->get());
  EXPECT_EQ(lm->backend, *backend);
  EXPECT_NE(&lm->model->backend(), DefaultBackend().get());
  EXPECT_FALSE(lm->model->backend().Describe().empty());
  // The model keeps the backend alive.
  const Backend* raw = backend->get();
  *backend = nullptr;
  o.backend = nullptr;
  lm->backend = nullptr;
  EXPECT_EQ(&lm->model->backend(), raw);
  EXPECT_EQ(lm->model->backend().device(), Device::kCpu);
}

TEST(ModelBackendTest, NoBackendMeansDefaultBackend) {
  auto lm = LoadModel(WriteTiny("default_backend"), LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  EXPECT_EQ(&lm->model->backend(), DefaultBackend().get());
  EXPECT_EQ(lm->backend, DefaultBackend());
}

TEST(ModelBackendTest, LogitsOnAnotherDeviceAreRejected) {
  auto lm = LoadModel(WriteTiny("logits_device"), LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  const Model& m = *lm->model;
  const std::vector<int32_t> tokens = {1, 2}, rows = {1};
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{tokens, 0, rows});
  std::vector<float> out(static_cast<size_t>(m.config().vocab_size));
  TensorView logits{out.data(), DType::kF32, Shape{1, m.config().vocab_size}};
  logits.device = Device::kCuda;
  Workspace ws;
  const Status s = m.Forward(plan, ws, logits, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("cuda"), std::string::npos) << s.ToString();
  logits.device = Device::kCpu;
  EXPECT_TRUE(m.Forward(plan, ws, logits, nullptr).ok());
}

}  // namespace
}  // namespace unmask
