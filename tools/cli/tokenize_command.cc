#include "cli/tokenize_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/cli_util.h"
#include "format/gguf.h"
#include "model/hf_import.h"
#include "tokenizer/tokenizer.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask tokenize";

}  // namespace

void TokenizeCommand::AddTo(CLI::App& app) {
  auto* m = app.add_option("-m,--model", model.model,
                           "GGUF file whose tokenizer is used (default: the default model)")
                ->type_name("PATH");
  model.model_option = m;
  auto* p = app.add_option("-p,--prompt", prompt, "text to tokenize");
  app.add_option("-f,--file", file, "tokenize the whole content of this file")
      ->excludes(p)
      ->type_name("PATH");
  app.add_flag("--no-bos", no_bos,
               "do not prepend BOS (even when the model's add_bos_token is set)");
  app.add_flag("--parse-special", parse_special,
               "turn the text of special tokens (e.g. <|endoftext|>) into those tokens");
  app.add_flag("--json", json, "print {\"ids\": [...], \"pieces\": [...]} instead of the ids");
}

int TokenizeCommand::Run() const {
  if (prompt.empty() && file.empty()) {
    return FailWith(kWho, InvalidArgumentError("nothing to tokenize: give -p TEXT or -f FILE"));
  }
  std::string text = prompt;
  if (!file.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {
      return FailWith(kWho,
                      InvalidArgumentError("-f " + file + " is a directory, not a text file"));
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) return FailWith(kWho, NotFoundError("cannot read " + file));
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  auto path = model.Path();
  if (!path.ok()) return FailWith(kWho, path.status());
  auto f = OpenModelFile(*path);
  if (!f.ok()) return FailWith(kWho, f.status());
  auto tok = Tokenizer::FromGguf(**f);
  if (!tok.ok()) return FailWith(kWho, tok.status());
  const std::vector<int32_t> ids = (*tok)->Encode(text, !no_bos, parse_special);
  if (json) {
    nlohmann::json j;
    j["ids"] = ids;
    std::vector<std::string> pieces;
    for (int32_t id : ids) pieces.emplace_back((*tok)->TokenText(id));
    j["pieces"] = pieces;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

}  // namespace unmask::tools
