// Terminal output for the tools: progress lines and the live diffusion canvas (--visual).
// Everything here writes to stderr; stdout is reserved for results.
#ifndef UNMASK_TOOLS_COMMON_TERMINAL_H_
#define UNMASK_TOOLS_COMMON_TERMINAL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace unmask::tools {

bool StderrIsTerminal();
// Terminal width in columns (80 when unknown).
int TerminalWidth();

// A one-line progress indicator redrawn in place on a terminal: "label [=====>    ] 37/128 text".
// On a non-terminal it prints nothing until Finish (keeps logs clean).
class ProgressLine {
 public:
  explicit ProgressLine(std::string label) : label_(std::move(label)) {}
  void Update(int64_t done, int64_t total, std::string_view text = {});
  // Clears the line (terminal) so the next output starts on a clean line.
  void Finish();

 private:
  std::string label_;
  bool drawn_ = false;
};

// Redraws a block of text in place (moves the cursor up over the previous drawing). Used by
// --visual to show the canvas as it denoises.
class LiveBlock {
 public:
  void Draw(const std::string& text);  // text may contain ANSI styles and newlines

 private:
  int lines_ = 0;
};

// ANSI styles (empty strings when stderr is not a terminal).
std::string StyleDim();
std::string StyleBold();
std::string StyleReset();

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_TERMINAL_H_
