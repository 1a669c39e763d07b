#include "test_util.h"

#include <cstdlib>
#include <filesystem>

namespace unmask::testing {

std::string SourceDir() { return UNMASK_SOURCE_DIR; }

std::string TestDataPath(const std::string& relative) {
  return SourceDir() + "/tests/data/" + relative;
}

std::string TempDir() {
  const std::string dir = std::string(UNMASK_BINARY_DIR) + "/test_tmp";
  std::filesystem::create_directories(dir);
  return dir;
}

std::optional<std::string> FindSharedData(const std::string& relative) {
  std::string root;
  if (const char* env = std::getenv("UNMASK_SHARED_DATA"); env && *env) {
    root = env;
  } else {
    root = SourceDir() + "/../shared/data";
  }
  const std::string path = root + "/" + relative;
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}

std::optional<std::string> FindSmolLM2() {
  std::string cache;
  if (const char* env = std::getenv("UNMASK_CACHE"); env && *env) {
    cache = env;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    cache = std::string(home) + "/.cache/unmask";
  } else {
    return std::nullopt;
  }
  const std::string path = cache + "/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace unmask::testing
