#include "ops/linear.h"

#include <atomic>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "core/pages.h"
#include "core/parallel.h"
#include "ops/kernels_cpu.h"
#include "ops/linear_impl.h"
#include "ops/op_check.h"

namespace unmask {
namespace {

std::atomic<QuantActivations> g_quant_activations{QuantActivations::kInt8};

bool SupportedWeightDType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
         dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ4_1 ||
         dtype == DType::kQ4_K || dtype == DType::kQ6_K;
}

std::string PartName(size_t i) { return "parts[" + std::to_string(i) + "]"; }

Status CheckParts(std::span<const TensorView> parts, int64_t* n, int64_t* k) {
  if (parts.empty()) return InvalidArgumentError("LinearWeight::Prepare: no weight parts");
  *n = 0;
  *k = -1;
  for (size_t i = 0; i < parts.size(); ++i) {
    const TensorView& p = parts[i];
    const std::string name = ops_internal::Describe(PartName(i), p);
    if (!SupportedWeightDType(p.dtype)) {
      return InvalidArgumentError("LinearWeight::Prepare: " + name +
                                  ": unsupported dtype (supported: f32, f16, bf16, q8_0, "
                                  "q4_0, q4_1, q4_k, q6_k)");
    }
    if (p.shape.rank() != 2 || p.shape[0] < 0 || p.shape[1] < 1) {
      return InvalidArgumentError("LinearWeight::Prepare: " + name +
                                  " must be [out_i, in] with in >= 1");
    }
    if (*k >= 0 && p.shape[1] != *k) {
      return InvalidArgumentError("LinearWeight::Prepare: " + name + " has in_features " +
                                  std::to_string(p.shape[1]) + ", parts[0] has " +
                                  std::to_string(*k));
    }
    *k = p.shape[1];
    if (!RowBytes(p.dtype, *k)) {
      return InvalidArgumentError("LinearWeight::Prepare: " + name + ": in_features " +
                                  std::to_string(*k) + " is not a multiple of the " +
                                  std::string(DTypeName(p.dtype)) + " block size " +
                                  std::to_string(GetDTypeInfo(p.dtype).block_size));
    }
    if (p.data == nullptr && p.shape[0] > 0) {
      return InvalidArgumentError("LinearWeight::Prepare: " + name + " has null data");
    }
    if (p.device != Device::kCpu) {  // weights are prepared (and packed) in host memory
      return UnimplementedError("LinearWeight::Prepare: " + name +
                                ": weights are prepared from host (cpu) memory only");
    }
    *n += p.shape[0];
  }
  if (*n < 1) return InvalidArgumentError("LinearWeight::Prepare: the parts have no rows");
  constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 16;
  if (*n > kMaxElements / *k) {
    return InvalidArgumentError("LinearWeight::Prepare: [" + std::to_string(*n) + ", " +
                                std::to_string(*k) + "] is too large");
  }
  return Status::Ok();
}

}  // namespace

void SetQuantActivations(QuantActivations activations) {
  g_quant_activations.store(activations, std::memory_order_relaxed);
}
QuantActivations GetQuantActivations() {
  return g_quant_activations.load(std::memory_order_relaxed);
}

LinearWeight::LinearWeight() = default;
LinearWeight::~LinearWeight() = default;
LinearWeight::LinearWeight(LinearWeight&&) noexcept = default;
LinearWeight& LinearWeight::operator=(LinearWeight&&) noexcept = default;

int64_t LinearWeight::out_features() const { return impl_ ? impl_->n : 0; }
int64_t LinearWeight::in_features() const { return impl_ ? impl_->k : 0; }
WeightMode LinearWeight::mode() const { return impl_ ? impl_->mode : WeightMode::kPacked; }
size_t LinearWeight::owned_bytes() const { return impl_ ? impl_->owned_bytes : 0; }
ComputeType LinearWeight::compute() const {
  return impl_ && impl_->mode == WeightMode::kPacked ? impl_->packed.type() : ComputeType::kF32;
}

StatusOr<LinearWeight> LinearWeight::Prepare(std::span<const TensorView> parts, WeightMode mode,
                                             ComputeType compute) {
  if (mode != WeightMode::kAuto && mode != WeightMode::kPacked && mode != WeightMode::kOnTheFly) {
    return InvalidArgumentError("LinearWeight::Prepare: unknown WeightMode value " +
                                std::to_string(static_cast<int>(mode)));
  }
  if (!ComputeTypeFromName(ComputeTypeName(compute))) {
    return InvalidArgumentError("LinearWeight::Prepare: unknown ComputeType value " +
                                std::to_string(static_cast<int>(compute)));
  }
  if (mode == WeightMode::kOnTheFly && compute != ComputeType::kF32) {
    return InvalidArgumentError(
        "LinearWeight::Prepare: " + std::string(ComputeTypeName(compute)) +
        " compute needs packed weights; weights kept in their stored type (kOnTheFly) are "
        "multiplied by the fused f32 / int8-activation kernels");
  }
  int64_t n = 0, k = 0;
  UNMASK_RETURN_IF_ERROR(CheckParts(parts, &n, &k));
  auto impl = std::make_unique<Impl>();
  impl->n = n;
  impl->k = k;
  impl->mode = mode == WeightMode::kOnTheFly ? WeightMode::kOnTheFly : WeightMode::kPacked;
  try {
    if (impl->mode == WeightMode::kPacked) {
      auto dense = AllocateAligned(static_cast<size_t>(n * k) * sizeof(float));
      auto* dst = static_cast<float*>(dense.get());
      int64_t row0 = 0;
      for (const TensorView& p : parts) {
        const auto* src = static_cast<const uint8_t*>(p.data);
        const size_t row_bytes = *RowBytes(p.dtype, k);
        ParallelFor(p.shape[0], 64, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            cpu::ConvertRow(p.dtype, src + static_cast<size_t>(r) * row_bytes, k,
                            dst + (row0 + r) * k);
          }
        });
        row0 += p.shape[0];
      }
      UNMASK_ASSIGN_OR_RETURN(impl->packed, cpu::PackedGemm::Pack(std::move(dense), n, k, compute));
      impl->owned_bytes = impl->packed.bytes();
    } else {
      int64_t row0 = 0;
      for (const TensorView& p : parts) {
        if (p.shape[0] == 0) continue;
        Impl::Segment seg;
        seg.row0 = row0;
        seg.rows = p.shape[0];
        seg.dtype = p.dtype;
        seg.row_bytes = *RowBytes(p.dtype, k);
        // Referenced, not copied: a fused gate/up of an 8B model would otherwise copy GBs.
        seg.data = static_cast<const uint8_t*>(p.data);
        if (cpu::PackQuantWeights(p.dtype)) {
          // The 16-row layout of the VNNI kernel that reads the weights once for every x row
          // (linear_packed_quant.h): as many bytes again, owned here.
          const size_t bytes = cpu::PackedSegmentBytes(p.dtype, seg.rows, k);
          auto packed = AllocateAligned(bytes);
          cpu::PackSegment(&seg, k, static_cast<uint8_t*>(packed.get()));
          // The kernels read the packed copy only from now on (rows included: PanelF32), so the
          // stored bytes' pages are handed back: a mapped file's leave the resident set instead
          // of counting twice (the loader's RSS is then the packed copy, as many bytes again).
          ReleasePages(seg.data, static_cast<size_t>(seg.rows) * seg.row_bytes);
          impl->owned_bytes += bytes;
          impl->owned.push_back(std::move(packed));
        }
        impl->segments.push_back(seg);
        row0 += seg.rows;
      }
    }
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("LinearWeight::Prepare: out of memory for a [" +
                                  std::to_string(n) + ", " + std::to_string(k) + "] weight");
  }
  LinearWeight w;
  w.impl_ = std::move(impl);
  return w;
}

Status Linear(const TensorView& x, const LinearWeight& w, TensorView y) {
  using ops_internal::Describe;
  const LinearWeight::Impl* impl = w.impl();
  if (impl == nullptr) {
    return InvalidArgumentError("Linear: the weight is empty (not prepared, or moved from)");
  }
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("Linear", "x", x, -1));
  UNMASK_RETURN_IF_ERROR(ops_internal::CheckF32("Linear", "y", y, -1));
  UNMASK_ASSIGN_OR_RETURN(const Device device,
                          ops_internal::CommonDevice("Linear", {{"x", &x}, {"y", &y}}));
  if (device != w.device()) {
    return InvalidArgumentError("Linear: x and y are on " + std::string(DeviceName(device)) +
                                " but the weight on " + std::string(DeviceName(w.device())));
  }
  const int64_t m = x.rows();
  if (x.cols() != impl->k) {
    return InvalidArgumentError("Linear: " + Describe("x", x) + " must have " +
                                std::to_string(impl->k) + " columns (in_features of the [" +
                                std::to_string(impl->n) + ", " + std::to_string(impl->k) +
                                "] weight)");
  }
  if (y.rows() != m || y.cols() != impl->n) {
    return InvalidArgumentError("Linear: " + Describe("y", y) + " must be [" + std::to_string(m) +
                                ", " + std::to_string(impl->n) + "] for " + Describe("x", x) +
                                " and a [" + std::to_string(impl->n) + ", " +
                                std::to_string(impl->k) + "] weight");
  }
  if (ops_internal::Overlap(x, y)) {
    return InvalidArgumentError("Linear: y overlaps x");
  }
  switch (device) {
    case Device::kCpu:
      if (m == 0) return Status::Ok();
      if (impl->mode == WeightMode::kPacked) {
        return impl->packed.Run(x.as<float>(), m, y.as<float>());
      }
      cpu::LinearOnTheFly(*impl, x.as<float>(), m, y.as<float>());
      return Status::Ok();
    case Device::kCuda:
      break;
  }
  return ops_internal::NoKernel("Linear", device);
}

}  // namespace unmask
