#include "ops/activation.h"

#include <string>

#include "ops/kernels_cpu.h"
#include "ops/op_check.h"

namespace unmask {

Status SwiGlu(const TensorView& gate_up, TensorView out) {
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("SwiGlu", "gate_up", gate_up, 2));
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("SwiGlu", "out", out, 2));
  UNMASK_ASSIGN_OR_RETURN(
      const Device device,
      ops_internal::CommonDevice("SwiGlu", {{"gate_up", &gate_up}, {"out", &out}}));
  const int64_t m = gate_up.shape[0];
  if (gate_up.shape[1] % 2 != 0) {
    return InvalidArgumentError("SwiGlu: " + ops_internal::Describe("gate_up", gate_up) +
                                " must have an even number of columns [M, 2F]");
  }
  const int64_t f = gate_up.shape[1] / 2;
  if (out.shape[0] != m || out.shape[1] != f) {
    return InvalidArgumentError("SwiGlu: " + ops_internal::Describe("out", out) + " must be [" +
                                std::to_string(m) + ", " + std::to_string(f) + "] for " +
                                ops_internal::Describe("gate_up", gate_up));
  }
  if (ops_internal::Overlap(gate_up, out)) {
    return InvalidArgumentError("SwiGlu: out overlaps gate_up");
  }
  switch (device) {
    case Device::kCpu:
      if (m > 0 && f > 0) cpu::SwiGluRows(gate_up.as<float>(), m, f, out.as<float>());
      return Status::Ok();
    case Device::kCuda:
      break;
  }
  return ops_internal::NoKernel("SwiGlu", device);
}

Status AddInPlace(TensorView y, const TensorView& x) {
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("AddInPlace", "y", y, -1));
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("AddInPlace", "x", x, -1));
  UNMASK_ASSIGN_OR_RETURN(const Device device,
                          ops_internal::CommonDevice("AddInPlace", {{"y", &y}, {"x", &x}}));
  if (!(y.shape == x.shape)) {
    return InvalidArgumentError("AddInPlace: " + ops_internal::Describe("x", x) +
                                " must have the shape of " + ops_internal::Describe("y", y));
  }
  if (!ops_internal::SameData(x, y) && ops_internal::Overlap(x, y)) {
    return InvalidArgumentError("AddInPlace: x partially overlaps y (it may alias y exactly)");
  }
  switch (device) {
    case Device::kCpu:
      cpu::AddInPlace(y.as<float>(), x.as<float>(), y.num_elements());
      return Status::Ok();
    case Device::kCuda:
      break;
  }
  return ops_internal::NoKernel("AddInPlace", device);
}

}  // namespace unmask
