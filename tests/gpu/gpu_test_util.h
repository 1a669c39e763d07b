// Helpers of the GPU tests (ctest label gpu): skip with the runtime's reason when no CUDA device
// is visible (also under CI=true: CI machines have no GPU; scripts/device-check.sh runs these on
// one), device buffers from host vectors and back.
#ifndef UNMASK_TESTS_GPU_GPU_TEST_UTIL_H_
#define UNMASK_TESTS_GPU_GPU_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cuda/cuda_runtime.h"

#define UNMASK_REQUIRE_GPU()                                                     \
  do {                                                                           \
    std::string why_;                                                            \
    if (::unmask::cuda::DeviceCount(&why_) == 0) {                               \
      GTEST_SKIP() << "no CUDA device (" << why_ << "): GPU test not run; run "  \
                   << "scripts/device-check.sh on a machine with an NVIDIA GPU"; \
    }                                                                            \
  } while (0)

namespace unmask::testing {

template <typename T>
cuda::DeviceBuffer Upload(const std::vector<T>& host) {
  auto b = cuda::DeviceBuffer::Allocate(host.size() * sizeof(T));
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  if (!b.ok()) return {};
  const Status s = cuda::CopyToDevice(b->data(), host.data(), host.size() * sizeof(T));
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::move(b).value();
}

template <typename T>
std::vector<T> Download(const cuda::DeviceBuffer& b, size_t count) {
  std::vector<T> host(count);
  const Status sync = cuda::Synchronize("kernel");
  EXPECT_TRUE(sync.ok()) << sync.ToString();
  const Status s = cuda::CopyToHost(host.data(), b.data(), count * sizeof(T));
  EXPECT_TRUE(s.ok()) << s.ToString();
  return host;
}

}  // namespace unmask::testing

#endif  // UNMASK_TESTS_GPU_GPU_TEST_UTIL_H_
