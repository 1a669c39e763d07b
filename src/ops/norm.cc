#include "ops/norm.h"

#include <cmath>
#include <string>

#include "ops/kernels_cpu.h"
#include "ops/op_check.h"

namespace unmask {

Status RmsNorm(const TensorView& x, const TensorView& w, float eps, TensorView y) {
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("RmsNorm", "x", x, 2));
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("RmsNorm", "w", w, 1));
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("RmsNorm", "y", y, 2));
  UNMASK_ASSIGN_OR_RETURN(const Device device,
                          ops_internal::CommonDevice("RmsNorm", {{"x", &x}, {"w", &w}, {"y", &y}}));
  const int64_t m = x.shape[0];
  const int64_t d = x.shape[1];
  if (w.shape[0] != d) {
    return InvalidArgumentError("RmsNorm: " + ops_internal::Describe("w", w) + " must be [" +
                                std::to_string(d) + "] to match " + ops_internal::Describe("x", x));
  }
  if (!(y.shape == x.shape)) {
    return InvalidArgumentError("RmsNorm: " + ops_internal::Describe("y", y) +
                                " must have the shape of " + ops_internal::Describe("x", x));
  }
  if (!(eps >= 0.0f) || !std::isfinite(eps)) {
    return InvalidArgumentError("RmsNorm: eps must be finite and >= 0, got " + std::to_string(eps));
  }
  if (!ops_internal::SameData(x, y) && ops_internal::Overlap(x, y)) {
    return InvalidArgumentError("RmsNorm: y partially overlaps x (it may alias x exactly)");
  }
  switch (device) {
    case Device::kCpu:
      if (m > 0 && d > 0) cpu::RmsNormRows(x.as<float>(), w.as<float>(), m, d, eps, y.as<float>());
      return Status::Ok();
    case Device::kCuda:
      break;
  }
  return ops_internal::NoKernel("RmsNorm", device);
}

}  // namespace unmask
