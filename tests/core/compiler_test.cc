// Guards against the GCC 12 wrong-code bug of cmake/cpu_flags.cmake (a non-uniform vector constant
// materialised as a broadcast of its first element), built with the flags of every project target.
// The release binary users build is checked the same way by scripts/check_release.py.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/compiler_patterns.h"

namespace unmask {
namespace {

std::string Join(const std::vector<const char*>& names) {
  std::string out;
  for (const char* n : names) out += std::string(out.empty() ? "" : ", ") + n;
  return out;
}

TEST(CompilerTest, NonUniformVectorConstantsAreNotBroadcast) {
  const std::vector<int64_t> v = std::vector<int64_t>{1, 1, 0, 0};
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 0);
  const std::vector<int32_t> w = {7, 7, 7, 7, 7, 7, 7, 0};
  EXPECT_EQ(w[7], 0);
  const std::vector<float> f = {2.0f, 2.0f, 2.0f, 1.0f};
  EXPECT_EQ(f[3], 1.0f);
}

TEST(CompilerTest, ConstantTablePatternsAreBuiltCorrectly) {
  const std::vector<const char*> wrong = compiler_patterns::WrongPatterns();
  EXPECT_TRUE(wrong.empty()) << "miscompiled with this build's flags: " << Join(wrong);
}

}  // namespace
}  // namespace unmask
