// `unmask serve`: flags and the process around the HTTP server (signals, background model load).
#ifndef UNMASK_TOOLS_SERVER_SERVE_COMMAND_H_
#define UNMASK_TOOLS_SERVER_SERVE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/model_args.h"
#include "server/server.h"

namespace unmask::tools {

struct ServeCommand {
  std::vector<std::string> models;
  std::vector<std::string> aliases;
  std::string host = "127.0.0.1";
  int port = 8080;
  ModelArgs backend;        // --threads, --blas, --weights (not -m: serve takes several)
  DiffusionArgs diffusion;  // the diffusion decoder's default flags
  server::ServerOptions options;
  double request_timeout_s = 600;
  double drain_timeout_s = 30;
  CLI::App* cli = nullptr;  // set by AddTo: which flags the user gave

  void AddTo(CLI::App& app);
  int Run();  // exit code
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_SERVER_SERVE_COMMAND_H_
