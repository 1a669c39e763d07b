// `unmask chat` (and `generate -cnv`): an interactive multi-turn conversation, as llama-cli -cnv
// and `ollama run` hold one. The history is kept as messages and rendered through the model's chat
// template every turn (the whole conversation is prefilled again: no KV cache is kept between
// turns). Each reply streams to stdout and ends with the one-line statistics on stderr; Ctrl-C
// stops the reply, not the program (Ctrl-C at the prompt, /exit or end of input leaves).
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/generate_command.h"
#include "cli/prompt_source.h"
#include "common/cli_util.h"
#include "common/decode_args.h"
#include "common/interrupt.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask chat";

constexpr const char* kHelp =
    "commands: /exit or /bye (leave; so do Ctrl-D and Ctrl-C at the prompt), /clear (forget the "
    "conversation, keep the system message), /help. End a line with \\ to continue it on the "
    "next. Ctrl-C during a reply stops the reply.";

// One line of standard input (without its newline), read with read(2) after poll(2) so that the
// wait ends within 100 ms of a Ctrl-C (SIGINT arrives on the interrupt thread, common/interrupt.h,
// and does not interrupt this read). False at the end of input, on a read error, or once
// Interrupted().
bool ReadLine(std::string* line) {
  static std::string pending;
  static bool eof = false;
  for (;;) {
    if (const size_t nl = pending.find('\n'); nl != std::string::npos) {
      line->assign(pending, 0, nl);
      pending.erase(0, nl + 1);
      return true;
    }
    if (eof) {
      if (pending.empty()) return false;
      *line = std::move(pending);  // a last line without a newline
      pending.clear();
      return true;
    }
    if (Interrupted()) return false;
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    if (n > 0) {
      pending.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      eof = true;
    }
  }
}

// One user turn: lines joined while they end with a backslash. False at end of input or when
// Ctrl-C interrupted the read.
bool ReadTurn(bool interactive, std::string* turn) {
  turn->clear();
  for (bool first = true;; first = false) {
    if (interactive) {
      std::fputs(first ? "> " : ". ", stdout);
      std::fflush(stdout);
    }
    std::string line;
    if (!ReadLine(&line)) return !turn->empty() && !Interrupted();  // a continued line at the end
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      *turn += line + "\n";
      continue;
    }
    *turn += line;
    return true;
  }
}

}  // namespace

int GenerateCommand::RunChat() const {
  if (FlagGiven(cli, "--file") && prompt_file.empty()) {
    return FailWith(kWho, InvalidArgumentError("-f/--file: empty path"));
  }
  // The system message: --system, or -p / -f as llama-cli -cnv takes them.
  std::string system_message = system;
  if (system_message.empty() && (FlagGiven(cli, "--prompt") || !prompt_file.empty())) {
    auto text = ReadPrompt({FlagGiven(cli, "--prompt"), prompt, prompt_file, false});
    if (!text.ok()) return FailWith(kWho, text.status());
    system_message = **text;
  }
  bool seed_drawn = false;
  auto options_or = Options(&seed_drawn);
  if (!options_or.ok()) return FailWith(kWho, options_or.status());
  DecodeOptions flags_options = *std::move(options_or);
  auto session_or = Load();
  if (!session_or.ok()) return FailWith(kWho, session_or.status());
  Engine& engine = *session_or->engine;
  const LoadedModel& loaded = engine.model(session_or->index);
  const Tokenizer& tok = *loaded.tokenizer;
  const ModelConfig& config = loaded.model->config();
  if (Status st = constraint.Apply(tok, config.needs_mask_token(), &flags_options); !st.ok()) {
    return FailWith(kWho, st);
  }
  if (tok.chat_template().empty()) {
    return FailWith(kWho, FailedPreconditionError(
                              session_or->path +
                              " has no chat template "
                              "(tokenizer.chat_template): it is a base model, which continues a "
                              "text rather than answering it; use unmask generate -p TEXT"));
  }
  // A reply runs until EOS or the context unless -n says otherwise (a full canvas keeps -n's
  // default: its every step costs the whole canvas).
  const bool length_given = FlagGiven(cli, "--gen-length") || FlagGiven(cli, "--n-predict");
  const DecoderKind kind = SelectDecoder(config, flags_options);
  const bool full_canvas = kind == DecoderKind::kDiffusion || kind == DecoderKind::kDream;

  // The flags are checked once, before the first turn: a decoder for the system message and a
  // short user turn. A flag error ends the command (it would fail every turn); a conversation that
  // outgrows the context is reported per turn.
  {
    std::vector<ChatMessage> probe;
    if (!system_message.empty()) probe.push_back({"system", system_message});
    probe.push_back({"user", "hi"});
    auto ids = EncodePrompt(tok, config.needs_mask_token(), probe, /*use_template=*/true);
    if (!ids.ok()) return FailWith(kWho, ids.status().WithContext("--system"));
    DecodeOptions options = flags_options;
    if (!length_given && !full_canvas) options.max_tokens = -1;
    Status st =
        SettleUntilDone(config, session_or->path, static_cast<int64_t>(ids->size()), &options);
    if (st.ok()) st = engine.MakeDecoder(session_or->index, *ids, options).status();
    if (!st.ok() && st.code() == StatusCode::kOutOfRange) {
      st = OutOfRangeError("the system message alone fills the context: " + st.message());
    }
    if (!st.ok()) return FailWith(kWho, st);
    if (!ar.draft_model.empty() || ar.spec == "draft" || ar.spec == "diffusion") {
      return FailWith(kWho, InvalidArgumentError("unmask chat does not take --spec or "
                                                 "--draft-model (each turn would load the "
                                                 "drafter again); use unmask generate"));
    }
  }
  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) {
    std::fprintf(stderr, "%s: %s (%s). %s\n", kWho, session_or->path.c_str(),
                 config.architecture.c_str(), kHelp);
  }
  if (seed_drawn) PrintDrawnSeed(flags_options);
  std::vector<ChatMessage> history;
  if (!system_message.empty()) history.push_back({"system", system_message});
  CatchInterrupt();
  std::string turn;
  while (ReadTurn(interactive, &turn)) {
    if (turn == "/exit" || turn == "/quit" || turn == "/bye") break;
    if (turn == "/help" || turn == "/?") {
      std::fprintf(stderr, "%s\n", kHelp);
      continue;
    }
    if (turn == "/clear") {
      history.resize(system_message.empty() ? 0 : 1);
      std::fprintf(stderr, "%s: the conversation is cleared\n", kWho);
      continue;
    }
    if (turn.empty()) continue;
    if (turn[0] == '/') {
      std::fprintf(stderr, "%s: unknown command %s (%s)\n", kWho, turn.c_str(), kHelp);
      continue;
    }
    history.push_back({"user", turn});
    auto ids = EncodePrompt(tok, config.needs_mask_token(), history, /*use_template=*/true);
    DecodeOptions options = flags_options;
    if (!length_given && !full_canvas) options.max_tokens = -1;
    Status st = ids.ok() ? SettleUntilDone(config, session_or->path,
                                           static_cast<int64_t>(ids->size()), &options)
                         : ids.status();
    const int64_t ctx =
        ctx_size > 0 ? std::min(ctx_size, config.context_length) : config.context_length;
    if (st.ok() && static_cast<int64_t>(ids->size()) >= ctx) {
      st = OutOfRangeError("the conversation (" + std::to_string(ids->size()) +
                           " tokens) fills the context of " + std::to_string(ctx) +
                           " tokens: /clear starts a new one");
    }
    if (!st.ok()) {
      PrintError(kWho, st.message());
      history.pop_back();
      continue;
    }
    std::string reply;
    GenerateRun run{engine, session_or->index, session_or->path, *ids, true, session_or->load_ms,
                    0,      seed_drawn};
    run.reply = &reply;
    const int rc = config.needs_mask_token() ? RunDiffusionGeneration(*this, run, options)
                                             : RunArGeneration(*this, run, options);
    if (rc != 0 && rc != 130) {  // the error is printed; the conversation goes on without it
      history.pop_back();
      continue;
    }
    history.push_back({"assistant", reply});  // an interrupted reply is kept as far as it went
    ResetInterrupt();
  }
  if (interactive) std::fputs("\n", stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace unmask::tools
