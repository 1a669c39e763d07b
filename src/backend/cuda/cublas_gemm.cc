#include "backend/cuda/cublas_gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>

#include "backend/cuda/cuda_runtime.h"

namespace unmask::cuda {
namespace {

// cuBLAS is loaded on first use (dlopen), not linked: mapping libcublasLt at start-up costs every
// process about 0.15 s (measured on the CI machine), and most processes (the CPU engine, the CLI)
// never create a CUDA backend. The header gives the types; the functions come from dlsym.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasGetVersion_v2) get_version = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  // cublasGemmEx is overloaded in C++ (cublas_api.h adds a cudaDataType-free inline form): the C
  // function's type spelled out.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  std::string error;  // why loading failed; empty when every function was found
};

const CublasApi& Api() {
  static CublasApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      api.error = "cannot load " + soname + " (" + (e != nullptr ? e : "dlopen failed") + ")";
      return;
    }
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr && api.error.empty()) api.error = soname + " has no " + name;
    };
    get(api.create, "cublasCreate_v2");
    get(api.destroy, "cublasDestroy_v2");
    get(api.get_version, "cublasGetVersion_v2");
    get(api.set_math_mode, "cublasSetMathMode");
    get(api.gemm_ex, "cublasGemmEx");
    get(api.status_name, "cublasGetStatusName");
    get(api.status_string, "cublasGetStatusString");
  });
  return api;
}

Status CublasStatus(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError(what + ": " + Api().status_name(s) + ": " + Api().status_string(s));
}

// Times `run` with CUDA events: the best of reps runs after one warm-up, in ms.
template <typename Run>
StatusOr<float> BestMs(int reps, Run run) {
  cudaEvent_t start = nullptr, stop = nullptr;
  UNMASK_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&start), "cudaEventCreate"));
  UNMASK_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&stop), "cudaEventCreate"));
  Status status = run();
  float best = std::numeric_limits<float>::infinity();
  for (int r = 0; r < reps && status.ok(); ++r) {
    cudaEventRecord(start);
    status = run();
    cudaEventRecord(stop);
    if (status.ok()) status = CudaStatus(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    if (status.ok()) status = CudaStatus(cudaEventElapsedTime(&ms, start, stop), "elapsed time");
    best = std::min(best, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  UNMASK_RETURN_IF_ERROR(status);
  return best;
}

}  // namespace

Status LoadCublas() {
  const CublasApi& api = Api();
  if (!api.error.empty()) return FailedPreconditionError("cuBLAS: " + api.error);
  return Status::Ok();
}

StatusOr<std::unique_ptr<CublasGemm>> CublasGemm::Create() {
  std::string why;
  if (DeviceCount(&why) == 0) {
    return FailedPreconditionError("cuBLAS: no CUDA device (" + why + ")");
  }
  UNMASK_RETURN_IF_ERROR(LoadCublas());
  const CublasApi& api = Api();
  std::unique_ptr<CublasGemm> g(new CublasGemm());
  cublasHandle_t h = nullptr;
  UNMASK_RETURN_IF_ERROR(CublasStatus(api.create(&h), "cublasCreate"));
  g->handle_ = h;
  // The default math mode: CUBLAS_COMPUTE_32F then is full f32 (TF32 only with
  // CUBLAS_COMPUTE_32F_FAST_TF32 or the TF32 math mode), bf16 inputs use the tensor cores.
  UNMASK_RETURN_IF_ERROR(CublasStatus(api.set_math_mode(h, CUBLAS_DEFAULT_MATH), "math mode"));
  return g;
}

CublasGemm::~CublasGemm() {
  if (handle_ != nullptr) Api().destroy(static_cast<cublasHandle_t>(handle_));
}

std::string CublasGemm::Version() const {
  int v = 0;
  Api().get_version(static_cast<cublasHandle_t>(handle_), &v);
  return "cuBLAS " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

Status CublasGemm::Run(ComputeType type, const void* x, const void* w, int64_t m, int64_t n,
                       int64_t k, float* y) const {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (m < 1 || n < 1 || k < 1 || m > kMax || n > kMax || k > kMax) {
    return InvalidArgumentError("CublasGemm: dimensions m " + std::to_string(m) + ", n " +
                                std::to_string(n) + ", k " + std::to_string(k) +
                                " must be in [1, 2^31)");
  }
  cudaDataType_t in;
  switch (type) {
    case ComputeType::kF32:
      in = CUDA_R_32F;
      break;
    case ComputeType::kBf16:
      in = CUDA_R_16BF;
      break;
    default:
      return InvalidArgumentError("CublasGemm: int8 products are not in the CUDA backend yet");
  }
  const float alpha = 1.0f, beta = 0.0f;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  // Row-major y [m, n] is column-major y^T [n, m] = W x^T: A = W (column-major [k, n], op T),
  // B = x (column-major [k, m], op N).
  return CublasStatus(Api().gemm_ex(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N,
                                    ni, mi, ki, &alpha, w, in, ki, x, in, ki, &beta, y, CUDA_R_32F,
                                    ni, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmEx (" + std::string(ComputeTypeName(type)) + ", m " +
                          std::to_string(m) + ", n " + std::to_string(n) + ", k " +
                          std::to_string(k) + ")");
}

StatusOr<double> CublasGemm::MeasureGflops(ComputeType type, int64_t size, int reps) const {
  if (reps < 1 || size < 1) {
    return InvalidArgumentError("MeasureGflops: reps and size must be >= 1");
  }
  const size_t elem = type == ComputeType::kF32 ? 4 : 2;
  const auto count = static_cast<size_t>(size) * static_cast<size_t>(size);
  UNMASK_ASSIGN_OR_RETURN(DeviceBuffer x, DeviceBuffer::Allocate(count * elem));
  UNMASK_ASSIGN_OR_RETURN(DeviceBuffer w, DeviceBuffer::Allocate(count * elem));
  UNMASK_ASSIGN_OR_RETURN(DeviceBuffer y, DeviceBuffer::Allocate(count * 4));
  // 0x3C bytes: f32 0.0115, bf16 0.0115 (finite, no denormals).
  UNMASK_RETURN_IF_ERROR(CudaStatus(cudaMemset(x.data(), 0x3C, x.size()), "cudaMemset"));
  UNMASK_RETURN_IF_ERROR(CudaStatus(cudaMemset(w.data(), 0x3C, w.size()), "cudaMemset"));
  UNMASK_ASSIGN_OR_RETURN(const float ms, BestMs(reps, [&] {
                            return Run(type, x.data(), w.data(), size, size, size, y.as<float>());
                          }));
  return 2.0 * static_cast<double>(size) * size * size / (ms * 1e-3) / 1e9;
}

StatusOr<double> MeasureCopyGbps(int64_t bytes, int reps) {
  if (reps < 1 || bytes < 1) return InvalidArgumentError("MeasureCopyGbps: reps, bytes >= 1");
  UNMASK_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::Allocate(static_cast<size_t>(bytes)));
  UNMASK_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(static_cast<size_t>(bytes)));
  UNMASK_RETURN_IF_ERROR(CudaStatus(cudaMemset(a.data(), 1, a.size()), "cudaMemset"));
  UNMASK_ASSIGN_OR_RETURN(const float ms, BestMs(reps, [&] {
                            return CudaStatus(
                                cudaMemcpy(b.data(), a.data(), a.size(), cudaMemcpyDeviceToDevice),
                                "cudaMemcpy device to device");
                          }));
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

}  // namespace unmask::cuda
