#include "cli/tokenize_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/cli_util.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "model/hf_vocab_keys.h"
#include "tokenizer/tokenizer_hf.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask tokenize";

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// --jsonl: each line of `path` is a JSON string; prints {"ids", "text", "text_special"} per line
// (the ids decoded without and with special tokens).
int RunJsonl(const Tokenizer& tok, const std::string& path, bool add_special, bool parse_special) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return FailWith(kWho, NotFoundError("cannot read " + path));
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    nlohmann::json text;
    try {
      text = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      return FailWith(kWho, InvalidArgumentError(path + ":" + std::to_string(number) +
                                                 ": not a JSON string: " + e.what()));
    }
    if (!text.is_string()) {
      return FailWith(
          kWho, InvalidArgumentError(path + ":" + std::to_string(number) + ": not a JSON string"));
    }
    const std::vector<int32_t> ids =
        tok.Encode(text.get<std::string>(), add_special, parse_special);
    nlohmann::json out;
    out["ids"] = ids;
    out["text"] = tok.Decode(ids, /*skip_special=*/true);
    out["text_special"] = tok.Decode(ids, /*skip_special=*/false);
    std::printf("%s\n", Dump(out).c_str());
  }
  return 0;
}

}  // namespace

void TokenizeCommand::AddTo(CLI::App& app) {
  auto* m = app.add_option("-m,--model", model.model,
                           "GGUF file whose tokenizer is used (default: the default model)")
                ->type_name("PATH");
  model.model_option = m;
  app.add_option("--tokenizer", tokenizer_dir,
                 "use the tokenizer of this Hugging Face checkpoint folder (tokenizer.json, "
                 "tokenizer_config.json, ...) instead of a GGUF model")
      ->excludes(m)
      ->type_name("DIR");
  auto* p = app.add_option("-p,--prompt", prompt, "text to tokenize");
  auto* f = app.add_option("-f,--file", file, "tokenize the whole content of this file")
                ->excludes(p)
                ->type_name("PATH");
  app.add_option("--jsonl", jsonl,
                 "tokenize each line of this file (a JSON string); print one JSON object per "
                 "line: {\"ids\", \"text\" (decoded, special tokens skipped), \"text_special\"}")
      ->excludes(p)
      ->excludes(f)
      ->type_name("PATH");
  app.add_flag("--no-bos", no_bos,
               "do not prepend BOS (even when the model's add_bos_token is set)");
  app.add_flag("--parse-special", parse_special,
               "turn the text of special tokens (e.g. <|endoftext|>) into those tokens");
  app.add_flag("--json", json, "print {\"ids\": [...], \"pieces\": [...]} instead of the ids");
}

int TokenizeCommand::Run() const {
  if (prompt.empty() && file.empty() && jsonl.empty()) {
    return FailWith(
        kWho, InvalidArgumentError("nothing to tokenize: give -p TEXT, -f FILE or --jsonl FILE"));
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
  StatusOr<std::unique_ptr<Tokenizer>> tok = InvalidArgumentError("no tokenizer");
  if (!tokenizer_dir.empty()) {
    tok = LoadHfTokenizer(tokenizer_dir);
  } else {
    auto path = model.Path();
    if (!path.ok()) return FailWith(kWho, path.status());
    if (std::filesystem::is_directory(*path)) {
      tok = LoadHfFolderTokenizer(*path);  // a checkpoint folder: Hugging Face's rules
    } else {
      auto f = gguf::GgufFile::Open(*path);
      if (!f.ok()) return FailWith(kWho, f.status());
      tok = Tokenizer::FromGguf(**f);
    }
  }
  if (!tok.ok()) return FailWith(kWho, tok.status());
  if (!jsonl.empty()) return RunJsonl(**tok, jsonl, !no_bos, parse_special);
  const std::vector<int32_t> ids = (*tok)->Encode(text, !no_bos, parse_special);
  if (json) {
    nlohmann::json j;
    j["ids"] = ids;
    std::vector<std::string> pieces;
    for (int32_t id : ids) pieces.emplace_back((*tok)->TokenText(id));
    j["pieces"] = pieces;
    std::printf("%s\n", Dump(j).c_str());
  } else {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

}  // namespace unmask::tools
