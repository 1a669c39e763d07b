// GEMM throughput of a model's own weight against the number of rows fed per forward: the
// measured rates behind the planner's second prediction (`unmask bench arena`).
#ifndef UNMASK_PLAN_GEMM_CURVE_H_
#define UNMASK_PLAN_GEMM_CURVE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"
#include "format/gguf.h"
#include "ops/linear.h"

namespace unmask::plan {

// blk.0.ffn_up.weight ([ffn, hidden], the stored dtype; for a mixture-of-experts model whose first
// layer is MoE, the first expert of blk.0.ffn_up_exps.weight) prepared with `mode` and `compute` as
// the model prepares its weights (Model::compute(); kF32 for kOnTheFly); y[M, ffn] = x[M, hidden]
// W^T (host memory: the CPU backend in effect), best of `reps` after a warm-up, for each M of
// `rows`. Returns (M, FLOP/s) pairs. Errors: NotFound without either tensor, the errors of
// LinearWeight::Prepare and Linear.
StatusOr<std::vector<std::pair<double, double>>> MeasureGemmCurve(
    const gguf::GgufFile& file, WeightMode mode, const std::vector<int64_t>& rows, int reps = 5,
    ComputeType compute = ComputeType::kF32);

}  // namespace unmask::plan

#endif  // UNMASK_PLAN_GEMM_CURVE_H_
