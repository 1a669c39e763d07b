// `unmask pull`, `unmask list`, `unmask show`, `unmask rm`: models from the Hugging Face hub by
// catalogue name ("llada:8b-instruct") or hub id ("GSAI-ML/LLaDA-8B-Instruct",
// "org/name-GGUF:Q4_K_M"), kept in the hub's own cache layout (tools/hub/hub_cache.h).
#ifndef UNMASK_TOOLS_CLI_HUB_COMMANDS_H_
#define UNMASK_TOOLS_CLI_HUB_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace unmask::tools {

struct PullCommand {
  std::string name;
  std::string revision;
  std::vector<std::string> include, exclude;
  std::string cache_dir;
  std::string endpoint;
  std::string ca_cert;
  bool verify = false;

  void AddTo(CLI::App& app);
  int Run() const;  // exit code; prints the snapshot folder on stdout
};

struct ListCommand {
  bool catalog = false;
  bool json = false;
  std::string cache_dir;

  void AddTo(CLI::App& app);
  int Run() const;
};

struct ShowCommand {
  std::string name;
  bool json = false;
  std::string cache_dir;

  void AddTo(CLI::App& app);
  int Run() const;
};

struct RmCommand {
  std::vector<std::string> names;
  std::string cache_dir;

  void AddTo(CLI::App& app);
  int Run() const;
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_HUB_COMMANDS_H_
