// Guards against a GCC 12 wrong-code bug seen on this project's machines (AVX-512, -O2 and above):
// a non-uniform vector constant was materialised as a broadcast of its first element. The build
// disables AVX-512 code generation on GCC < 13 (CMakeLists.txt); this test fails if a compiler or
// flag change brings the bug back.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace unmask {
namespace {

TEST(CompilerTest, NonUniformVectorConstantsAreNotBroadcast) {
  const std::vector<int64_t> v = std::vector<int64_t>{1, 1, 0, 0};
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 0);
  const std::vector<int32_t> w = {7, 7, 7, 7, 7, 7, 7, 0};
  EXPECT_EQ(w[7], 0);
  const std::vector<float> f = {2.0f, 2.0f, 2.0f, 1.0f};
  EXPECT_EQ(f[3], 1.0f);
}

}  // namespace
}  // namespace unmask
