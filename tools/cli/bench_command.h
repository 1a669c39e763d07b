// `unmask bench`: diffusion generation speed, llama-bench style (rows of mean +- stddev over
// repetitions), with the achieved fraction of the GEMM peak measured in the same run and ratios
// against a baseline row measured in the same run.
#ifndef UNMASK_TOOLS_CLI_BENCH_COMMAND_H_
#define UNMASK_TOOLS_CLI_BENCH_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/model_args.h"

namespace unmask::tools {

struct BenchCommand {
  ModelArgs model;
  DiffusionArgs diffusion;
  int64_t prompt_length = 32;
  int reps = 3;
  std::vector<std::string> blas_list = {"onednn", "openblas"};
  std::string output = "md";
  // tokens/s of an outside reference for the "vs reference" column (0: no column). The bench
  // script passes llama-diffusion-cli's 3.75 tokens/s measured for its setting (LLAMACPP.md).
  double reference_tps = 0;

  void AddTo(CLI::App& app);
  int Run() const;
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_BENCH_COMMAND_H_
