// `unmask generate`: text generation with a diffusion model.
#ifndef UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_
#define UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>

#include "common/model_args.h"

namespace unmask::tools {

struct GenerateCommand {
  ModelArgs model;
  DiffusionArgs diffusion;
  std::string prompt;
  std::string prompt_ids;
  bool chat = false;
  bool no_chat = false;
  bool json = false;
  bool visual = false;

  void AddTo(CLI::App& app);
  // Returns the process exit code; errors are printed as one line on stderr.
  int Run() const;
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_GENERATE_COMMAND_H_
