// Engine: created from backend options, loads models onto its backend, builds decoders with the
// factory and runs them through the one step (RunToCompletion == a solo StepBatch loop); routes
// a block-diffusion model with the block cost model.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <vector>

#include "fixtures/tiny_llada.h"
#include "test_util.h"

namespace unmask {
namespace {

TEST(EngineTest, CreateRefusesBadBackendOptions) {
  EngineOptions o;
  o.backend.device = "cuda";
  {
    // No CUDA backend in this build (Unimplemented), or one without a visible device
    // (FailedPrecondition); with a GPU the engine is created (models do not load onto it yet:
    // tests/model/model_backend_test.cc).
    const Status s = Engine::Create(o).status();
    EXPECT_TRUE(s.ok() || s.code() == StatusCode::kUnimplemented ||
                s.code() == StatusCode::kFailedPrecondition)
        << s.ToString();
  }
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

TEST(EngineTest, RouteCostsABlockModelAsBlockDiffusion) {
  testing::TinyLladaSpec spec;
  spec.architecture = "sdar";  // block-causal, trained block 4
  spec.qk_norm = true;
  spec.hidden = 32;
  spec.head_dim = 16;
  spec.ffn = 64;
  const std::string path = ::testing::TempDir() + "/route_sdar.gguf";
  ASSERT_EQ(testing::WriteTinyLlada(spec, path), "");
  Engine e;
  auto index = e.LoadModel("sdar", path, WeightMode::kAuto);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_TRUE(e.StartServing().ok());
  GenerationRequest g;
  g.prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  g.max_tokens = 16;
  const GenerationRequest* settled[] = {&g};
  auto expect = [&](const BlockRoute& b) {
    auto d = e.Route(settled, 1e9);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_EQ(d->predicted_ms.size(), 1u);
    RouteRequest rr;
    rr.prompt_tokens = 10;
    rr.max_tokens = 16;
    rr.block = b;
    const EngineLoad load = e.scheduler().Load(*index);
    EXPECT_TRUE(load.block_diffusion);
    EXPECT_DOUBLE_EQ(d->predicted_ms[0].second, PredictRoute(rr, load).latency_ms);
  };
  // SDAR's default: low_confidence_dynamic, one denoising step per block position, the model's
  // block of 4; a threshold rule (not a fixed schedule); the fused schedule.
  expect({4, 4, false, false});
  g.remasking = "low_confidence_static";
  expect({4, 4, true, false});
  g.block.denoising_steps = 2;
  g.given.push_back({"denoising_steps", "--denoising-steps"});
  expect({4, 2, true, false});
  g.block.separate_store = true;  // SDAR's own schedule
  g.given.push_back({"separate_store", "--separate-store"});
  expect({4, 2, true, true});
  e.Shutdown();
}

}  // namespace
}  // namespace unmask
