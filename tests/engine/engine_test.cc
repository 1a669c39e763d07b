// Engine: created from backend options, loads models onto its backend, builds decoders with the
// factory and runs them through the one step (RunToCompletion == a solo StepBatch loop).
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <vector>

#include "test_util.h"

namespace unmask {
namespace {

TEST(EngineTest, CreateRefusesBadBackendOptions) {
  EngineOptions o;
  o.backend.device = "cuda";
  EXPECT_EQ(Engine::Create(o).status().code(), StatusCode::kUnimplemented);
  o.backend.device = "tpu";
  EXPECT_EQ(Engine::Create(o).status().code(), StatusCode::kInvalidArgument);
  o.backend.device = "cpu";
  o.backend.gemm = "nope";
  EXPECT_EQ(Engine::Create(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(EngineTest, LoadsOntoItsBackendAndRunsDecoders) {
  EngineOptions o;
  o.backend.num_threads = 1;
  auto engine = Engine::Create(o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Engine& e = **engine;
  EXPECT_FALSE(e.LoadModel("missing", "/nonexistent.gguf", WeightMode::kAuto).ok());
  auto index = e.LoadModel("twin", testing::SourceDir() + "/models/unmask-tinystories-llada.gguf",
                           WeightMode::kAuto);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(&e.model(*index).model->backend(), e.backend().get());
  EXPECT_EQ(e.name(*index), "twin");
  DecodeOptions d;
  d.max_tokens = 16;
  d.diffusion.block_length = 16;
  auto built = e.MakeDecoder(*index, std::vector<int32_t>{1, 2, 3}, d);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  Decoder* const one[1] = {built->decoder.get()};
  int calls = 0;
  auto stats = e.Run(*index, one, [&](const Decoder&, const DecodeStep&) {
    ++calls;
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->nfe, 16);  // default steps: one per token
  EXPECT_EQ(calls, 16);
  EXPECT_TRUE(built->decoder->Done());
  EXPECT_EQ(e.MakeDecoder(7, {}, d).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(e.Route({}, 1000).status().code(), StatusCode::kFailedPrecondition);  // not serving
}

}  // namespace
}  // namespace unmask
