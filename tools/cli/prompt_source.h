// Where `unmask generate` takes its prompt from, as llama.cpp users expect: -p TEXT, -p - (standard
// input), -f FILE, or, with none of them and --prompt-ids absent, piped standard input.
#ifndef UNMASK_TOOLS_CLI_PROMPT_SOURCE_H_
#define UNMASK_TOOLS_CLI_PROMPT_SOURCE_H_

#include <cstddef>
#include <optional>
#include <string>

#include "core/status.h"

namespace unmask::tools {

// The largest prompt read from a file or standard input (bytes): far beyond any context, small
// enough that a mistaken `-f /dev/zero`-like input is refused instead of filling memory.
inline constexpr size_t kMaxPromptBytes = size_t{64} << 20;

struct PromptSource {
  bool prompt_given = false;  // -p was given (possibly "" or "-")
  std::string prompt;         // its value
  std::string file;           // -f ("" = not given)
  bool ids_given = false;     // --prompt-ids was given
};

// The prompt text, or nullopt when the prompt comes as --prompt-ids. A file's or standard input's
// one trailing newline is dropped (an editor's or echo's, as llama.cpp drops it). Errors:
// InvalidArgument when there is no prompt at all (stdin a terminal), or standard input was asked
// for but empty or over kMaxPromptBytes; the file errors of ReadRegularFile.
StatusOr<std::optional<std::string>> ReadPrompt(const PromptSource& src);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_PROMPT_SOURCE_H_
