#include "backend/cpu/packed_gemm.h"

#include <omp.h>

#include <algorithm>
#include <utility>

#include "backend/cpu/blas_onednn.h"
#include "backend/cpu/blas_reference.h"
#include "backend/cpu/gemm_dispatch.h"
#include "core/parallel.h"

namespace unmask::cpu {

PackedGemm::PackedGemm() = default;
PackedGemm::~PackedGemm() = default;
PackedGemm::PackedGemm(PackedGemm&&) noexcept = default;
PackedGemm& PackedGemm::operator=(PackedGemm&&) noexcept = default;

StatusOr<PackedGemm> PackedGemm::Pack(std::unique_ptr<void, AlignedDeleter> w, int64_t n, int64_t k,
                                      ComputeType type) {
  if (w == nullptr || n < 1 || k < 1) {
    return InvalidArgumentError(
        "PackedGemm::Pack: need a non-null [n, k] weight with n, k >= 1, got [" +
        std::to_string(n) + ", " + std::to_string(k) + "]");
  }
  PackedGemm g;
  g.provider_ = ActiveGemmProvider();
  if (type != ComputeType::kF32 && g.provider_ != GemmProvider::kOneDnn) {
    return FailedPreconditionError(std::string(ComputeTypeName(type)) +
                                   " compute needs the oneDNN GEMM provider, not " +
                                   std::string(GemmProviderName(g.provider_)));
  }
  g.type_ = type;
  g.n_ = n;
  g.k_ = k;
  if (g.provider_ == GemmProvider::kOneDnn) {
    EnsureOmpThreads();
    UNMASK_ASSIGN_OR_RETURN(
        g.onednn_, onednn::PackedWeight::Pack(static_cast<const float*>(w.get()), n, k, type));
  } else {
    g.plain_ = std::move(w);
  }
  return g;
}

size_t PackedGemm::bytes() const {
  if (onednn_) return onednn_->bytes();
  if (plain_) return static_cast<size_t>(n_) * static_cast<size_t>(k_) * sizeof(float);
  return 0;
}

Status PackedGemm::Run(const float* x, int64_t m, float* y) const {
  if (!onednn_ && !plain_) return FailedPreconditionError("PackedGemm::Run on an empty weight");
  if (m <= 0) return Status::Ok();
  if (onednn_) {
    EnsureOmpThreads();
    // Thread policy (core/parallel.h): a small product runs on the calling thread. The OpenMP
    // thread count is per calling thread, so lowering it here does not affect other threads.
    const int threads = ThreadsForFlops(2 * m * n_ * k_);
    const int before = omp_get_max_threads();
    if (threads >= before || omp_in_parallel()) return onednn_->Run(x, m, y);
    omp_set_num_threads(threads);
    Status s = onednn_->Run(x, m, y);
    omp_set_num_threads(before);
    return s;
  }
  const auto* w = static_cast<const float*>(plain_.get());
  if (provider_ == GemmProvider::kReference) {
    // The reference is single-threaded; split rows of y so that tests stay fast.
    ParallelFor(m, 1, [&](int64_t begin, int64_t end) {
      reference::Sgemm(false, true, end - begin, n_, k_, 1.0f, x + begin * k_, k_, w, k_, 0.0f,
                       y + begin * n_, n_);
    });
    return Status::Ok();
  }
  SgemmWith(provider_, false, true, m, n_, k_, 1.0f, x, k_, w, k_, 0.0f, y, n_);
  return Status::Ok();
}

}  // namespace unmask::cpu
