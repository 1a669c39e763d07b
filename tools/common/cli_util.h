// Shared pieces of the command-line tools: one-line error output and flag validators.
#ifndef UNMASK_TOOLS_COMMON_CLI_UTIL_H_
#define UNMASK_TOOLS_COMMON_CLI_UTIL_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace unmask::tools {

// `text` with control characters escaped (\n, \t, \x1b, ...), so that a message quoting a file's
// strings or the user's input stays one line and cannot drive the terminal.
std::string EscapeControl(std::string_view text);

// Prints "<who>: error: <message>" as one line on stderr (message escaped).
void PrintError(std::string_view who, std::string_view message);
// Prints "unmask: warning: <message>" as one line on stderr (message escaped).
void PrintWarning(std::string_view message);
// PrintError(who, status.message()) and returns `exit_code`: the one error exit of the commands.
int FailWith(std::string_view who, const Status& status, int exit_code = 1);

// The contents of the regular file at `path`, for files a flag names (prompt lists, tables).
// Errors: NotFound when it cannot be opened; InvalidArgument for something other than a regular
// file (a directory, /dev/zero, a pipe) or one over `max_bytes`. `what` names it in messages.
StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes,
                                      std::string_view what);

// Flag validators with short messages (CLI11's own ones print DBL_MAX in full, and its integer
// conversion silently saturates out-of-range values).
// An integer in [lo, hi].
CLI::Validator IntegerIn(int64_t lo, int64_t hi);
// Any unsigned 64-bit integer (seeds).
CLI::Validator Unsigned64();
// A finite number >= lo.
CLI::Validator FiniteAtLeast(double lo);
// A finite number in [lo, hi].
CLI::Validator FiniteIn(double lo, double hi);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_CLI_UTIL_H_
