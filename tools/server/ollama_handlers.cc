// The HTTP handlers of Ollama's API (server/ollama_api.h): requests translated to the OpenAI ones
// and run through Server::StartGeneration; responses as NDJSON lines or one JSON object, errors as
// Ollama's {"error": "message"}.
#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/tool_calls.h"
#include "common/infill.h"
#include "format/ggml_type.h"
#include "server/ollama_api.h"
#include "server/response_stream.h"
#include "server/server.h"

namespace unmask::server {

using json = nlohmann::ordered_json;

namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);

void SetOllamaJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

std::string Line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// The weight type holding most bytes of the model's matrices ("F16", "Q4_1", ...).
std::string WeightType(const gguf::GgufFile& file) {
  std::map<std::string, size_t> bytes;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.dims.size() < 2) continue;
    const auto info = gguf::GetGgmlTypeInfo(static_cast<uint32_t>(t.type));
    std::string name = info ? std::string(info->name) : "unknown";
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    bytes[name] += t.num_bytes;
  }
  std::string best = "unknown";
  size_t most = 0;
  for (const auto& [name, n] : bytes) {
    if (n > most) best = name, most = n;
  }
  return best;
}

// Bytes of the model file (a folder: every file in it).
uint64_t FileBytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    uint64_t total = 0;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
      if (e.is_regular_file(ec)) total += e.file_size(ec);
    }
    return total;
  }
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

std::string ModifiedAt(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return OllamaTime(std::chrono::system_clock::now());
  return OllamaTime(std::chrono::system_clock::time_point(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

// Ollama's tool_calls: [{"function": {"name", "arguments": {...}}}] (arguments as an object).
json OllamaToolCalls(const std::vector<chat::ParsedToolCall>& calls) {
  json out = json::array();
  for (const chat::ParsedToolCall& c : calls) {
    json args = json::parse(c.arguments, nullptr, false);
    if (args.is_discarded()) args = json::object();
    out.push_back({{"function", {{"name", c.name}, {"arguments", args}}}});
  }
  return out;
}

// The last line (stream) or the whole body: the text (or, with tools, the reply's content and
// calls), done_reason and the statistics.
json FinalLine(const Exchange& x, bool chat, const std::string& text, const StreamEvent& done,
               bool whole) {
  json line = OllamaChunk(x.head.model, chat, whole ? text : std::string());
  if (chat && x.tools) {
    const chat::ParsedReply reply = chat::ParseToolCalls(x.tool_format, text, *x.tools);
    if (whole) line["message"]["content"] = reply.content;
    if (!reply.calls.empty()) line["message"]["tool_calls"] = OllamaToolCalls(reply.calls);
  }
  AddOllamaStats(done.stats, done.finish, &line);
  return line;
}

bool Failed(const StreamEvent& e) {
  return e.finish == FinishReason::kError || e.finish == FinishReason::kAbort;
}

std::string FailMessage(const StreamEvent& e) {
  return e.finish == FinishReason::kAbort ? "the request was aborted: the server is shutting down"
                                          : "generation failed: " + e.status.message();
}

}  // namespace

void Server::HandleOllamaGeneration(const httplib::Request& req, httplib::Response& res,
                                    bool chat) {
  const auto arrival = SteadyClock::now();
  auto fail = [&](const ApiError& e) {
    if (e.status == 429) res.set_header("Retry-After", "1");
    metrics_.Add("http_requests_rejected_total", {std::to_string(e.status)});
    SetOllamaJson(res, e.status, {{"error", e.message}});
  };
  if (JsonNestingDepth(req.body) > kMaxJsonDepth) {
    return fail(MakeError(400, "the request body nests too deeply"));
  }
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) {
    return fail(MakeError(400,
                          "the request body is not valid JSON (or holds a number beyond "
                          "double, or invalid UTF-8)"));
  }
  if (!body.is_object()) return fail(MakeError(400, "the request body must be a JSON object"));
  // The model decides what /api/generate becomes (its chat template).
  bool has_template = false;
  if (auto it = body.find("model"); it != body.end() && it->is_string()) {
    const std::string name = OllamaModelName(it->get<std::string>());
    if (name == "auto") {
      for (const auto& m : models_) has_template |= !m->loaded->tokenizer->chat_template().empty();
    } else if (const ServedModel* m = FindModel(name)) {
      has_template = !m->loaded->tokenizer->chat_template().empty();
    } else if (!name.empty()) {
      return fail(MakeError(
          404, "model '" + it->get<std::string>() + "' not found (loaded: see GET /api/tags)"));
    }
  }
  OllamaRequest o;
  if (auto e = TranslateOllamaRequest(body, chat, has_template, &o)) return fail(*e);
  if (IsOllamaLoadRequest(body, chat)) {
    // Ollama's "load the model" request: the models are loaded already.
    json line = OllamaChunk(o.openai["model"].get<std::string>(), chat, "");
    line["done"] = true;
    line["done_reason"] = "load";
    return SetOllamaJson(res, 200, line);
  }
  ApiRequest r;
  if (auto e = ParseApiRequest(o.openai.dump(), o.openai_chat, &r)) return fail(InOllamaTerms(*e));
  if (req.version == "HTTP/1.0" && r.stream) {
    return fail(
        MakeError(400, "streaming needs HTTP/1.1 (chunked transfer); send \"stream\": false"));
  }
  std::shared_ptr<Exchange> x;
  if (auto e = StartGeneration(r, o.openai_chat, arrival, &x)) return fail(InOllamaTerms(*e));
  x->log_prefix += " ollama";
  // Ollama's /api/generate answers "response" even when it ran as a chat request.
  const bool ollama_chat = chat;
  auto provider = [x, ollama_chat](size_t, httplib::DataSink& sink) {
    RequestStream& s = *x->streams.front();
    std::string text;
    StreamEvent e;
    auto last_space = std::chrono::steady_clock::now();
    int silent = 0;
    for (;;) {
      const bool got = s.Pop(&e, kPoll);
      // Whole responses: a space (JSON allows leading whitespace) after 200 ms without an event
      // and at least every second while events come notices a client that left; NDJSON lines
      // cannot carry a keep-alive, so a stream notices at its next line.
      silent = got ? 0 : silent + 1;
      const auto now = std::chrono::steady_clock::now();
      if (!x->stream_mode && (silent >= 2 || now - last_space >= std::chrono::seconds(1))) {
        silent = 0;
        last_space = now;
        if (!sink.write(" ", 1)) return false;
      }
      if (!got) continue;
      if (e.type == StreamEvent::Type::kCanvas) continue;
      if (e.type == StreamEvent::Type::kText) {
        text += e.text;
        if (x->stream_mode && !(ollama_chat && x->tools)) {
          const std::string line = Line(OllamaChunk(x->head.model, ollama_chat, e.text));
          if (!sink.write(line.data(), line.size())) return false;
        }
        continue;
      }
      break;  // kDone
    }
    std::fprintf(stderr,
                 "unmask serve: %s model=%s finish=%s prompt=%lld completion=%lld nfe=%lld "
                 "queue=%.0fms ttft=%.0fms total=%.0fms\n",
                 x->log_prefix.c_str(), x->head.model.c_str(),
                 std::string(FinishReasonName(e.finish)).c_str(),
                 static_cast<long long>(e.stats.prompt_tokens),
                 static_cast<long long>(e.stats.completion_tokens),
                 static_cast<long long>(e.stats.nfe), e.stats.queue_ms, e.stats.ttft_ms,
                 e.stats.total_ms);
    std::string last;
    if (Failed(e)) {
      last = Line({{"error", FailMessage(e)}});
    } else {
      // With tools the reply is sent whole at the end (its calls parsed out of it).
      last =
          Line(FinalLine(*x, ollama_chat, text, e, !x->stream_mode || (ollama_chat && x->tools)));
    }
    if (!sink.write(last.data(), last.size())) return false;
    sink.done();
    return true;
  };
  auto release = [x](bool) { x->CancelAll(); };
  res.set_chunked_content_provider(
      r.stream ? "application/x-ndjson" : "application/json; charset=utf-8", provider, release);
}

void Server::HandleOllamaModels(httplib::Response& res, bool running) {
  json list = json::array();
  for (const auto& m : models_) {
    const ModelConfig& c = m->loaded->model->config();
    json entry = {{"name", m->id + ":latest"},
                  {"model", m->id + ":latest"},
                  {"modified_at", ModifiedAt(m->path)},
                  {"size", FileBytes(m->path)},
                  {"details", OllamaDetails(c, WeightType(*m->loaded->file))}};
    if (running) {
      // Loaded at start-up for the server's lifetime, on the CPU.
      entry["expires_at"] = "9999-12-31T23:59:59Z";
      entry["size_vram"] = 0;
      entry["context_length"] = m->context_length;
    }
    list.push_back(std::move(entry));
  }
  SetOllamaJson(res, 200, {{"models", list}});
}

void Server::HandleOllamaShow(const httplib::Request& req, httplib::Response& res) {
  if (JsonNestingDepth(req.body) > kMaxJsonDepth) {
    return SetOllamaJson(res, 400, {{"error", "the request body nests too deeply"}});
  }
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return SetOllamaJson(res, 400, {{"error", "the request body must be a JSON object"}});
  }
  // Ollama's ShowRequest: model (name is its older spelling; model wins), verbose, and the
  // deprecated system / template / options, which change nothing here.
  for (const auto& [key, value] : body.items()) {
    if (key != "model" && key != "name" && key != "verbose" && key != "system" &&
        key != "template" && key != "options") {
      return SetOllamaJson(res, 400, {{"error", "unknown field '" + key + "'"}});
    }
  }
  std::string name;
  for (const char* key : {"name", "model"}) {
    if (auto it = body.find(key);
        it != body.end() && it->is_string() && !it->get<std::string>().empty()) {
      name = it->get<std::string>();
    }
  }
  if (name.empty()) {
    return SetOllamaJson(res, 400,
                         {{"error", "'model' is required (a model name, see GET /api/tags)"}});
  }
  const ServedModel* m = FindModel(OllamaModelName(name));
  if (m == nullptr) {
    return SetOllamaJson(res, 404,
                         {{"error", "model '" + name + "' not found (loaded: see GET /api/tags)"}});
  }
  const ModelConfig& c = m->loaded->model->config();
  const Tokenizer& tok = *m->loaded->tokenizer;
  json info = {{"general.architecture", c.architecture},
               {"general.parameter_count", c.NumParameters()},
               {c.architecture + ".context_length", m->context_length},
               {c.architecture + ".embedding_length", c.hidden_size},
               {c.architecture + ".block_count", c.num_layers},
               {c.architecture + ".attention.head_count", c.num_heads},
               {c.architecture + ".attention.head_count_kv", c.num_kv_heads},
               {"tokenizer.ggml.model", std::string(tok.model_name())}};
  if (c.needs_mask_token()) info["tokenizer.ggml.mask_token_id"] = tok.special().mask;
  // Capabilities as Ollama names them: completion; insert (infilling: LLaDA and Dream natively,
  // AR models with FIM tokens); tools (AR models with a chat template: forced calls need
  // grammar-constrained sampling).
  json caps = json::array({"completion"});
  if (c.is_diffusion() || (!c.needs_mask_token() && tools::FindFimTokens(tok).ok())) {
    caps.push_back("insert");
  }
  if (!c.needs_mask_token() && !tok.chat_template().empty()) caps.push_back("tools");
  std::string parameters;
  const SamplingDefaults& d = m->loaded->sampling_defaults;
  auto param = [&](const char* key, const std::string& v) {
    parameters += std::string(key) + " " + v + "\n";
  };
  if (d.temperature) param("temperature", std::to_string(*d.temperature));
  if (d.top_k) param("top_k", std::to_string(*d.top_k));
  if (d.top_p) param("top_p", std::to_string(*d.top_p));
  if (d.min_p) param("min_p", std::to_string(*d.min_p));
  if (d.repeat_penalty) param("repeat_penalty", std::to_string(*d.repeat_penalty));
  if (d.repeat_last_n) param("repeat_last_n", std::to_string(*d.repeat_last_n));
  SetOllamaJson(res, 200,
                {{"modelfile", "# unmask serve -m " + m->path + "\nFROM " + m->path + "\n"},
                 {"parameters", parameters},
                 {"template", tok.chat_template()},
                 {"details", OllamaDetails(c, WeightType(*m->loaded->file))},
                 {"model_info", info},
                 {"capabilities", caps},
                 {"modified_at", ModifiedAt(m->path)}});
}

}  // namespace unmask::server
