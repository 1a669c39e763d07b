// `unmask convert`: a llama2.c checkpoint (karpathy/llama2.c `.bin` + `tokenizer.bin`) to a GGUF
// file in llama.cpp's `llama` layout (as llama.cpp's convert-llama2c-to-ggml writes it), or a
// Hugging Face checkpoint folder (--hf) to the GGUF view unmask loads it as (model/hf_import.h:
// llama.cpp's names and keys where llama.cpp has the architecture).
#ifndef UNMASK_TOOLS_CLI_CONVERT_COMMAND_H_
#define UNMASK_TOOLS_CLI_CONVERT_COMMAND_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace unmask::tools {

struct ConvertCommand {
  std::string llama2c;         // --llama2c: the checkpoint
  std::string hf;              // --hf: a Hugging Face checkpoint folder
  std::string tokenizer;       // --tokenizer: llama2.c tokenizer.bin
  std::string output;          // -o: the GGUF file to write
  std::string name = "llama";  // --name: general.name
  int64_t context_length = 0;  // --context-length (0: the checkpoint's seq_len)

  void AddTo(CLI::App& app);
  int Run() const;  // exit code

 private:
  int RunHf() const;
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_CONVERT_COMMAND_H_
