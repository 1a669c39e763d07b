// `unmask serve`: flags and the process around the HTTP server (signals, background model load).
#ifndef UNMASK_TOOLS_SERVER_SERVE_COMMAND_H_
#define UNMASK_TOOLS_SERVER_SERVE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "server/server.h"

namespace unmask::tools {

struct ServeCommand {
  std::vector<std::string> models;
  std::vector<std::string> aliases;
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 0;
  std::string blas = "onednn";
  std::string weights = "auto";
  server::ServerOptions options;
  std::string remasking = "low_confidence";
  std::string cache = "none";
  std::string commit = "fixed";
  double request_timeout_s = 600;
  CLI::Option* commit_option = nullptr;
  CLI::Option* threshold_option = nullptr;
  CLI::Option* factor_option = nullptr;

  void AddTo(CLI::App& app);
  int Run();  // exit code
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_SERVER_SERVE_COMMAND_H_
