// unmask: command-line entry point. Results go to stdout, progress and errors to stderr.
#include <CLI/CLI.hpp>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/arena/arena_command.h"
#include "cli/bench_command.h"
#include "cli/convert_command.h"
#include "cli/generate_command.h"
#include "cli/hub_commands.h"
#include "cli/inspect_command.h"
#include "cli/plan_command.h"
#include "cli/tokenize_command.h"
#include "common/cli_util.h"
#include "common/interrupt.h"
#include "common/suggest.h"
#include "hub/catalog.h"
#include "hub/pull.h"
#include "hub/resolve.h"
#include "server/serve_command.h"

namespace {

// "unknown flag --tmp (did you mean --temp?)" for the words a command did not expect.
std::string UnexpectedArgsMessage(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : command.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
  }
  const std::vector<std::string> extras = command.remaining();
  for (const std::string& word : extras) {
    const bool number =
        word.size() > 1 && (std::isdigit(static_cast<unsigned char>(word[1])) || word[1] == '.');
    if (word.size() < 2 || word[0] != '-' || number) continue;
    const std::string flag = word.substr(0, word.find('='));
    const std::string close = unmask::tools::ClosestName(flag, names);
    return "unknown flag " + flag + (close.empty() ? "" : " (did you mean " + close + "?)");
  }
  std::string words;
  bool spaces = false;
  for (const std::string& w : extras) {
    words += (words.empty() ? "'" : " '") + w + "'";
    spaces = spaces || w.find(' ') != std::string::npos;
  }
  return "unexpected argument" + std::string(extras.size() == 1 ? " " : "s ") + words +
         (spaces ? " (give the text with -p TEXT)"
                 : " (a text with spaces goes in quotes after -p)");
}

// -m and --draft-model values that name a pulled model (a catalogue name such as
// llada:8b-instruct, or a hub id) become the cached snapshot's path; the catalogue's decoding
// defaults of the (single) model are returned for ApplyCatalogDefaults. serve without --alias
// gets the names as model ids. Returns false after printing an error (a model that is not
// downloaded, a broken $UNMASK_CATALOG).
bool ResolveModelReferences(std::vector<std::string>& args,
                            std::vector<std::pair<std::string, std::string>>* defaults,
                            std::string* defaults_of) {
  if (args.size() < 2) return true;
  static const char* const kModelFlags[] = {"-m", "--model", "--draft-model", "--md"};
  std::optional<unmask::hub::Catalog> catalog;
  std::vector<std::string> aliases;  // per -m, "" for a path
  bool any_resolved = false, any_alias = false;
  int models = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    any_alias = any_alias || args[i] == "--alias" || args[i].rfind("--alias=", 0) == 0;
    std::string flag = args[i], value;
    size_t value_at = i + 1;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
      value_at = i;
    } else if (i + 1 < args.size()) {
      value = args[i + 1];
    }
    bool is_model_flag = false;
    for (const char* f : kModelFlags) is_model_flag = is_model_flag || flag == f;
    if (!is_model_flag || value.empty()) continue;
    const bool main_model = flag == "-m" || flag == "--model";
    if (main_model) ++models;
    std::error_code ec;
    if (std::filesystem::exists(value, ec)) {
      if (main_model) aliases.emplace_back();
      continue;
    }
    if (!catalog) {
      unmask::StatusOr<unmask::hub::Catalog> c = unmask::hub::LoadCatalog();
      if (!c.ok()) {
        unmask::tools::PrintError("unmask", c.status().message());
        return false;
      }
      catalog = std::move(*c);
    }
    if (!unmask::hub::LooksLikeModelReference(value, *catalog)) {
      if (main_model) aliases.emplace_back();
      continue;  // the command says the file is missing
    }
    unmask::StatusOr<unmask::hub::ResolvedModel> r = unmask::hub::ResolveModel(value, *catalog);
    if (!r.ok()) {
      unmask::tools::PrintError("unmask " + args[1], r.status().message());
      return false;
    }
    args[value_at] = value_at == i ? flag + "=" + r->path : r->path;
    any_resolved = true;
    if (main_model) {
      aliases.push_back(value);
      *defaults = r->defaults;
      *defaults_of = value;
    }
  }
  if (models != 1) defaults->clear();
  if (args[1] == "serve" && any_resolved && !any_alias) {
    for (const std::string& a : aliases) {
      args.push_back("--alias");
      args.push_back(a);
    }
  }
  return true;
}

// The catalogue's defaults for the options `command` has and the command line did not give.
// Returns false after printing an error (a default the option refuses).
bool ApplyCatalogDefaults(CLI::App& command,
                          const std::vector<std::pair<std::string, std::string>>& defaults,
                          const std::string& model) {
  std::string applied;
  for (const auto& [key, value] : defaults) {
    CLI::Option* opt = command.get_option_no_throw("--" + key);
    if (opt == nullptr || opt->count() > 0) continue;
    try {
      opt->add_result(value);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      unmask::tools::PrintError(
          "unmask " + command.get_name(),
          "the catalogue's default --" + key + " " + value + " for " + model + ": " + e.what());
      return false;
    }
    applied += " --" + key + " " + value;
  }
  if (!applied.empty()) {
    std::fprintf(stderr, "unmask %s: %s: catalogue defaults%s (flags on the command line win)\n",
                 command.get_name().c_str(), model.c_str(), applied.c_str());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "unmask " UNMASK_VERSION
      ": run diffusion language models (LLaDA, Dream, SDAR, LLaDA 2.x, their MoE versions) and "
      "autoregressive ones (Llama, Qwen, SmolLM2) from GGUF files or Hugging Face folders, serve "
      "them behind the OpenAI API, and measure what each costs. Start with 'unmask chat -m "
      "MODEL', 'unmask generate -p TEXT' or 'unmask serve -m MODEL'; every command has --help"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "unmask " UNMASK_VERSION);

  unmask::tools::GenerateCommand generate;
  CLI::App* gen = app.add_subcommand(
      "generate",
      "generate text; the decoder follows the model: diffusion (llada: the LLaDA reference "
      "algorithm, exact by default, with Fast-dLLM/dInfer caches and commit rules as options; "
      "dream: Dream's reference sampler, or the block decoder when a block-decoder flag such as "
      "--block-length or --cache is given), block diffusion (sdar: SDAR's decoding, "
      "--denoising-steps, --remasking low_confidence_dynamic|low_confidence_static|sequential|"
      "entropy_bounded, --threshold, --eb-threshold; fast_dllm_v2: Fast-dLLM v2's sub-block "
      "decoding, --small-block-size, --threshold) or autoregressive (llama, qwen2, qwen3: KV "
      "cache, sampling chain, speculative decoding). -m takes a GGUF file or a Hugging Face "
      "checkpoint folder\n"
      "examples: unmask generate -p \"Once upon a time\" --visual   (the default diffusion model)\n"
      "          echo \"Tom had a red ball.\" | unmask generate -m ar.gguf -n -1 --temp 0.7\n"
      "          unmask generate -m model.gguf -p \"Once upon a time\" --gen-length 64 "
      "--steps 64 --block-length 32\n"
      "          unmask generate -p \"Once upon a time\" --cache dual --threshold 0.9\n"
      "          unmask generate -m ar.gguf -p \"Hello\" -n 64 --spec lookup\n"
      "          unmask generate -m SDAR-1.7B-Chat/ -p \"Hello\" -n 64 --threshold 0.9");
  generate.AddTo(*gen);

  unmask::tools::GenerateCommand chat;
  chat.chat_mode = true;
  CLI::App* cht = app.add_subcommand(
      "chat",
      "talk with an instruction-tuned model: an interactive multi-turn conversation through the "
      "model's chat template (llama-cli -cnv, ollama run). Type a message and Enter; /exit, "
      "/clear, /help; Ctrl-C stops a reply. The decoding flags are generate's; a reply runs until "
      "EOS or the context (full-canvas diffusion models: -n tokens)\n"
      "example: unmask chat -m SmolLM2-360M-Instruct.gguf --system \"Answer briefly.\"");
  chat.AddTo(*cht);

  unmask::tools::InspectCommand inspect;
  CLI::App* ins = app.add_subcommand(
      "inspect",
      "print a model's (GGUF file or Hugging Face folder) architecture, hyper-parameters, "
      "tokenizer and tensors");
  inspect.AddTo(*ins);

  unmask::tools::BenchCommand bench;
  CLI::App* ben = app.add_subcommand(
      "bench",
      "measure generation speed on a random prompt: diffusion (tokens/s, GFLOP/s, fraction of "
      "the GEMM peak measured in the same run) or AR (decode tokens/s, weight GB/s against the "
      "memory bandwidth measured in the same run)\n"
      "example: unmask bench -m model.gguf --prompt-length 32 --gen-length 128 "
      "--block-length 32 --steps 128 -t 2");
  bench.AddTo(*ben);
  unmask::tools::ArenaCommand arena;
  CLI::App* are = ben->add_subcommand(
      "arena",
      "the diffusion-versus-AR economics on this machine: AR, AR + speculative decoding, exact "
      "and accelerated diffusion at batch sizes 1..64 through the server's engine loop; "
      "tokens/s, TTFT/TPOT/E2E, NFE, tokens per forward, arithmetic intensity, fraction of the "
      "roofline measured in the same run, judge perplexity, tokens per dollar, the planner's "
      "error on this machine; writes arena.json, arena.md and SVG plots (about a minute on 2 "
      "cores with the twins)\n"
      "example: unmask bench arena -t 2 --out build/arena");
  arena.AddTo(*are);

  unmask::tools::PlanCommand plan;
  CLI::App* pln = app.add_subcommand(
      "plan",
      "project diffusion and AR decoding onto a GPU or CPU (roofline model, hardware table in "
      "data/hardware.json): tokens/s, latency, arithmetic intensity, the winning engine per "
      "batch size, the batch where AR catches up, $ per million tokens; every assumption "
      "printed\n"
      "example: unmask plan --hardware h100-sxm,h200 --model llada-8b,llama-3-8b "
      "--prompt-length 128 -n 256");
  plan.AddTo(*pln);

  unmask::tools::TokenizeCommand tokenize;
  CLI::App* tkz = app.add_subcommand(
      "tokenize", "print the token ids of a text with a model's tokenizer (like llama-tokenize)");
  tokenize.AddTo(*tkz);

  unmask::tools::ConvertCommand convert;
  CLI::App* cnv = app.add_subcommand(
      "convert",
      "convert a llama2.c checkpoint and tokenizer, or a Hugging Face checkpoint folder, to GGUF\n"
      "examples: unmask convert --llama2c stories260K.bin --tokenizer tok512.bin "
      "-o stories260K.gguf\n"
      "          unmask convert --hf SDAR-1.7B-Chat/ -o sdar-1.7b.gguf");
  convert.AddTo(*cnv);

  unmask::tools::ServeCommand serve;
  CLI::App* srv = app.add_subcommand(
      "serve",
      "serve models over the OpenAI HTTP API (/v1/completions, /v1/chat/completions, "
      "/v1/models, /health, /metrics, /tokenize, /detokenize, playground at /), diffusion and "
      "AR side by side, model \"auto\" routes per request (docs/serving.md)\n"
      "example: unmask serve -m models/unmask-tinystories-llada.gguf "
      "-m models/unmask-tinystories-ar.gguf --port 8080");
  serve.AddTo(*srv);

  unmask::tools::PullCommand pull;
  CLI::App* pul = app.add_subcommand(
      "pull",
      "download a model from the Hugging Face hub into the local cache (the hub's own layout, "
      "shared with huggingface-cli and transformers), resuming interrupted downloads and "
      "verifying every file's sha256 / git sha1; prints the folder; -m then takes the same name\n"
      "examples: unmask pull llada:8b-instruct        (a catalogue name: unmask list --catalog)\n"
      "          unmask pull JetLM/SDAR-1.7B-Chat\n"
      "          unmask pull bartowski/SmolLM2-135M-Instruct-GGUF:Q8_0\n"
      "          unmask chat -m llada:8b-instruct");
  pull.AddTo(*pul);
  unmask::tools::ListCommand list;
  CLI::App* lst = app.add_subcommand(
      "list", "list the downloaded models (--catalog: the short names unmask pull knows)");
  list.AddTo(*lst);
  unmask::tools::ShowCommand show;
  CLI::App* shw = app.add_subcommand(
      "show",
      "print a model's catalogue entry (source, revision, pinned checksums, decoding defaults) "
      "and where it is in the cache");
  show.AddTo(*shw);
  unmask::tools::RmCommand rm;
  CLI::App* rmv = app.add_subcommand("rm", "delete downloaded models from the cache");
  rm.AddTo(*rmv);

  // An unknown first word is a mistyped command: say so (CLI11 would only say one is required).
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    known = known || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    unmask::tools::PrintError(
        "unmask",
        "unknown command '" + std::string(argv[1]) +
            "' (commands: generate, chat, serve, pull, list, show, rm, inspect, bench, plan, "
            "tokenize, convert; see "
            "'unmask --help')");
    return 2;
  }
  // CLI11 reads "--prompt=" (an empty value after '=') as a flag without a value and takes the
  // next argument as its value; pass it as "--prompt" "" instead, which it reads as empty.
  std::vector<std::string> args(argv, argv + argc);
  // llama-cli's conversation flags on generate mean `unmask chat`.
  if (args.size() > 1 && args[1] == "generate") {
    for (size_t i = 2; i < args.size(); ++i) {
      if (args[i] == "-cnv" || args[i] == "--conversation" || args[i] == "-i" ||
          args[i] == "--interactive") {
        args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
        args[1] = "chat";
        break;
      }
    }
  }  // llama.cpp writes some long flags with one dash (-temp, -ngl): CLI11 would read "-temp" as -t
  // with the value "emp". A one-dash word of letters that names a long flag of the command is
  // that flag; llama.cpp's GPU-offload flags are refused with a word on why.
  if (args.size() > 1) {
    const CLI::App* sub = nullptr;
    for (const CLI::App* s2 : app.get_subcommands({})) {
      if (s2->get_name() == args[1]) sub = s2;
    }
    static const char* const kValueFlags[] = {"-p", "--prompt", "--system", "--system-prompt",
                                              "-f", "--file",   "--stop"};
    for (size_t i = 2; sub != nullptr && i < args.size(); ++i) {
      const std::string& w = args[i];
      const std::string& prev = args[i - 1];
      bool after_value_flag = false;
      for (const char* f : kValueFlags) after_value_flag = after_value_flag || prev == f;
      if (after_value_flag || w.size() < 3 || w[0] != '-' || w[1] == '-' ||
          !std::isalpha(static_cast<unsigned char>(w[1])) ||
          !std::isalpha(static_cast<unsigned char>(w[2]))) {
        continue;
      }
      const std::string name =
          w.substr(1, w.find('=') == std::string::npos ? std::string::npos : w.find('=') - 1);
      if (name == "ngl" || name == "n-gpu-layers" || name == "fa") {
        unmask::tools::PrintError("unmask " + args[1],
                                  "-" + name +
                                      " is llama.cpp's GPU flag; unmask runs on the CPU "
                                      "(there is no GPU backend yet): drop it");
        return 2;
      }
      for (const CLI::Option* opt : sub->get_options()) {
        for (const std::string& l : opt->get_lnames()) {
          if (l == name) args[i] = "-" + w;
        }
      }
    }
  }

  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i].size() > 3 && args[i].rfind("--", 0) == 0 && args[i].back() == '=' &&
        args[i].find('=') == args[i].size() - 1) {
      args[i].pop_back();
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::string());
      ++i;
    }
  }
  std::vector<std::pair<std::string, std::string>> catalog_defaults;
  std::string defaults_of;
  if (!ResolveModelReferences(args, &catalog_defaults, &defaults_of)) return 1;
  std::vector<char*> arg_ptrs;
  for (std::string& a : args) arg_ptrs.push_back(a.data());
  try {
    app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where = "unmask";
    // The deepest parsed command ("unmask bench arena").
    const CLI::App* deepest = &app;
    for (;;) {
      const auto subs = deepest->get_subcommands();
      if (subs.empty()) break;
      deepest = subs.front();
      where += " " + deepest->get_name();
    }
    std::string message = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      // CLI11 lists the unexpected words values first ("0.5 --tmp"): name the flag, and the
      // flag it probably meant.
      message = UnexpectedArgsMessage(*deepest);
    }
    unmask::tools::PrintError(where, message + " (see '" + where + " --help')");
    return 2;
  }
  // SIGINT on a thread of its own, before any other thread starts (common/interrupt.h); serve
  // waits for SIGINT and SIGTERM itself.
  if (!srv->parsed()) unmask::tools::WatchInterrupts();
  for (CLI::App* sub : {gen, cht, ben, srv}) {
    if (sub->parsed() && !(sub == ben && are->parsed()) &&
        !ApplyCatalogDefaults(*sub, catalog_defaults, defaults_of)) {
      return 2;
    }
  }
  try {
    int rc = 2;
    if (gen->parsed()) rc = generate.Run();
    if (cht->parsed()) rc = chat.RunChat();
    if (ins->parsed()) rc = inspect.Run();
    if (ben->parsed()) rc = are->parsed() ? arena.Run() : bench.Run();
    if (pln->parsed()) rc = plan.Run();
    if (tkz->parsed()) rc = tokenize.Run();
    if (cnv->parsed()) rc = convert.Run();
    if (srv->parsed()) rc = serve.Run();
    if (pul->parsed()) rc = pull.Run();
    if (lst->parsed()) rc = list.Run();
    if (shw->parsed()) rc = show.Run();
    if (rmv->parsed()) rc = rm.Run();
    // Results that could not be written (a full disk, a closed pipe) are a failure, not success.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      unmask::tools::PrintError("unmask", "cannot write the output to stdout");
      return rc == 0 ? 1 : rc;
    }
    return rc;
  } catch (const std::bad_alloc&) {
    unmask::tools::PrintError("unmask", "out of memory");
    return 1;
  } catch (const std::exception& e) {  // a bug: still one line, no abort
    unmask::tools::PrintError("unmask", std::string("internal error: ") + e.what());
    return 70;
  }
  return 2;
}
