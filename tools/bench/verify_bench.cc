// What a speculative verification costs (Google Benchmark): one target forward of M tokens after
// a cached context of 128, M = 1 (plain decoding) to 16 (the longest verification), fed as a
// chain or as a tree (every node a child of the context's last token or of an earlier node:
// AttentionMask::kTree), with native weights (the kernels of generate and serve). The KV cache is
// rolled back after each forward, so every iteration verifies at the same place. Counters:
// ms_per_forward, and vs_m1: its time over the M = 1 forward measured in the same run, the
// break-even tokens per verification of a free drafter. With UNMASK_EAGLE=FILE also one pass of
// that EAGLE draft layer over M rows after a context of 128 (the drafter's cost per tree level),
// vs_target_m1: its time over the target's M = 1 forward.
//
//   UNMASK_MODEL=$(scripts/fetch-smollm2.sh) unmask_verify_bench [--unmask_threads=N]
//   (default model: the AR twin)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/eagle_head.h"
#include "model/loader.h"

namespace unmask {
namespace {

constexpr int64_t kContext = 128;
int g_threads = 0;

struct Target {
  LoadedModel lm;
  std::unique_ptr<EagleHead> eagle;
  std::vector<int32_t> context;
  double m1_ms = 0;  // the M = 1 chain forward, measured first
};

Target& Get() {
  static Target* t = [] {
    auto* out = new Target();
    const char* env = std::getenv("UNMASK_MODEL");
    const std::string path =
        env != nullptr ? env
                       : std::string(UNMASK_SOURCE_DIR) + "/models/unmask-tinystories-ar.gguf";
    BackendOptions bo;
    bo.num_threads = g_threads;
    auto backend = CreateBackend(bo);
    LoadOptions lo;
    lo.weight_mode = WeightMode::kOnTheFly;
    if (backend.ok()) lo.backend = *backend;
    auto lm = LoadModel(path, lo);
    if (!lm.ok()) {
      std::fprintf(stderr, "verify_bench: %s\n", lm.status().ToString().c_str());
      std::exit(1);
    }
    out->lm = std::move(lm).value();
    if (const char* e = std::getenv("UNMASK_EAGLE")) {
      auto h = EagleHead::Load(e, out->lm.model->config());
      if (!h.ok()) {
        std::fprintf(stderr, "verify_bench: %s\n", h.status().ToString().c_str());
        std::exit(1);
      }
      out->eagle = std::move(h).value();
    }
    std::mt19937 rng(1);
    std::uniform_int_distribution<int32_t> id(
        0, static_cast<int32_t>(out->lm.model->config().vocab_size - 1));
    for (int64_t i = 0; i < kContext; ++i) out->context.push_back(id(rng));
    std::fprintf(stderr, "verify_bench: %s, %lld weight MB, context %lld\n", path.c_str(),
                 static_cast<long long>(out->lm.model->weight_bytes() >> 20),
                 static_cast<long long>(kContext));
    return out;
  }();
  return *t;
}

void BM_Verify(benchmark::State& state) {
  Target& t = Get();
  const Model& m = *t.lm.model;
  const int64_t n = state.range(0);
  const bool tree = state.range(1) != 0;
  auto kv = m.MakeKvCache(1);
  Workspace ws;
  std::vector<float> logits(static_cast<size_t>((n + 1) * m.config().vocab_size));
  {
    const int32_t last[1] = {kContext - 1};
    BatchPlan pre;
    pre.sequences.push_back(SequenceInput{t.context, 0, last, 0});
    if (!m.Forward(pre, &*kv, ws,
                   TensorView{logits.data(), DType::kF32, Shape{1, m.config().vocab_size}}, nullptr)
             .ok()) {
      state.SkipWithError("prefill failed");
      return;
    }
  }
  std::vector<int32_t> tokens(t.context.end() - n, t.context.end()), rows(n), parents(n);
  std::iota(rows.begin(), rows.end(), 0);
  for (int64_t i = 0; i < n; ++i) parents[i] = static_cast<int32_t>(i == 0 ? -1 : (i - 1) / 2);
  BatchPlan plan;
  SequenceInput in{tokens, kContext - 1, rows, 0};
  if (tree) in.tree_parents = parents;  // a binary tree below the context's last token
  plan.sequences.push_back(in);
  const TensorView out{logits.data(), DType::kF32, Shape{n, m.config().vocab_size}};
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!m.Forward(plan, &*kv, ws, out, nullptr).ok()) {
      state.SkipWithError("forward failed");
      return;
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  if (n == 1 && !tree) t.m1_ms = ms;  // registered first: the baseline of the later rows
  state.counters["ms_per_forward"] = ms;
  state.counters["vs_m1"] = t.m1_ms > 0 ? ms / t.m1_ms : 0;
}

void BM_EaglePass(benchmark::State& state) {
  Target& t = Get();
  if (!t.eagle) {
    state.SkipWithError("UNMASK_EAGLE not set");
    return;
  }
  const int64_t n = state.range(0), d = t.eagle->hidden_size();
  auto kv = t.eagle->MakeKvCache(kContext + 64);
  EagleWorkspace ws;
  std::vector<float> embed(static_cast<size_t>(kContext * d), 0.01f), feats(embed);
  std::vector<int32_t> positions(kContext);
  std::iota(positions.begin(), positions.end(), 0);
  if (!t.eagle->Forward(embed, feats, positions, {}, 0, *kv, ws).ok()) {
    state.SkipWithError("context pass failed");
    return;
  }
  std::vector<int32_t> level(static_cast<size_t>(n), kContext), parents(static_cast<size_t>(n), -1);
  const std::span<const float> e(embed.data(), static_cast<size_t>(n * d));
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!t.eagle->Forward(e, e, level, parents, kContext, *kv, ws).ok()) {
      state.SkipWithError("pass failed");
      return;
    }
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  state.counters["ms_per_pass"] = ms;
  state.counters["vs_target_m1"] = t.m1_ms > 0 ? ms / t.m1_ms : 0;
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1, 2, 4, 5, 7, 8, 12, 16}) {
    b->Args({n, 0});
    if (n > 2) b->Args({n, 1});
  }
}

BENCHMARK(BM_Verify)->Apply(Args)->ArgNames({"tokens", "tree"})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EaglePass)->Arg(1)->Arg(2)->Arg(4)->ArgName("rows")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace unmask

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--unmask_threads=", 17) == 0) {
      unmask::g_threads = std::atoi(argv[i] + 17);
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      --i;
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
