#include "plan/gemm_curve.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>

#include "core/tensor.h"
#include "format/ggml_type.h"

namespace unmask::plan {
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

StatusOr<std::vector<std::pair<double, double>>> MeasureGemmCurve(const gguf::GgufFile& file,
                                                                  WeightMode mode,
                                                                  const std::vector<int64_t>& rows,
                                                                  int reps, ComputeType compute) {
  // The first FFN matrix; in a mixture-of-experts layer, the first expert's up matrix (the
  // [expert_ffn, hidden] products the experts run; experts are stored one after the other).
  const gguf::TensorInfo* t = file.FindTensor("blk.0.ffn_up.weight");
  std::string name = "blk.0.ffn_up.weight";
  if (t == nullptr) {
    t = file.FindTensor("blk.0.ffn_up_exps.weight");
    name = "blk.0.ffn_up_exps.weight";
  }
  if (t == nullptr || t->dims.size() < 2) {
    return NotFoundError(file.path() + ": no blk.0.ffn_up.weight (or ffn_up_exps for MoE) to time");
  }
  const auto dtype = gguf::ToDType(t->type);
  if (!dtype) return InvalidArgumentError(file.path() + ": unsupported type of " + name);
  const int64_t in = t->dims[0], out = t->dims[1];
  const TensorView wv{const_cast<uint8_t*>(t->data), *dtype, Shape{out, in}};
  UNMASK_ASSIGN_OR_RETURN(
      LinearWeight w,
      LinearWeight::Prepare(std::span<const TensorView>(&wv, 1), mode,
                            mode == WeightMode::kOnTheFly ? ComputeType::kF32 : compute));
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

}  // namespace unmask::plan
