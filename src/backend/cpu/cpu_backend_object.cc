#include "backend/cpu/cpu_backend_object.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/blas_onednn.h"
#include "backend/cpu/packed_gemm.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace unmask::cpu {

std::optional<GemmProvider> GemmProviderFromName(std::string_view name) {
  for (GemmProvider p :
       {GemmProvider::kOneDnn, GemmProvider::kOpenBlas, GemmProvider::kReference}) {
    if (name == GemmProviderName(p)) return p;
  }
  return std::nullopt;
}

std::string CpuBackend::Describe() const {
  return DescribeCpuBackend() + ", " + std::string(ComputeTypeName(compute_)) + " compute";
}

int CpuBackend::num_threads() const { return GetNumThreads(); }

bool CpuBackend::HasNativeCompute(ComputeType type) const {
  if (type == ComputeType::kF32) return true;
  return ActiveGemmProvider() == GemmProvider::kOneDnn && onednn::HasNativeKernels(type);
}

StatusOr<double> CpuBackend::MeasureGemmPeakGflops(int reps, ComputeType type) const {
  if (reps < 1) {
    return InvalidArgumentError("MeasureGemmPeakGflops: reps must be >= 1, got " +
                                std::to_string(reps));
  }
  constexpr int64_t m = 512, k = 768, n = 2048;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto w = AllocateAligned(static_cast<size_t>(n * k) * sizeof(float));
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  float* wp = static_cast<float*>(w.get());
  for (int64_t i = 0; i < n * k; ++i) wp[i] = u(rng);
  for (float& v : x) v = u(rng);
  // Prepacked as the model's weights are (ops/linear kPacked runs PackedGemm::Run); bf16 and
  // int8 include their per-call conversion of x, as a forward pays it.
  UNMASK_ASSIGN_OR_RETURN(const PackedGemm packed, PackedGemm::Pack(std::move(w), n, k, type));
  UNMASK_RETURN_IF_ERROR(packed.Run(x.data(), m, y.data()));  // warm-up: primitive, caches
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    UNMASK_RETURN_IF_ERROR(packed.Run(x.data(), m, y.data()));
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * m * n * k / best / 1e9;
}

namespace {

// Packs one weight in `type` and runs it at the M of real forwards (one token to beyond the
// layout's representative M): oneDNN picks the packed layout once per weight, and a layout some M
// cannot use would fail every forward of that size later. OK, or the error to report.
Status ProbeCompute(ComputeType type) {
  constexpr int64_t k = 768, n = 256;
  auto w = AllocateAligned(static_cast<size_t>(n * k) * sizeof(float));
  float* wp = static_cast<float*>(w.get());
  for (int64_t i = 0; i < n * k; ++i) wp[i] = static_cast<float>((i * 37) % 101 - 50) / 64.0f;
  UNMASK_ASSIGN_OR_RETURN(const PackedGemm packed, PackedGemm::Pack(std::move(w), n, k, type));
  std::vector<float> x(static_cast<size_t>(300 * k), 0.5f), y(static_cast<size_t>(300 * n));
  for (int64_t m : {1, 3, 16, 33, 300}) UNMASK_RETURN_IF_ERROR(packed.Run(x.data(), m, y.data()));
  return Status::Ok();
}

}  // namespace

StatusOr<std::shared_ptr<Backend>> CreateCpuBackend(const BackendOptions& options) {
  if (options.device != "cpu") {
    return InvalidArgumentError("CreateCpuBackend: device '" + options.device + "' is not cpu");
  }
  const std::optional<GemmProvider> gemm = GemmProviderFromName(options.gemm);
  if (!gemm) {
    return InvalidArgumentError("unknown GEMM provider '" + options.gemm +
                                "' (known: onednn, openblas, reference)");
  }
  ComputeType compute = ComputeType::kF32;
  std::string note;
  if (options.compute != "auto") {
    const std::optional<ComputeType> requested = ComputeTypeFromName(options.compute);
    if (!requested) {
      return InvalidArgumentError("unknown compute type '" + options.compute +
                                  "' (known: auto, f32, bf16, int8)");
    }
    if (*requested != ComputeType::kF32 && *gemm != GemmProvider::kOneDnn) {
      return InvalidArgumentError(options.compute + " compute runs on the oneDNN GEMM provider " +
                                  "only, not on " + options.gemm);
    }
    compute = *requested;
    if (!onednn::HasNativeKernels(compute)) {
      note = options.compute + " compute: this CPU (oneDNN ISA " + onednn::EffectiveIsaName() +
             ") has no " + options.compute + " matrix instructions (" +
             (compute == ComputeType::kBf16 ? "AVX512-BF16 or AMX-BF16" : "VNNI or AMX-INT8") +
             "); using f32";
      compute = ComputeType::kF32;
    }
  }
  CpuBackendOptions cpu_options;
  cpu_options.num_threads = options.num_threads;
  cpu_options.gemm = *gemm;
  UNMASK_RETURN_IF_ERROR(InitCpuBackend(cpu_options));
  if (compute != ComputeType::kF32) {
    if (Status probe = ProbeCompute(compute); !probe.ok()) {
      note = options.compute + " compute: oneDNN could not run it at every product size on this " +
             "CPU (" + probe.message() + "); using f32";
      compute = ComputeType::kF32;
    }
  }
  return std::shared_ptr<Backend>(std::make_shared<CpuBackend>(options, compute, note));
}

std::shared_ptr<Backend> NewDefaultCpuBackend() {
  return std::make_shared<CpuBackend>(BackendOptions{}, ComputeType::kF32, "");
}

}  // namespace unmask::cpu
