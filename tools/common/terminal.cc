#include "common/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace unmask::tools {
namespace {

// Display columns of UTF-8 text without ANSI escape sequences (1 column per code point).
int DisplayColumns(std::string_view s) {
  int cols = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b) {  // skip "ESC [ ... letter"
      while (i < s.size() && !((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))) ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++cols;
  }
  return cols;
}

}  // namespace

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

int TerminalWidth() {
  winsize w{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

std::string StyleDim() { return StderrIsTerminal() ? "\033[2m" : ""; }
std::string StyleBold() { return StderrIsTerminal() ? "\033[1m" : ""; }
std::string StyleReset() { return StderrIsTerminal() ? "\033[0m" : ""; }

void ProgressLine::Update(int64_t done, int64_t total, std::string_view text) {
  if (!StderrIsTerminal()) return;
  const int width = 24;
  const int filled = total > 0 ? static_cast<int>(width * done / total) : 0;
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < width) bar += '>';
  bar.resize(static_cast<size_t>(width), ' ');
  std::string line =
      label_ + " [" + bar + "] " + std::to_string(done) + "/" + std::to_string(total);
  if (!text.empty()) line += " " + std::string(text);
  const int max = TerminalWidth() - 1;
  if (static_cast<int>(line.size()) > max && max > 0) line.resize(static_cast<size_t>(max));
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::Finish() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

void LiveBlock::Draw(const std::string& text) {
  const bool tty = StderrIsTerminal();
  if (tty && lines_ > 0) std::fprintf(stderr, "\033[%dF\033[J", lines_);
  // Count the terminal lines this text occupies (wrapping at the terminal width).
  const int width = TerminalWidth();
  int lines = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const int cols = DisplayColumns(std::string_view(text).substr(start, end - start));
    lines += cols == 0 ? 1 : (cols + width - 1) / width;
    start = end + 1;
  }
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
  lines_ = tty ? lines : 0;
}

}  // namespace unmask::tools
