// Helpers shared by the libFuzzer harnesses (fuzz/*_fuzz.cc): splitting one input into parts, the
// project's files the harnesses load once, and a scratch folder for parsers that read folders.
// Harnesses never abort on a parse error (that is the expected outcome of most inputs); they abort
// only when an invariant the parser promises is broken, so libFuzzer records the input as a crash.
#ifndef UNMASK_FUZZ_FUZZ_UTIL_H_
#define UNMASK_FUZZ_FUZZ_UTIL_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace unmask::fuzz {

// A path inside the source tree (the harnesses read the project's own models and templates).
inline std::string SourcePath(const std::string& relative) {
  return std::string(UNMASK_SOURCE_DIR) + "/" + relative;
}

// Splits `data` at NUL bytes into at most `max_parts` parts (the last part keeps any later NULs).
inline std::vector<std::string_view> SplitNul(const uint8_t* data, size_t size, size_t max_parts) {
  std::vector<std::string_view> parts;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (parts.size() + 1 < max_parts) {
    const size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) break;
    parts.push_back(rest.substr(0, nul));
    rest.remove_prefix(nul + 1);
  }
  parts.push_back(rest);
  return parts;
}

// Aborts with a message: an invariant of the code under test does not hold for this input.
[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

// A fresh scratch folder for this process (under $TMPDIR, else /tmp), removed by nobody: the
// fuzz script runs the harness in a throw-away directory.
std::string ScratchDir(const std::string& tag);

// Writes `bytes` to `path` (whole file); aborts when it cannot (the harness cannot run at all).
void WriteFile(const std::string& path, std::string_view bytes);

}  // namespace unmask::fuzz

#endif  // UNMASK_FUZZ_FUZZ_UTIL_H_
