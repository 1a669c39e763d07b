// `unmask inspect MODEL.gguf`: architecture, hyper-parameters, tokenizer, tensors, parameters.
#ifndef UNMASK_TOOLS_CLI_INSPECT_COMMAND_H_
#define UNMASK_TOOLS_CLI_INSPECT_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>

namespace unmask::tools {

struct InspectCommand {
  std::string path;
  bool metadata = false;
  bool no_tensors = false;

  void AddTo(CLI::App& app);
  int Run() const;  // exit code
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_INSPECT_COMMAND_H_
