// The CUDA backend (backend/cuda/cuda_backend.h; CreateBackend("cuda") routes to it, which
// tests/backend/backend_test.cc checks): what it gives with and without a GPU, device memory, and
// cuBLAS products against a float64 host reference. The tests that need a device skip with a
// message without one (gpu_test_util.h). Calls CreateCudaBackend itself so that the GPU machine's
// standalone build (scripts/device/CMakeLists.txt, no CPU backend) runs these too.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cuda/cublas_gemm.h"
#include "backend/cuda/cuda_backend.h"
#include "core/half.h"
#include "gpu_test_util.h"

namespace unmask {
namespace {

BackendOptions Cuda() {
  BackendOptions o;
  o.device = "cuda";
  return o;
}

TEST(CudaBackendTest, CreateGivesTheDeviceOrSaysWhyNot) {
  std::string why;
  const int devices = cuda::DeviceCount(&why);
  auto b = cuda::CreateCudaBackend(Cuda());
  if (devices == 0) {
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition) << b.status().ToString();
    EXPECT_NE(b.status().message().find("no CUDA device"), std::string::npos)
        << b.status().ToString();
    EXPECT_NE(b.status().message().find("device 'cpu'"), std::string::npos)
        << b.status().ToString();
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->device(), Device::kCuda);
  EXPECT_EQ((*b)->compute(), ComputeType::kF32);  // auto: the exact path
  EXPECT_NE((*b)->Describe().find("sm_"), std::string::npos) << (*b)->Describe();
  EXPECT_NE((*b)->Describe().find("cuBLAS"), std::string::npos) << (*b)->Describe();
  EXPECT_TRUE((*b)->HasNativeCompute(ComputeType::kF32));
  EXPECT_FALSE((*b)->HasNativeCompute(ComputeType::kInt8));
}

TEST(CudaBackendTest, BadOptionsAreInvalidArgumentsWithOrWithoutADevice) {
  BackendOptions o = Cuda();
  o.gemm = "openblas";
  auto b = cuda::CreateCudaBackend(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << b.status().ToString();
  EXPECT_NE(b.status().message().find("cublas"), std::string::npos) << b.status().ToString();
}

// cuBLAS is loaded at run time, not linked: the library and every function the backend calls are
// found (no device needed; the toolkit that built the backend is on this machine).
TEST(CudaBackendTest, CublasLoadsAndHasEveryFunction) {
  const Status s = cuda::LoadCublas();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(cuda::LoadCublas().ok());  // once per process, the same answer
}

TEST(CudaBackendTest, DeviceMemoryWithoutADeviceIsAnErrorNotACrash) {
  auto empty = cuda::DeviceBuffer::Allocate(0);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->data(), nullptr);
  if (cuda::DeviceCount() > 0) {
    auto b = cuda::DeviceBuffer::Allocate(1 << 20);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_NE(b->data(), nullptr);
    // More than any card has: ResourceExhausted, and the device stays usable.
    auto huge = cuda::DeviceBuffer::Allocate(size_t{1} << 50);
    ASSERT_FALSE(huge.ok());
    EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted) << huge.status().ToString();
    EXPECT_TRUE(cuda::DeviceBuffer::Allocate(1024).ok());
    return;
  }
  auto b = cuda::DeviceBuffer::Allocate(1024);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition) << b.status().ToString();
  EXPECT_FALSE(cuda::GetDeviceInfo(0).ok());
}

// y = x W^T on the device against float64 on the host, for f32 and bf16 (inputs rounded to bf16
// on the host first, so both sides multiply the same values; a bf16 x bf16 product is exact in
// f32). Tolerance: the worst-case bound of an f32 sum of k terms in any order (cuBLAS may split k),
// k * 2^-24 * sum |x w|, plus 1e-6.
void CheckGemm(ComputeType type, int64_t m, int64_t n, int64_t k) {
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 7 + k));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k));
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  std::vector<uint16_t> xb, wb;
  if (type == ComputeType::kBf16) {
    for (float& v : x) xb.push_back(F32ToBF16(v)), v = BF16ToF32(xb.back());
    for (float& v : w) wb.push_back(F32ToBF16(v)), v = BF16ToF32(wb.back());
  }
  auto gemm = cuda::CublasGemm::Create();
  ASSERT_TRUE(gemm.ok()) << gemm.status().ToString();
  cuda::DeviceBuffer dx = type == ComputeType::kBf16 ? testing::Upload(xb) : testing::Upload(x);
  cuda::DeviceBuffer dw = type == ComputeType::kBf16 ? testing::Upload(wb) : testing::Upload(w);
  auto dy = cuda::DeviceBuffer::Allocate(static_cast<size_t>(m * n) * 4);
  ASSERT_TRUE(dy.ok());
  const Status s = (*gemm)->Run(type, dx.data(), dw.data(), m, n, k, dy->as<float>());
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::vector<float> y = testing::Download<float>(*dy, static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        ref += double(x[i * k + p]) * w[j * k + p];
        mag += std::fabs(double(x[i * k + p]) * w[j * k + p]);
      }
      ASSERT_NEAR(y[i * n + j], ref, static_cast<double>(k) * 0x1p-24 * mag + 1e-6)
          << ComputeTypeName(type) << " m " << m << " n " << n << " k " << k << " at " << i << ", "
          << j;
    }
  }
}

TEST(CudaBackendTest, CublasProductsMatchAFloat64Reference) {
  UNMASK_REQUIRE_GPU();
  for (ComputeType t : {ComputeType::kF32, ComputeType::kBf16}) {
    CheckGemm(t, 1, 576, 576);    // batch-1 decode
    CheckGemm(t, 7, 1536, 576);   // a 7-token verification
    CheckGemm(t, 67, 300, 1000);  // odd sizes
  }
  auto gemm = cuda::CublasGemm::Create();
  ASSERT_TRUE(gemm.ok());
  EXPECT_EQ((*gemm)->Run(ComputeType::kF32, nullptr, nullptr, 0, 4, 4, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*gemm)->Run(ComputeType::kInt8, nullptr, nullptr, 4, 4, 4, nullptr).code(),
            StatusCode::kInvalidArgument);
}

TEST(CudaBackendTest, PeakRatesArePositive) {
  UNMASK_REQUIRE_GPU();
  auto b = cuda::CreateCudaBackend(Cuda());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  for (ComputeType t : {ComputeType::kF32, ComputeType::kBf16}) {
    auto g = (*b)->MeasureGemmPeakGflops(2, t);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_GT(*g, 1000.0) << ComputeTypeName(t);  // any CUDA GPU of sm_70+ beats 1 TFLOP/s
  }
  auto copy = cuda::MeasureCopyGbps(int64_t{256} << 20, 3);
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_GT(*copy, 100.0);
}

}  // namespace
}  // namespace unmask
