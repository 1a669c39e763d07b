#include "common/cli_util.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace unmask::tools {
namespace {

std::string Trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

}  // namespace

std::string EscapeControl(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void PrintError(std::string_view who, std::string_view message) {
  std::fprintf(stderr, "%s: error: %s\n", std::string(who).c_str(), EscapeControl(message).c_str());
}

CLI::Validator IntegerIn(int64_t lo, int64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& value) -> std::string {
        const std::string v = Trimmed(value);
        int64_t x = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (v.empty() || ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi) {
          return "'" + EscapeControl(value) + "' is not an integer in " + range;
        }
        value = v;
        return "";
      },
      "INT in " + range);
}

CLI::Validator Unsigned64() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const std::string v = Trimmed(value);
        uint64_t x = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
          return "'" + EscapeControl(value) + "' is not an integer in [0, 18446744073709551615]";
        }
        value = v;
        return "";
      },
      "UINT64");
}

CLI::Validator FiniteAtLeast(double lo) {
  char desc[64];
  std::snprintf(desc, sizeof(desc), "NUMBER >= %g", lo);
  return CLI::Validator(
      [lo](std::string& value) -> std::string {
        const std::string v = Trimmed(value);
        char* end = nullptr;
        const double x = v.empty() ? 0.0 : std::strtod(v.c_str(), &end);
        if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || x < lo) {
          char msg[64];
          std::snprintf(msg, sizeof(msg), "is not a finite number >= %g", lo);
          return "'" + EscapeControl(value) + "' " + msg;
        }
        value = v;
        return "";
      },
      desc);
}

}  // namespace unmask::tools
