#include "common/cli_util.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

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

StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes,
                                      std::string_view what) {
  const std::string w(what);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFoundError(path + ": no such " + w);
  if (!std::filesystem::is_regular_file(path, ec)) {
    return InvalidArgumentError(path + ": the " + w + " must be a regular file");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return NotFoundError(path + ": cannot read the " + w + " (" + ec.message() + ")");
  if (size > max_bytes) {
    return InvalidArgumentError(path + ": the " + w + " is larger than " +
                                std::to_string(max_bytes >> 20) + " MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the " + w);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

void PrintError(std::string_view who, std::string_view message) {
  std::fprintf(stderr, "%s: error: %s\n", std::string(who).c_str(), EscapeControl(message).c_str());
}

void PrintWarning(std::string_view message) {
  std::fprintf(stderr, "unmask: warning: %s\n", EscapeControl(message).c_str());
}

int FailWith(std::string_view who, const Status& status, int exit_code) {
  PrintError(who, status.message());
  return exit_code;
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
  return FiniteIn(lo, std::numeric_limits<double>::infinity());
}

CLI::Validator FiniteIn(double lo, double hi) {
  char range[96];
  if (std::isinf(hi)) {
    std::snprintf(range, sizeof(range), ">= %g", lo);
  } else {
    std::snprintf(range, sizeof(range), "in [%g, %g]", lo, hi);
  }
  return CLI::Validator(
      [lo, hi, range = std::string(range)](std::string& value) -> std::string {
        const std::string v = Trimmed(value);
        char* end = nullptr;
        const double x = v.empty() ? 0.0 : std::strtod(v.c_str(), &end);
        if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || x < lo || x > hi) {
          return "'" + EscapeControl(value) + "' is not a finite number " + range;
        }
        value = v;
        return "";
      },
      "NUMBER " + std::string(range));
}

}  // namespace unmask::tools
