// Runs the `unmask` binary for end-to-end tests.
#ifndef UNMASK_TESTS_E2E_CLI_RUNNER_H_
#define UNMASK_TESTS_E2E_CLI_RUNNER_H_

#include <sys/wait.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

#include "test_util.h"

namespace unmask::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// The repository's TinyStories twin of `kind` ("llada", "ar", "ar-draft").
inline std::string TwinPath(const char* kind) {
  return SourceDir() + "/models/unmask-tinystories-" + kind + ".gguf";
}

// Runs `unmask <args>` (arguments are passed through sh; quote them in the string).
// `env`: assignments put before the command, e.g. "ONEDNN_MAX_CPU_ISA=AVX2". Standard input is
// /dev/null (generate reads a piped prompt) unless `args` redirect it ("... < file").
inline CliResult RunUnmask(const std::string& args, const std::string& env = "") {
  // One file per test process: ctest -j runs several e2e tests at once.
  const std::string err_path = TempDir() + "/cli_stderr." + std::to_string(getpid()) + ".txt";
  const std::string cmd = (env.empty() ? "" : env + " ") + std::string(UNMASK_CLI_PATH) +
                          " </dev/null " + args + " 2>" + err_path;
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* f = std::fopen(err_path.c_str(), "rb")) {
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), n);
    std::fclose(f);
  }
  std::remove(err_path.c_str());
  return r;
}

}  // namespace unmask::testing

#endif  // UNMASK_TESTS_E2E_CLI_RUNNER_H_
