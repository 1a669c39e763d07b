// The patterns of compiler_patterns.h compiled with the flags for run-time-dispatched AVX-512 code
// (UNMASK_AVX512_FLAGS, cmake/cpu_flags.cmake): such code must be as correct as the baseline. Runs
// only on CPUs with AVX-512 F/BW/DQ/VL (elsewhere the instructions may not exist) and skips with a
// message otherwise.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/compiler_patterns.h"

namespace unmask {
namespace {

TEST(CompilerAvx512Test, ConstantTablePatternsAreBuiltCorrectly) {
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))) {
    GTEST_SKIP() << "this CPU has no AVX-512 F/BW/DQ/VL";
  }
  std::string wrong;
  for (const char* n : compiler_patterns::WrongPatterns()) wrong += std::string(" ") + n;
  EXPECT_TRUE(wrong.empty()) << "miscompiled with the AVX-512 kernel flags:" << wrong;
}

}  // namespace
}  // namespace unmask
