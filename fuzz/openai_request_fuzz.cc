// The OpenAI request parser on fuzzed bodies, and what the server does next with a request it
// accepts, short of running a model: the depth pre-check, every field's validation, structured
// output (schemas and grammars compiled), tools (their grammar built and compiled), the messages
// rendered with a real chat template of each tool-call format and tokenized, and a reply parsed
// for tool calls as a model's output would be.
// Ollama's /api/generate and /api/chat go the same way after their translation to an OpenAI body
// (the handler's depth check, parse, TranslateOllamaRequest, the load-request check).
// Input: one byte (bit 0: chat, else completions; bit 1: the Ollama route, /api/chat or
// /api/generate; bit 2: the model has a chat template), then the body.
// Seeds: the request bodies of the server tests (scripts/fuzz.sh extracts them).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "fuzz_util.h"
#include "grammar/gbnf_parser.h"
#include "server/api_request.h"
#include "server/ollama_api.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_hf.h"

namespace {

struct Templates {
  std::unique_ptr<unmask::Tokenizer> hermes;   // Qwen2.5's template (renders tools itself)
  std::unique_ptr<unmask::Tokenizer> generic;  // SmolLM2's ChatML (tools described by unmask)
  Templates() {
    using namespace unmask;
    auto load = [](const char* jinja) {
      auto tok = LoadHfTokenizer(fuzz::SourcePath("tests/data/hf/tokenizers/qwen-style"));
      if (!tok.ok()) fuzz::Fail(tok.status().ToString());
      std::string source;
      {
        FILE* f = std::fopen(fuzz::SourcePath(jinja).c_str(), "rb");
        if (f == nullptr) fuzz::Fail(std::string("cannot read ") + jinja);
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) source.append(buf, n);
        std::fclose(f);
      }
      (*tok)->set_chat_template(source);
      return std::move(tok).value();
    };
    hermes = load("tests/data/chat_templates/qwen2_5_instruct.jinja");
    generic = load("tests/data/chat_templates/smollm2_instruct.jinja");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask;
  static const Templates templates;
  if (size < 1) return 0;
  bool chat = (data[0] & 1) != 0;
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 2) != 0) {
    // As Server::HandleOllamaGeneration: depth, JSON, translation; a load request is answered
    // from the translated model name.
    if (server::JsonNestingDepth(body) > server::kMaxJsonDepth) return 0;
    const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(body, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return 0;
    server::OllamaRequest o;
    if (auto e = server::TranslateOllamaRequest(parsed, chat, (data[0] & 4) != 0, &o)) {
      if (e->status < 400 || e->status > 599 || e->message.empty()) {
        fuzz::Fail("an Ollama error without a 4xx/5xx status or a message");
      }
      return 0;
    }
    if (!o.openai.contains("model") || !o.openai["model"].is_string()) {
      fuzz::Fail("a translated Ollama request without a model name");
    }
    if (server::IsOllamaLoadRequest(parsed, chat)) return 0;
    body = o.openai.dump();
    chat = o.openai_chat;
  }
  server::ApiRequest r;
  if (auto e = server::ParseApiRequest(body, chat, &r)) {
    if (e->status < 400 || e->status > 599 || e->message.empty()) {
      fuzz::Fail("an error without a 4xx/5xx status or a message");
    }
    return 0;
  }
  if (r.constraint && r.constraint->grammar == nullptr) fuzz::Fail("a constraint without grammar");
  if (!chat) return 0;
  for (const Tokenizer* tok : {templates.hermes.get(), templates.generic.get()}) {
    const chat::ToolCallFormat format = chat::DetectToolCallFormat(tok->chat_template());
    std::vector<ChatMessage> with_tools;
    std::string tools_json;
    if (r.tools) {
      auto gbnf = chat::ToolCallGrammar(format, *r.tools);
      if (gbnf.ok() && !gbnf->empty()) {
        auto g = grammar::ParseGbnf(*gbnf);
        if (!g.ok()) fuzz::Fail("a tool grammar that does not parse: " + g.status().message());
      }
      if (format == chat::ToolCallFormat::kGeneric) {
        with_tools = chat::GenericToolMessages(r.messages, *r.tools);
      } else {
        tools_json = chat::ToolsJson(*r.tools);
      }
    } else if (format == chat::ToolCallFormat::kGeneric && chat::HasToolHistory(r.messages)) {
      with_tools = chat::ReplayToolHistory(r.messages);
    }
    const std::span<const ChatMessage> messages =
        with_tools.empty() ? std::span<const ChatMessage>(r.messages) : with_tools;
    auto text = tok->ApplyChatTemplate(messages, /*add_generation_prompt=*/true, tools_json);
    if (text.ok()) (void)tok->Encode(*text, true, true);
    if (r.tools && !r.messages.empty()) {
      // The last message's text as if a model had written it.
      const chat::ParsedReply reply =
          chat::ParseToolCalls(format, r.messages.back().content, *r.tools);
      (void)reply;
      (void)chat::StreamableContentLength(format, r.messages.back().content);
    }
  }
  return 0;
}
