// Op microbenchmarks (Google Benchmark): Linear per GEMM provider and weight mode for the shapes
// of the target LLaDA-style model (hidden 768, FFN 2048, vocab 8192), attention (T = S = 160,
// 12 heads x 64), and the memory-bound ops. Reports GFLOP/s (or GB/s) counters and the fraction
// of the f32 FMA peak (`peak_fraction`); Linear also reports weight_GB/s, the bytes of W read per
// second (`LinearMatVec/...`: batch-1 products per stored dtype with W streamed from memory).
//
//   unmask_ops_bench [--unmask_threads=N] [benchmark flags, e.g. --benchmark_filter=Linear/onednn]
//
// The peak is tools::NominalPeakGflops() (common/nominal_peaks.h): measured on this machine class
// (2 threads of an AVX-512 AMD EPYC; see the project developer guide), overridable with the
// environment variable UNMASK_PEAK_GFLOPS.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/blas_onednn.h"
#include "backend/cpu/cpu_backend.h"
#include "common/nominal_peaks.h"
#include "core/half.h"
#include "core/parallel.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/convert.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "ops/softmax.h"

namespace unmask {
namespace {

int g_threads = 0;  // --unmask_threads; 0 = all hardware threads

bool Select(benchmark::State& state, cpu::GemmProvider provider) {
  cpu::CpuBackendOptions options;
  options.num_threads = g_threads;
  options.gemm = provider;
  const Status s = cpu::InitCpuBackend(options);
  if (!s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return false;
  }
  state.SetLabel(cpu::DescribeCpuBackend());
  return true;
}

// Wall time of the timing loop, measured around it (the benchmarks use real time), so that the
// rate counters are plain numbers (Google Benchmark's rate counters print a "/s" suffix).
class LoopTimer {
 public:
  LoopTimer() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

void SetFlopCounters(benchmark::State& state, const LoopTimer& timer, double flops_per_iter) {
  const double seconds = timer.Seconds();
  if (state.iterations() == 0 || seconds <= 0.0) return;
  const double gflops = flops_per_iter * static_cast<double>(state.iterations()) / seconds * 1e-9;
  state.counters["GFLOP/s"] = gflops;
  state.counters["peak_fraction"] = gflops / tools::NominalPeakGflops();
}

void SetByteCounters(benchmark::State& state, const LoopTimer& timer, double bytes_per_iter) {
  const double seconds = timer.Seconds();
  if (state.iterations() == 0 || seconds <= 0.0) return;
  state.counters["GB/s"] =
      bytes_per_iter * static_cast<double>(state.iterations()) / seconds * 1e-9;
}

std::vector<float> RandomFloats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Random blocks of a 4- or 6-bit type: random quants, every f16 field (d, m, dmin) a normal
// finite scale (the speed of the kernels does not depend on the values).
std::vector<uint8_t> MakeQuantBytes(DType dtype, int64_t n, int64_t k) {
  const DTypeInfo& info = GetDTypeInfo(dtype);
  const int64_t num_blocks = n * k / info.block_size;
  const auto block_bytes = static_cast<size_t>(info.block_bytes);
  std::vector<uint8_t> bytes(block_bytes * static_cast<size_t>(num_blocks));
  std::mt19937_64 rng(1);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  const uint16_t scale = F32ToF16(0.01f);
  std::vector<size_t> fields;  // byte offsets of the f16 fields in a block
  if (dtype == DType::kQ4_0) fields = {0};
  if (dtype == DType::kQ4_1 || dtype == DType::kQ4_K) fields = {0, 2};
  if (dtype == DType::kQ6_K) fields = {offsetof(BlockQ6_K, d)};
  for (int64_t b = 0; b < num_blocks; ++b) {
    for (size_t f : fields)
      std::memcpy(&bytes[static_cast<size_t>(b) * block_bytes + f], &scale, 2);
  }
  return bytes;
}

// Weight [n, k] stored in `dtype` (F32, F16, Q8_0, Q4_0, Q4_1 with k % 32 == 0, Q4_K, Q6_K with
// k % 256 == 0).
std::vector<uint8_t> MakeWeightBytes(DType dtype, int64_t n, int64_t k) {
  if (dtype == DType::kQ4_0 || dtype == DType::kQ4_1 || dtype == DType::kQ4_K ||
      dtype == DType::kQ6_K) {
    return MakeQuantBytes(dtype, n, k);
  }
  const std::vector<float> w = RandomFloats(static_cast<size_t>(n * k), 1);
  const size_t row_bytes = *RowBytes(dtype, k);
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    uint8_t* row = bytes.data() + static_cast<size_t>(r) * row_bytes;
    const float* v = w.data() + r * k;
    if (dtype == DType::kF32) {
      std::memcpy(row, v, row_bytes);
    } else if (dtype == DType::kF16) {
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t h = F32ToF16(v[i]);
        std::memcpy(row + 2 * i, &h, 2);
      }
    } else {
      for (int64_t b = 0; b < k / kQ8_0BlockSize; ++b) {
        BlockQ8_0 blk{};
        blk.d = F32ToF16(1.0f / 127.0f);
        for (int j = 0; j < kQ8_0BlockSize; ++j) {
          blk.qs[j] = static_cast<int8_t>(std::lround(v[b * kQ8_0BlockSize + j] * 127.0f));
        }
        std::memcpy(row + static_cast<size_t>(b) * sizeof(BlockQ8_0), &blk, sizeof(blk));
      }
    }
  }
  return bytes;
}

struct LinearConfig {
  cpu::GemmProvider provider;
  WeightMode mode;
  DType dtype;  // stored dtype of the weight
  int64_t m, k, n;
  int copies = 1;  // distinct weights cycled through (> 1: weights not in cache, as in a forward)
  QuantActivations activations = QuantActivations::kInt8;  // Q8_0/Q4_0/Q4_1/Q4_K/Q6_K at M <= 16
};

void BM_Linear(benchmark::State& state, LinearConfig c) {
  if (!Select(state, c.provider)) return;
  SetQuantActivations(c.activations);
  std::vector<uint8_t> bytes = MakeWeightBytes(c.dtype, c.n, c.k);
  std::vector<std::vector<uint8_t>> sources(static_cast<size_t>(c.copies), bytes);
  std::vector<LinearWeight> weights;
  for (auto& src : sources) {
    const TensorView wv{src.data(), c.dtype, Shape{c.n, c.k}};
    auto weight = LinearWeight::Prepare({&wv, 1}, c.mode);
    if (!weight.ok()) {
      state.SkipWithError(weight.status().ToString().c_str());
      return;
    }
    weights.push_back(std::move(weight).value());
  }
  std::vector<float> x = RandomFloats(static_cast<size_t>(c.m * c.k), 2);
  std::vector<float> y(static_cast<size_t>(c.m * c.n));
  const TensorView xv{x.data(), DType::kF32, Shape{c.m, c.k}};
  const TensorView yv{y.data(), DType::kF32, Shape{c.m, c.n}};
  if (!Linear(xv, weights[0], yv).ok()) state.SkipWithError("Linear failed");  // warm-up
  size_t next = 0;
  const LoopTimer timer;
  for (auto _ : state) {
    const Status s = Linear(xv, weights[next], yv);
    next = next + 1 == weights.size() ? 0 : next + 1;
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  const double weight_bytes =
      static_cast<double>(weights[0].owned_bytes() > 0 ? weights[0].owned_bytes() : bytes.size());
  state.counters["weight_MB"] = weight_bytes * 1e-6;
  SetFlopCounters(state, timer, 2.0 * static_cast<double>(c.m * c.n * c.k));
  // Bytes of W read per call (the stored dtype on the fly, the packed f32 copy otherwise).
  const double seconds = timer.Seconds();
  if (state.iterations() > 0 && seconds > 0.0) {
    state.counters["weight_GB/s"] =
        weight_bytes * static_cast<double>(state.iterations()) / seconds * 1e-9;
  }
  SetQuantActivations(QuantActivations::kInt8);
}

// First call for a new M with the oneDNN packed path: primitive descriptor + JIT + run (our cache
// and oneDNN's own primitive cache are cleared every iteration), to compare with the
// steady-state BM_Linear of the same shape.
void BM_LinearOneDnnNewM(benchmark::State& state, int64_t m, int64_t k, int64_t n) {
  if (!Select(state, cpu::GemmProvider::kOneDnn)) return;
  std::vector<float> w = RandomFloats(static_cast<size_t>(n * k), 1);
  const TensorView wv{w.data(), DType::kF32, Shape{n, k}};
  auto weight = LinearWeight::Prepare({&wv, 1}, WeightMode::kPacked);
  std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), 2), y(static_cast<size_t>(m * n));
  const TensorView xv{x.data(), DType::kF32, Shape{m, k}};
  const TensorView yv{y.data(), DType::kF32, Shape{m, n}};
  const LoopTimer timer;
  for (auto _ : state) {
    cpu::onednn::ClearPrimitiveCache(/*also_onednn_cache=*/true);
    const Status s = Linear(xv, *weight, yv);
    benchmark::DoNotOptimize(s);
  }
  SetFlopCounters(state, timer, 2.0 * static_cast<double>(m * n * k));
}

void BM_Attention(benchmark::State& state, cpu::GemmProvider provider, int64_t t, int64_t s,
                  int64_t heads, int64_t kv_heads, int64_t d, AttentionMask mask) {
  if (!Select(state, provider)) return;
  std::vector<float> q = RandomFloats(static_cast<size_t>(t * heads * d), 1);
  std::vector<float> k = RandomFloats(static_cast<size_t>(s * kv_heads * d), 2);
  std::vector<float> v = RandomFloats(static_cast<size_t>(s * kv_heads * d), 3);
  std::vector<float> out(q.size());
  AttentionParams params;
  params.scale = 1.0f / std::sqrt(static_cast<float>(d));
  params.mask = mask;
  params.q_pos0 = mask == AttentionMask::kCausal ? s - t : 0;
  const TensorView qv{q.data(), DType::kF32, Shape{t, heads, d}};
  const TensorView kv{k.data(), DType::kF32, Shape{s, kv_heads, d}};
  const TensorView vv{v.data(), DType::kF32, Shape{s, kv_heads, d}};
  const TensorView ov{out.data(), DType::kF32, Shape{t, heads, d}};
  const LoopTimer timer;
  for (auto _ : state) {
    const Status st = Attention(qv, kv, vv, params, ov);
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  // q k^T and p v, 2 flops per multiply-add each (the causal mask is not discounted).
  SetFlopCounters(state, timer, 4.0 * static_cast<double>(t * s * d * heads));
}

void BM_RmsNorm(benchmark::State& state, int64_t m, int64_t d) {
  Select(state, cpu::GemmProvider::kOneDnn);
  std::vector<float> x = RandomFloats(static_cast<size_t>(m * d), 1),
                     w(static_cast<size_t>(d), 1.0f);
  std::vector<float> y(x.size());
  const LoopTimer timer;
  for (auto _ : state) {
    const Status s = RmsNorm(TensorView{x.data(), DType::kF32, Shape{m, d}},
                             TensorView{w.data(), DType::kF32, Shape{d}}, 1e-5f,
                             TensorView{y.data(), DType::kF32, Shape{m, d}});
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  SetByteCounters(state, timer, 8.0 * static_cast<double>(m * d));
}

void BM_SwiGlu(benchmark::State& state, int64_t m, int64_t f) {
  Select(state, cpu::GemmProvider::kOneDnn);
  std::vector<float> gu = RandomFloats(static_cast<size_t>(m * 2 * f), 1),
                     out(static_cast<size_t>(m * f));
  const LoopTimer timer;
  for (auto _ : state) {
    const Status s = SwiGlu(TensorView{gu.data(), DType::kF32, Shape{m, 2 * f}},
                            TensorView{out.data(), DType::kF32, Shape{m, f}});
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  SetByteCounters(state, timer, 12.0 * static_cast<double>(m * f));
}

void BM_Softmax(benchmark::State& state, int64_t m, int64_t n) {
  Select(state, cpu::GemmProvider::kOneDnn);
  const std::vector<float> src = RandomFloats(static_cast<size_t>(m * n), 1);
  std::vector<float> x(src);
  const LoopTimer timer;
  for (auto _ : state) {
    const Status s = SoftmaxInPlace(TensorView{x.data(), DType::kF32, Shape{m, n}});
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  SetByteCounters(state, timer, 8.0 * static_cast<double>(m * n));
}

void BM_Rope(benchmark::State& state, RopeLayout layout, int64_t m, int64_t heads, int64_t d) {
  Select(state, cpu::GemmProvider::kOneDnn);
  auto table = RopeTable::Create(d, 500000.0, 4096);
  std::vector<float> x = RandomFloats(static_cast<size_t>(m * heads * d), 1);
  std::vector<int32_t> pos(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  const LoopTimer timer;
  for (auto _ : state) {
    const Status s =
        ApplyRope(TensorView{x.data(), DType::kF32, Shape{m, heads, d}}, pos, *table, layout);
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  SetByteCounters(state, timer, 8.0 * static_cast<double>(m * heads * d));
}

// Dequantization throughput in output bytes (f32 written) per second.
void BM_ConvertRow(benchmark::State& state, DType dtype, int64_t n) {
  std::vector<uint8_t> src = MakeWeightBytes(dtype, 1, n);
  std::vector<float> dst(static_cast<size_t>(n));
  const LoopTimer timer;
  for (auto _ : state) {
    const Status s = ConvertRowToF32(dtype, src.data(), n, dst.data());
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  SetByteCounters(state, timer, 4.0 * static_cast<double>(n));
}

std::string ModeLabel(WeightMode mode, DType dtype) {
  return std::string(mode == WeightMode::kOnTheFly ? "onthefly_" : "packed_from_") +
         std::string(DTypeName(dtype));
}

void RegisterAll() {
  struct Shape2 {
    int64_t k, n;
    const char* what;
  };
  // Per-layer projections of the target model (hidden 768, FFN 2048, vocab 8192).
  const Shape2 shapes[] = {{768, 768, "attn_q/k/v/o"},
                           {768, 2304, "attn_qkv_fused"},
                           {768, 2048, "ffn_gate/up"},
                           {2048, 768, "ffn_down"},
                           {768, 8192, "output"}};
  const cpu::GemmProvider providers[] = {cpu::GemmProvider::kOneDnn, cpu::GemmProvider::kOpenBlas};
  const std::pair<WeightMode, DType> modes[] = {{WeightMode::kPacked, DType::kF16},
                                                {WeightMode::kOnTheFly, DType::kF16},
                                                {WeightMode::kOnTheFly, DType::kQ8_0}};
  for (cpu::GemmProvider provider : providers) {
    for (const auto& [mode, dtype] : modes) {
      for (const Shape2& s : shapes) {
        for (int64_t m : {1, 32, 160, 320}) {
          const std::string name = "Linear/" + std::string(cpu::GemmProviderName(provider)) + "/" +
                                   ModeLabel(mode, dtype) + "/M" + std::to_string(m) + "_K" +
                                   std::to_string(s.k) + "_N" + std::to_string(s.n) + "/" + s.what;
          benchmark::RegisterBenchmark(name.c_str(), BM_Linear,
                                       LinearConfig{provider, mode, dtype, m, s.k, s.n})
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
      }
    }
  }
  // Weights cycled through 16 copies (> 32 MiB L3), as in a 12-layer forward: memory-bound at
  // small M, where on-the-fly F16/Q8_0 read 2x/3.8x fewer bytes than packed f32.
  for (cpu::GemmProvider provider : providers) {
    for (const auto& [mode, dtype] : modes) {
      for (int64_t m : {1, 4, 32}) {
        const std::string name = "LinearCold/" + std::string(cpu::GemmProviderName(provider)) +
                                 "/" + ModeLabel(mode, dtype) + "/M" + std::to_string(m) +
                                 "_K768_N2048/ffn_gate/up/x16";
        benchmark::RegisterBenchmark(name.c_str(), BM_Linear,
                                     LinearConfig{provider, mode, dtype, m, 768, 2048, 16})
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
  // Batch-1 matrix-vector products per on-the-fly dtype on the shapes of SmolLM2-135M (hidden 576,
  // FFN 1536, vocab 49152; its K-quant tensors are the K = 1536 ones) and of the target model.
  // LinearMatVec: distinct copies cycled through adding up to >= 64 MB (2x the L3), so that
  // weight_GB/s is the achieved memory bandwidth; LinearMatVecHot: one copy (in cache when it fits:
  // the kernels' compute speed). Q8_0 and the 4-/6-bit types run with int8 activations (the
  // default) and, as "<type>_f32x", with exact f32 ones.
  const Shape2 matvec_shapes[] = {{576, 1536, "smollm2_ffn_up"},
                                  {1536, 576, "smollm2_ffn_down"},
                                  {576, 49152, "smollm2_output"},
                                  {768, 2048, "ffn_gate/up"},
                                  {2048, 768, "ffn_down"}};
  for (const bool hot : {false, true}) {
    for (const Shape2& s : matvec_shapes) {
      for (DType dtype :
           {DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ6_K}) {
        if (s.k % GetDTypeInfo(dtype).block_size != 0) continue;
        const bool quant = dtype != DType::kF16;  // has int8 kernels
        const double bytes = static_cast<double>(*RowBytes(dtype, s.k)) * static_cast<double>(s.n);
        const int copies = hot ? 1 : static_cast<int>(std::ceil(64e6 / bytes));
        for (QuantActivations a : {QuantActivations::kInt8, QuantActivations::kF32}) {
          if (a == QuantActivations::kF32 && !quant) continue;
          const std::string name = std::string(hot ? "LinearMatVecHot" : "LinearMatVec") +
                                   "/onthefly_" + std::string(DTypeName(dtype)) +
                                   (a == QuantActivations::kF32 ? "_f32x" : "") + "/M1_K" +
                                   std::to_string(s.k) + "_N" + std::to_string(s.n) + "/" + s.what +
                                   "/x" + std::to_string(copies);
          benchmark::RegisterBenchmark(
              name.c_str(), BM_Linear,
              LinearConfig{cpu::GemmProvider::kOneDnn, WeightMode::kOnTheFly, dtype, 1, s.k, s.n,
                           copies, a})
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
      }
    }
  }
  benchmark::RegisterBenchmark("Linear/onednn/first_call_new_M/M160_K768_N2048",
                               BM_LinearOneDnnNewM, 160, 768, 2048)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  for (cpu::GemmProvider provider :
       {cpu::GemmProvider::kOneDnn, cpu::GemmProvider::kOpenBlas, cpu::GemmProvider::kReference}) {
    const std::string p(cpu::GemmProviderName(provider));
    benchmark::RegisterBenchmark(("Attention/" + p + "/T160_S160_H12_D64/bidirectional").c_str(),
                                 BM_Attention, provider, 160, 160, 12, 12, 64, AttentionMask::kNone)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    if (provider == cpu::GemmProvider::kReference) continue;
    benchmark::RegisterBenchmark(("Attention/" + p + "/T160_S160_H12_D64/causal").c_str(),
                                 BM_Attention, provider, 160, 160, 12, 12, 64,
                                 AttentionMask::kCausal)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Attention/" + p + "/T1_S1024_H12_D64/causal_decode").c_str(),
                                 BM_Attention, provider, 1, 1024, 12, 12, 64,
                                 AttentionMask::kCausal)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(
        ("Attention/" + p + "/T512_S512_H32_D128_GQA4/bidirectional").c_str(), BM_Attention,
        provider, 512, 512, 32, 8, 128, AttentionMask::kNone)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("RmsNorm/M160_D768", BM_RmsNorm, 160, 768)->UseRealTime();
  benchmark::RegisterBenchmark("SwiGlu/M160_F2048", BM_SwiGlu, 160, 2048)->UseRealTime();
  benchmark::RegisterBenchmark("Softmax/M160_N8192", BM_Softmax, 160, 8192)->UseRealTime();
  benchmark::RegisterBenchmark("Rope/interleaved/M160_H12_D64", BM_Rope, RopeLayout::kInterleaved,
                               160, 12, 64)
      ->UseRealTime();
  benchmark::RegisterBenchmark("Rope/neox/M160_H12_D64", BM_Rope, RopeLayout::kNeox, 160, 12, 64)
      ->UseRealTime();
  for (DType dtype :
       {DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ6_K}) {
    benchmark::RegisterBenchmark(("ConvertRow/" + std::string(DTypeName(dtype)) + "/N768").c_str(),
                                 BM_ConvertRow, dtype, 768);
  }
}

}  // namespace
}  // namespace unmask

int main(int argc, char** argv) {
  // Strip our own flag before Google Benchmark parses the rest.
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    constexpr std::string_view kFlag = "--unmask_threads=";
    if (std::string_view(argv[i]).rfind(kFlag, 0) == 0) {
      unmask::g_threads = std::atoi(argv[i] + kFlag.size());
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("peak_gflops", std::to_string(unmask::tools::NominalPeakGflops()));
  unmask::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
