// Test helpers: where test data lives and what happens when shared data is missing.
#ifndef UNMASK_TESTS_TEST_UTIL_H_
#define UNMASK_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace unmask::testing {

// Repository root (compile-time path).
std::string SourceDir();
// tests/data/<relative>
std::string TestDataPath(const std::string& relative);
// A scratch directory for this test binary under the build tree (created on demand).
std::string TempDir();

// ../shared/data/<relative> (or $UNMASK_SHARED_DATA/<relative>) if it exists; nullopt otherwise.
std::optional<std::string> FindSharedData(const std::string& relative);
// True when CI=true is set in the environment: missing shared data is then a failure.
bool InCi();

}  // namespace unmask::testing

// Resolves ../shared/data/<relative> into `var`; when it is missing, skips the test with a visible
// message, or fails it under CI=true.
#define UNMASK_REQUIRE_SHARED_DATA(var, relative)                                            \
  std::string var;                                                                           \
  do {                                                                                       \
    auto unmask_found_ = ::unmask::testing::FindSharedData(relative);                        \
    if (!unmask_found_) {                                                                    \
      if (::unmask::testing::InCi()) FAIL() << "shared data missing under CI: " << relative; \
      GTEST_SKIP() << "SKIPPED: shared data not found: ../shared/data/" << relative;         \
    }                                                                                        \
    var = *unmask_found_;                                                                    \
  } while (0)

#endif  // UNMASK_TESTS_TEST_UTIL_H_
