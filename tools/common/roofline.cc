#include "common/roofline.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "core/parallel.h"
#include "core/tensor.h"
#include "format/ggml_type.h"
#include "ops/linear.h"

namespace unmask::tools {

namespace {

// Best time of `reps` runs of y[m, out] = x[m, in] W^T after one warm-up run (primitive creation,
// caches), in seconds.
StatusOr<double> BestLinearSeconds(const LinearWeight& w, std::vector<float>& x, int64_t m,
                                   int reps) {
  std::vector<float> y(static_cast<size_t>(m * w.out_features()));
  const TensorView xv{x.data(), DType::kF32, Shape{m, w.in_features()}};
  const TensorView yv{y.data(), DType::kF32, Shape{m, w.out_features()}};
  UNMASK_RETURN_IF_ERROR(Linear(xv, w, yv));
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    UNMASK_RETURN_IF_ERROR(Linear(xv, w, yv));
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

StatusOr<double> MeasureGemmPeakGflops(int reps) {
  constexpr int64_t m = 512, k = 768, n = 2048;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(m * k));
  for (float& v : w) v = u(rng);
  for (float& v : x) v = u(rng);
  const TensorView wv{w.data(), DType::kF32, Shape{n, k}};
  UNMASK_ASSIGN_OR_RETURN(
      LinearWeight lw,
      LinearWeight::Prepare(std::span<const TensorView>(&wv, 1), WeightMode::kPackedF32));
  UNMASK_ASSIGN_OR_RETURN(const double best, BestLinearSeconds(lw, x, m, reps));
  return 2.0 * m * n * k / best / 1e9;
}

double MeasureMemoryBandwidthGBs(int reps, int64_t bytes) {
  const int64_t chunks = 64;
  // Whole chunks of 8 floats, at least one each.
  const int64_t kFloats = std::max<int64_t>(bytes / 4 / (8 * chunks), 1) * 8 * chunks;
  std::vector<float> buf(static_cast<size_t>(kFloats), 1.0f);
  std::vector<double> sums(static_cast<size_t>(chunks));
  double best = 1e30;
  for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up
    const auto t0 = std::chrono::steady_clock::now();
    ParallelFor(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const float* p = buf.data() + c * (kFloats / chunks);
        // Eight independent accumulators: the loop is bound by loads, not by add latency.
        float acc[8] = {};
        for (int64_t i = 0; i < kFloats / chunks; i += 8) {
          for (int j = 0; j < 8; ++j) acc[j] += p[i + j];
        }
        double s = 0;
        for (float a : acc) s += a;
        sums[static_cast<size_t>(c)] = s;
      }
    });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, secs);
  }
  volatile double sink = 0;
  for (double s : sums) sink = sink + s;
  return static_cast<double>(kFloats) * sizeof(float) / best / 1e9;
}

StatusOr<std::vector<std::pair<double, double>>> MeasureGemmCurve(const gguf::GgufFile& file,
                                                                  WeightMode mode,
                                                                  const std::vector<int64_t>& rows,
                                                                  int reps) {
  const gguf::TensorInfo* t = file.FindTensor("blk.0.ffn_up.weight");
  if (t == nullptr || t->dims.size() < 2) {
    return NotFoundError(file.path() + ": no 2-D blk.0.ffn_up.weight to time");
  }
  const auto dtype = gguf::ToDType(t->type);
  if (!dtype)
    return InvalidArgumentError(file.path() + ": unsupported type of blk.0.ffn_up.weight");
  const int64_t in = t->dims[0], out = t->dims[1];
  const TensorView wv{const_cast<uint8_t*>(t->data), *dtype, Shape{out, in}};
  UNMASK_ASSIGN_OR_RETURN(LinearWeight w,
                          LinearWeight::Prepare(std::span<const TensorView>(&wv, 1), mode));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::pair<double, double>> curve;
  for (int64_t m : rows) {
    std::vector<float> x(static_cast<size_t>(m * in));
    for (float& v : x) v = u(rng);
    UNMASK_ASSIGN_OR_RETURN(const double best, BestLinearSeconds(w, x, m, reps));
    curve.emplace_back(static_cast<double>(m), 2.0 * static_cast<double>(m * in * out) / best);
  }
  return curve;
}

}  // namespace unmask::tools
