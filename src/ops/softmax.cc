#include "ops/softmax.h"

#include "ops/kernels_cpu.h"
#include "ops/op_check.h"

namespace unmask {

Status SoftmaxInPlace(TensorView x) {
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("SoftmaxInPlace", "x", x, 2));
  switch (x.device) {
    case Device::kCpu:
      if (x.shape[0] > 0 && x.shape[1] > 0) cpu::SoftmaxRows(x.as<float>(), x.shape[0], x.shape[1]);
      return Status::Ok();
    case Device::kCuda:
      break;
  }
  return ops_internal::NoKernel("SoftmaxInPlace", x.device);
}

double SumExpShifted(const float* x, int64_t n, float shift) {
  return n > 0 ? cpu::SumExpShifted(x, n, shift) : 0.0;
}

}  // namespace unmask
