// `unmask tokenize`: text -> token ids with a model's tokenizer (like llama.cpp's llama-tokenize).
#ifndef UNMASK_TOOLS_CLI_TOKENIZE_COMMAND_H_
#define UNMASK_TOOLS_CLI_TOKENIZE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>

#include "common/model_args.h"

namespace unmask::tools {

struct TokenizeCommand {
  ModelArgs model;
  std::string prompt;
  std::string file;
  bool no_bos = false;
  bool parse_special = false;
  bool json = false;

  void AddTo(CLI::App& app);
  int Run() const;  // exit code
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_TOKENIZE_COMMAND_H_
