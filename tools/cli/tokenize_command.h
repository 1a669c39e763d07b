// `unmask tokenize`: text -> token ids with a model's tokenizer (like llama.cpp's llama-tokenize),
// or with the tokenizer of a Hugging Face checkpoint folder (--tokenizer DIR).
#ifndef UNMASK_TOOLS_CLI_TOKENIZE_COMMAND_H_
#define UNMASK_TOOLS_CLI_TOKENIZE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>

#include "common/model_args.h"

namespace unmask::tools {

struct TokenizeCommand {
  ModelArgs model;
  std::string tokenizer_dir;  // --tokenizer: a Hugging Face folder instead of -m
  std::string prompt;
  std::string file;
  std::string jsonl;  // --jsonl: one JSON string per line in, one JSON object per line out
  bool no_bos = false;
  bool parse_special = false;
  bool json = false;

  void AddTo(CLI::App& app);
  int Run() const;  // exit code
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_TOKENIZE_COMMAND_H_
