// The backend seam (backend/backend.h): CreateBackend's errors, the CPU backend's description and
// thread count, DefaultBackend, and the GEMM peak measurement.
#include "backend/backend.h"

#include <gtest/gtest.h>

#include <string>

#include "core/parallel.h"

namespace unmask {
namespace {

// Restores the default CPU settings after a test that changed them.
class BackendTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(CreateBackend({}).ok()); }
};

TEST_F(BackendTest, DefaultOptionsMakeAOneDnnCpuBackend) {
  auto b = CreateBackend({});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->device(), Device::kCpu);
  EXPECT_EQ((*b)->options().device, "cpu");
  EXPECT_EQ((*b)->options().gemm, "onednn");
  EXPECT_EQ((*b)->options().num_threads, 0);
  EXPECT_EQ((*b)->num_threads(), HardwareThreads());
  const std::string d = (*b)->Describe();
  EXPECT_EQ(d.rfind("onednn ", 0), 0u) << d;
  EXPECT_NE(d.find(std::to_string((*b)->num_threads()) + " thread"), std::string::npos) << d;
}

TEST_F(BackendTest, ThreadCountIsApplied) {
  BackendOptions o;
  o.num_threads = 1;
  auto b = CreateBackend(o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->num_threads(), 1);
  EXPECT_EQ(GetNumThreads(), 1);
  EXPECT_NE((*b)->Describe().find("1 thread"), std::string::npos) << (*b)->Describe();
  EXPECT_EQ((*b)->options().num_threads, 1);
}

TEST_F(BackendTest, ReferenceGemm) {
  BackendOptions o;
  o.gemm = "reference";
  auto b = CreateBackend(o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->Describe().rfind("reference", 0), 0u) << (*b)->Describe();
}

TEST_F(BackendTest, OpenBlasLoadsOrIsAFailedPrecondition) {
  BackendOptions o;
  o.gemm = "openblas";
  auto b = CreateBackend(o);
  if (!b.ok()) {
    EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition) << b.status().ToString();
    GTEST_SKIP() << "SKIPPED: OpenBLAS not available: " << b.status().ToString();
  }
  EXPECT_EQ((*b)->Describe().rfind("openblas", 0), 0u) << (*b)->Describe();
}

// The error of CreateBackend for a device name.
Status DeviceError(const std::string& device) {
  BackendOptions o;
  o.device = device;
  auto b = CreateBackend(o);
  return b.ok() ? Status::Ok() : b.status();
}

TEST_F(BackendTest, UnknownDeviceIsInvalidArgument) {
  const Status s = DeviceError("tpu");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("'tpu'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("cpu, cuda"), std::string::npos) << s.ToString();
  EXPECT_EQ(DeviceError("CPU").code(), StatusCode::kInvalidArgument);
}

// A build without the CUDA backend (cmake/cuda.cmake: UNMASK_CUDA OFF, or AUTO without nvcc) says
// so; one with it gives the device or says no device is visible (tests/gpu/cuda_backend_test.cc
// covers that build in full).
TEST_F(BackendTest, CudaSaysWhetherThisBuildHasTheCudaBackend) {
  const Status s = DeviceError("cuda");
  if (s.code() == StatusCode::kUnimplemented) {
    EXPECT_NE(s.message().find("this build has no CUDA backend"), std::string::npos)
        << s.ToString();
    return;
  }
  if (!s.ok()) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("no CUDA device"), std::string::npos) << s.ToString();
  }
}

TEST_F(BackendTest, UnknownGemmIsInvalidArgumentAndNothingChanges) {
  BackendOptions one;
  one.num_threads = 1;
  ASSERT_TRUE(CreateBackend(one).ok());
  BackendOptions o;
  o.num_threads = 2;
  o.gemm = "mkl";
  auto b = CreateBackend(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << b.status().ToString();
  EXPECT_NE(b.status().message().find("'mkl'"), std::string::npos) << b.status().ToString();
  EXPECT_NE(b.status().message().find("onednn, openblas, reference"), std::string::npos);
  EXPECT_EQ(GetNumThreads(), 1);
}

TEST_F(BackendTest, DefaultBackendIsOneObjectAndChangesNoSetting) {
  BackendOptions one;
  one.num_threads = 1;
  ASSERT_TRUE(CreateBackend(one).ok());
  const std::shared_ptr<Backend> a = DefaultBackend();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, DefaultBackend());
  EXPECT_EQ(a->device(), Device::kCpu);
  EXPECT_EQ(a->options().gemm, "onednn");
  EXPECT_EQ(a->options().num_threads, 0);
  EXPECT_EQ(GetNumThreads(), 1);  // the settings of the backend created before stay in effect
  EXPECT_EQ(a->num_threads(), 1);
  EXPECT_FALSE(a->Describe().empty());
}

TEST_F(BackendTest, MeasureGemmPeak) {
  auto b = CreateBackend({});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto peak = (*b)->MeasureGemmPeakGflops(1);
  ASSERT_TRUE(peak.ok()) << peak.status().ToString();
  EXPECT_GT(*peak, 0.1);
  EXPECT_LT(*peak, 1e6);
  EXPECT_EQ((*b)->MeasureGemmPeakGflops(0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask
