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
// The SmolLM2-135M-Instruct GGUF fetched by scripts/fetch-smollm2.sh into
// $UNMASK_CACHE (default ~/.cache/unmask)/smollm2/, if it is there; nullopt otherwise.
std::optional<std::string> FindSmolLM2();
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

// Resolves the fetched SmolLM2 GGUF into `var`; when it is missing, skips the test with a
// visible message (scripts/fetch-smollm2.sh fetches it), or fails it under CI=true.
#define UNMASK_REQUIRE_SMOLLM2(var)                                                  \
  std::string var;                                                                   \
  do {                                                                               \
    auto unmask_found_ = ::unmask::testing::FindSmolLM2();                           \
    if (!unmask_found_) {                                                            \
      if (::unmask::testing::InCi()) FAIL() << "SmolLM2 GGUF missing under CI";      \
      GTEST_SKIP() << "SKIPPED: SmolLM2 not fetched (run scripts/fetch-smollm2.sh)"; \
    }                                                                                \
    var = *unmask_found_;                                                            \
  } while (0)

#endif  // UNMASK_TESTS_TEST_UTIL_H_
