#include "cli/prompt_source.h"

#include <unistd.h>

#include <cstdio>

#include "common/cli_util.h"

namespace unmask::tools {
namespace {

StatusOr<std::string> ReadStdin() {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const size_t n = std::fread(buf, 1, sizeof(buf), stdin);
    text.append(buf, n);
    if (text.size() > kMaxPromptBytes) {
      return InvalidArgumentError("the prompt on standard input is larger than " +
                                  std::to_string(kMaxPromptBytes >> 20) + " MiB");
    }
    if (n < sizeof(buf)) break;
  }
  if (std::ferror(stdin)) return InvalidArgumentError("cannot read the prompt from standard input");
  return text;
}

void DropTrailingNewline(std::string* s) {
  if (!s->empty() && s->back() == '\n') s->pop_back();
  if (!s->empty() && s->back() == '\r') s->pop_back();
}

}  // namespace

StatusOr<std::optional<std::string>> ReadPrompt(const PromptSource& src) {
  if (!src.file.empty()) {
    UNMASK_ASSIGN_OR_RETURN(std::string text,
                            ReadRegularFile(src.file, kMaxPromptBytes, "prompt file (-f)"));
    DropTrailingNewline(&text);
    return std::optional<std::string>(std::move(text));
  }
  if (src.prompt_given && src.prompt != "-") return std::optional<std::string>(src.prompt);
  if (src.ids_given) return std::optional<std::string>();
  const bool asked = src.prompt_given;  // -p -
  if (!asked && isatty(STDIN_FILENO)) {
    return InvalidArgumentError(
        "no prompt: give one with -p TEXT (-p \"\" starts from BOS), -f FILE, -p - or a pipe "
        "(standard input), or --prompt-ids 1,2,3");
  }
  UNMASK_ASSIGN_OR_RETURN(std::string text, ReadStdin());
  if (text.empty()) {
    return InvalidArgumentError(
        asked ? "-p -: standard input is empty"
              : "no prompt: standard input is empty (give one with -p TEXT, -f FILE or a pipe)");
  }
  DropTrailingNewline(&text);
  return std::optional<std::string>(std::move(text));
}

}  // namespace unmask::tools
