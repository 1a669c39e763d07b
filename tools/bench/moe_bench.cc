// Mixture-of-experts FFN benchmark (Google Benchmark): one MoE layer (model/moe_ffn.h) shaped as a
// scaled-down fine-grained MoE (hidden 1024, 64 experts of width 256, top-8, one shared expert of
// 256; f32 packed weights, random router) against N routed positions, N = 1 (an AR token) to 256
// (a canvas or a batch). Counters: experts_hit (distinct experts with rows), expert_MB (their
// weights, read once per call), weight_GB/s (router + shared + hit experts read per second),
// GFLOP/s and peak_fraction (of tools::NominalPeakGflops(), the measured f32 peak of the machine
// class), and vs_dense: time over a dense SwiGLU FFN of the same active width (8 x 256 = 2048)
// on the same N, measured in the same run: what routing costs beyond the FLOPs.
//
//   unmask_moe_bench [--unmask_threads=N] [benchmark flags]
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "common/nominal_peaks.h"
#include "model/moe_ffn.h"
#include "ops/activation.h"
#include "ops/linear.h"

namespace unmask {
namespace {

constexpr int64_t kHidden = 1024, kExperts = 64, kTopK = 8, kExpertFfn = 256, kSharedFfn = 256;
int g_threads = 0;

std::vector<float> Random(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

LinearWeight Prepare(const std::vector<TensorView>& parts) {
  auto w = LinearWeight::Prepare(parts, WeightMode::kPacked, ComputeType::kF32);
  if (!w.ok()) {
    std::fprintf(stderr, "moe_bench: %s\n", w.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(w).value();
}

TensorView View(std::vector<float>& v, int64_t rows, int64_t cols) {
  return TensorView{v.data(), DType::kF32, Shape{rows, cols}};
}

// The layer's weights, built once (the data must outlive the prepared weights only while
// packing; packed weights own their copies).
struct Layer {
  MoeFfnWeights moe;
  LinearWeight dense_gate_up, dense_down;  // the same-active-width dense FFN
  MoeRouting routing;
  Layer() {
    std::vector<float> router = Random(kExperts * kHidden, 1, 0.05f);
    moe.router = Prepare({View(router, kExperts, kHidden)});
    for (int64_t e = 0; e < kExperts; ++e) {
      std::vector<float> g = Random(kExpertFfn * kHidden, 10 + e, 0.03f);
      std::vector<float> u = Random(kExpertFfn * kHidden, 1000 + e, 0.03f);
      std::vector<float> d = Random(kHidden * kExpertFfn, 2000 + e, 0.03f);
      moe.gate_up.push_back(Prepare({View(g, kExpertFfn, kHidden), View(u, kExpertFfn, kHidden)}));
      moe.down.push_back(Prepare({View(d, kHidden, kExpertFfn)}));
    }
    std::vector<float> sg = Random(kSharedFfn * kHidden, 3, 0.03f);
    std::vector<float> su = Random(kSharedFfn * kHidden, 4, 0.03f);
    std::vector<float> sd = Random(kHidden * kSharedFfn, 5, 0.03f);
    moe.shared_gate_up = Prepare({View(sg, kSharedFfn, kHidden), View(su, kSharedFfn, kHidden)});
    moe.shared_down = Prepare({View(sd, kHidden, kSharedFfn)});
    moe.has_shared = true;
    moe.expert_bytes = 3.0 * kHidden * kExpertFfn * 4;
    const int64_t f = kTopK * kExpertFfn;
    std::vector<float> dg = Random(f * kHidden, 6, 0.03f), du = Random(f * kHidden, 7, 0.03f);
    std::vector<float> dd = Random(kHidden * f, 8, 0.03f);
    dense_gate_up = Prepare({View(dg, f, kHidden), View(du, f, kHidden)});
    dense_down = Prepare({View(dd, kHidden, f)});
    routing.num_experts = kExperts;
    routing.top_k = kTopK;
    routing.normalize = true;
  }
};

Layer& TheLayer() {
  static Layer* layer = new Layer();  // built once, on first use (packing takes seconds)
  return *layer;
}

ModelConfig Config() {
  ModelConfig c;
  c.hidden_size = kHidden;
  c.num_heads = 8;
  c.num_kv_heads = 8;
  c.head_dim = kHidden / 8;
  c.ffn_size = kTopK * kExpertFfn;
  c.num_experts = kExperts;
  c.expert_ffn_size = kExpertFfn;
  c.shared_expert_ffn_size = kSharedFfn;
  c.routing.num_experts = kExperts;
  c.routing.top_k = kTopK;
  return c;
}

// Seconds per dense same-active-width FFN call on n rows, measured once per n in this run.
double DenseSeconds(int64_t n) {
  static std::map<int64_t, double> cache;
  if (auto it = cache.find(n); it != cache.end()) return it->second;
  Layer& L = TheLayer();
  const int64_t f = kTopK * kExpertFfn;
  std::vector<float> x = Random(static_cast<size_t>(n * kHidden), 9, 1.0f);
  std::vector<float> gu(static_cast<size_t>(n * 2 * f)), a(static_cast<size_t>(n * f));
  std::vector<float> y(static_cast<size_t>(n * kHidden));
  auto once = [&] {
    (void)Linear(View(x, n, kHidden), L.dense_gate_up, View(gu, n, 2 * f));
    (void)SwiGlu(View(gu, n, 2 * f), View(a, n, f));
    (void)Linear(View(a, n, f), L.dense_down, View(y, n, kHidden));
  };
  once();
  const int reps = n <= 16 ? 50 : 10;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) once();
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
  cache[n] = s;
  return s;
}

void BM_MoeFfn(benchmark::State& state, int64_t n) {
  cpu::CpuBackendOptions options;
  options.num_threads = g_threads;
  if (Status s = cpu::InitCpuBackend(options); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  state.SetLabel(cpu::DescribeCpuBackend());
  Layer& L = TheLayer();
  Workspace ws;
  ws.Reserve(Config(), n, 1);
  std::vector<float> x = Random(static_cast<size_t>(n * kHidden), 11, 1.0f);
  std::vector<float> out(static_cast<size_t>(n * kHidden));
  MoeFfnCounters counters;
  double hit = 0;
  int64_t calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const Status s =
        MoeFfn(View(x, n, kHidden), L.moe, L.routing, ws, View(out, n, kHidden), &counters);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    hit += static_cast<double>(counters.experts_hit);
    ++calls;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
  const double experts = hit / static_cast<double>(calls);
  const double expert_bytes = experts * L.moe.expert_bytes;
  const double other_bytes = (kExperts * kHidden + 3.0 * kHidden * kSharedFfn) * 4;
  const double flops = 2.0 * static_cast<double>(n) *
                       (kExperts * kHidden + 3.0 * kHidden * (kTopK * kExpertFfn + kSharedFfn));
  state.counters["experts_hit"] = experts;
  state.counters["expert_MB"] = expert_bytes / 1e6;
  state.counters["weight_GB/s"] = (expert_bytes + other_bytes) / secs / 1e9;
  state.counters["GFLOP/s"] = flops / secs / 1e9;
  state.counters["peak_fraction"] = flops / secs / 1e9 / tools::NominalPeakGflops();
  // The dense FFN does top_k x expert_ffn of the work without the shared expert and router.
  const double dense_flops = 2.0 * static_cast<double>(n) * 3.0 * kHidden * kTopK * kExpertFfn;
  state.counters["vs_dense"] = secs / (DenseSeconds(n) * flops / dense_flops);
}

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
  for (int64_t n : {1, 4, 16, 32, 64, 256}) {
    benchmark::RegisterBenchmark(
        ("MoeFfn/d1024_E64_k8_f256_shared256/N" + std::to_string(n)).c_str(), unmask::BM_MoeFfn, n)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
