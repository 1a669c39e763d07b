// `unmask bench`: generation speed, llama-bench style (rows of mean +- stddev over repetitions).
// Diffusion models: the achieved fraction of the GEMM peak measured in the same run, ratios against
// a baseline row measured in the same run. AR models (bench_ar.cc): batch-1 decoding tokens/s and
// the weight bytes read per second against the memory bandwidth measured in the same run.
#ifndef UNMASK_TOOLS_CLI_BENCH_COMMAND_H_
#define UNMASK_TOOLS_CLI_BENCH_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/model_args.h"
#include "engine/engine.h"
#include "model/loader.h"

namespace unmask::tools {

struct BenchCommand {
  ModelArgs model;
  DiffusionArgs diffusion;
  int64_t prompt_length = 32;
  int reps = 3;
  std::vector<std::string> blas_list = {"onednn", "openblas"};
  std::vector<std::string> compute_list;  // empty: {model.compute} (--compute)
  std::string output = "md";
  // tokens/s of an outside reference for the "vs reference" column (0: no column). The bench
  // script passes llama-diffusion-cli's 3.75 tokens/s measured for its setting (LLAMACPP.md).
  double reference_tps = 0;
  CLI::App* cli = nullptr;  // set by AddTo: which flags the user gave

  void AddTo(CLI::App& app);
  int Run() const;
};

// bench_ar.cc: the AR half of Run() (gen_length = tokens generated per run).
// `options`: the flags' decoding options (a diffusion flag is refused by the decoder factory).
int RunArBench(const BenchCommand& cmd, const Engine& engine, size_t index, const std::string& path,
               const std::vector<int32_t>& prompt, const DecodeOptions& options);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_BENCH_COMMAND_H_
