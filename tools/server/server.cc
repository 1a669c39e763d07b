#include "server/server.h"

#include "common/model_args.h"

#include <httplib.h>

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/api_response.h"
#include "server/draft_files.h"

namespace unmask::server {

using nlohmann::json;

namespace {

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The listening socket's accept queue (see Bind).
constexpr int kListenBacklog = 4096;

void SetJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

}  // namespace

namespace {

GateOptions GateOf(const ServerOptions& o) {
  GateOptions g;
  g.workers =
      o.http_threads > 0
          ? o.http_threads
          : static_cast<int>(o.scheduler.max_queue +
                             static_cast<int64_t>(std::max<size_t>(o.model_paths.size(), 1)) *
                                 o.scheduler.max_batch +
                             8);
  g.max_body_bytes = o.max_body_bytes;
  g.request_timeout_s = 10;
  g.keep_alive_timeout_s = 5;
  g.write_timeout_s = 30;
  return g;
}

}  // namespace

Server::Server(ServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<GatedServer>(GateOf(options_))) {
  metrics_.DeclareCounter("router_decisions_total",
                          "model=auto requests by chosen model and policy branch",
                          {"choice", "reason"});
  metrics_.DeclareCounter("http_requests_rejected_total",
                          "Requests refused before reaching the engine, by HTTP status",
                          {"status"});
  metrics_.DeclareGauge("model_info", "Loaded models (value 1)",
                        {"model", "engine", "architecture", "compute"});
  EngineOptions eo;
  eo.scheduler = options_.scheduler;
  engine_ = std::make_unique<Engine>(eo, &metrics_, options_.backend);
  InstallRoutes();
}

Server::~Server() {
  Stop();
  engine_->Shutdown();
}

StatusOr<int> Server::Bind() {
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(10, 0);
  http_->set_write_timeout(30, 0);
  http_->set_keep_alive_timeout(5);
  // cpp-httplib's default socket options include SO_REUSEPORT, which lets a second server share a
  // port that is in use (the kernel then splits connections between them): only SO_REUSEADDR.
  // The callback runs on the listening socket before bind: it is kept to set the backlog below.
  socket_t listen_sock = INVALID_SOCKET;
  http_->set_socket_options([&listen_sock](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
    listen_sock = sock;
  });
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
    if (port < 0) port = -1;
  } else if (!http_->bind_to_port(options_.host, port)) {
    port = -1;
  }
  if (port < 0) {
    return FailedPreconditionError("cannot listen on " + options_.host + ":" +
                                   std::to_string(options_.port) +
                                   " (in use, or not an address of this machine?)");
  }
  // Debian's cpp-httplib is a compiled library (libcpp-httplib.so) that listens with a backlog of
  // 5, whatever CPPHTTPLIB_LISTEN_BACKLOG says here. A burst of connects (2,000 clients at once, a
  // load balancer opening its pool) overflows that queue; the kernel drops the SYNs and a client
  // such as a /health probe waits for its SYN retransmission, 1 s later. listen() again on a
  // listening socket sets its backlog (Linux caps it at net.core.somaxconn, 4096 by default).
  if (listen_sock != INVALID_SOCKET && ::listen(listen_sock, kListenBacklog) != 0) {
    std::fprintf(stderr, "unmask serve: warning: cannot set the listen backlog to %d: %s\n",
                 kListenBacklog, std::strerror(errno));
  }
  return port;
}

Status Server::LoadModels(const std::function<void(size_t, size_t, const std::string&)>& progress) {
  std::vector<std::unique_ptr<ServedModel>> models;
  for (size_t i = 0; i < options_.model_paths.size(); ++i) {
    auto m = std::make_unique<ServedModel>();
    m->path = options_.model_paths[i];
    // The file's stem, or a checkpoint folder's name ("SDAR-1.7B-Chat/" -> SDAR-1.7B-Chat).
    std::string trimmed = m->path;
    while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
    const std::filesystem::path p(trimmed);
    m->id = i < options_.aliases.size() && !options_.aliases[i].empty()
                ? options_.aliases[i]
                : (std::filesystem::is_directory(p) ? p.filename() : p.stem()).string();
    for (const auto& other : models) {
      if (other->id == m->id) {
        return InvalidArgumentError("two models have the id '" + m->id +
                                    "'; give one another with --alias");
      }
    }
    if (m->id == "auto") return InvalidArgumentError("'auto' is reserved for the router");
    if (progress) progress(i, options_.model_paths.size(), m->id);
    auto index = engine_->LoadModel(m->id, m->path, options_.weight_mode);
    if (!index.ok()) return index.status();
    m->index = *index;
    m->loaded = &engine_->model(m->index);
    // Before the model is served: nothing reads the tokenizer yet.
    UNMASK_RETURN_IF_ERROR(
        tools::ApplyChatTemplateFile(options_.chat_template_file, m->loaded->tokenizer.get()));
    const int64_t model_context = m->loaded->model->config().context_length;
    m->context_length = model_context;
    if (options_.context_length > 0) {
      m->context_length = std::min(options_.context_length, model_context);
      if (options_.context_length > model_context) {
        std::fprintf(stderr,
                     "unmask serve: warning: -c %lld is larger than the context of %s (%lld "
                     "tokens); its requests get %lld (unmask does not extend a model's context)\n",
                     static_cast<long long>(options_.context_length), m->id.c_str(),
                     static_cast<long long>(model_context), static_cast<long long>(model_context));
      }
    }
    metrics_.Set("model_info",
                 {m->id, m->engine_name(), m->loaded->model->config().architecture,
                  std::string(ComputeTypeName(m->loaded->model->compute()))},
                 1);
    models.push_back(std::move(m));
  }
  UNMASK_RETURN_IF_ERROR(LoadDraftFiles(options_.draft_heads, models));
  if (Status s = engine_->StartServing(); !s.ok()) return s;
  models_ = std::move(models);
  ready_.store(true);
  return Status::Ok();
}

void Server::Serve() { http_->listen_after_bind(); }

int64_t Server::Drain(double timeout_s) {
  draining_.store(true);
  std::fprintf(stderr, "unmask serve: draining (%lld response%s open, up to %.0f s)\n",
               static_cast<long long>(open_responses_.load()),
               open_responses_.load() == 1 ? "" : "s", timeout_s);
  const auto deadline =
      SteadyClock::now() +
      std::chrono::microseconds(static_cast<int64_t>(std::max(timeout_s, 0.0) * 1e6));
  const auto grace_end =
      std::min(deadline, SteadyClock::now() + std::chrono::microseconds(static_cast<int64_t>(
                                                  std::max(options_.drain_grace_s, 0.0) * 1e6)));
  while ((open_responses_.load() > 0 || SteadyClock::now() < grace_end) &&
         SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return open_responses_.load();
}

void Server::Stop() {
  // Requests end first (as aborted: their streams get a last event and close), then the listener
  // and the connection threads.
  engine_->Shutdown();
  if (http_) {
    http_->stop();
    http_->ShutdownGate();
  }
}

const ServedModel* Server::FindModel(const std::string& id) const {
  for (const auto& m : models_) {
    if (m->id == id) return m.get();
  }
  return nullptr;
}

void Server::SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 429) res.set_header("Retry-After", "1");
  res.set_content(ErrorBody(e), "application/json");
  if (e.status != 200) metrics_.Add("http_requests_rejected_total", {std::to_string(e.status)});
}

void Server::InstallRoutes() {
  httplib::Server& s = *http_;
  // API keys (llama-server's --api-key, OpenAI's Bearer scheme), compared in constant time.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty() || req.path == "/health" || req.path == "/v1/health" ||
        req.path == "/") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    std::string header = req.get_header_value("Authorization");
    // The scheme is case-insensitive (RFC 7235); the key is compared exactly.
    if (header.size() >= 7 &&
        (header.compare(0, 7, "bearer ") == 0 || header.compare(0, 7, "BEARER ") == 0)) {
      header.replace(0, 7, "Bearer ");
    }
    const std::string expected = "Bearer " + options_.api_key;
    unsigned char diff = header.size() == expected.size() ? 0 : 1;
    for (size_t i = 0; i < header.size() && i < expected.size(); ++i) {
      diff |= static_cast<unsigned char>(header[i] ^ expected[i]);
    }
    if (diff == 0) return httplib::Server::HandlerResponse::Unhandled;
    ApiError e = MakeError(401,
                           header.empty() ? "no API key: send the header 'Authorization: Bearer "
                                            "<key>' (the server was started with --api-key)"
                                          : "invalid API key",
                           "invalid_request_error");
    e.code = "invalid_api_key";
    res.set_header("WWW-Authenticate", "Bearer");
    SendError(res, e);
    return httplib::Server::HandlerResponse::Handled;
  });
  auto health = [this](const httplib::Request&, httplib::Response& res) {
    if (draining()) {
      SetJson(res, 503, {{"status", "draining"}});
    } else if (!ready()) {
      SetJson(res, 503, {{"status", "loading"}});
    } else {
      SetJson(res, 200, {{"status", "ok"}});
    }
  };
  s.Get("/health", health);
  s.Get("/v1/health", health);
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.Render("unmask:"), "text/plain; version=0.0.4");
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kPlaygroundHtml, "text/html; charset=utf-8");
  });
  auto guard = [this](httplib::Response& res) {
    if (ready() && !draining()) return true;
    res.set_header("Retry-After", "1");
    SendError(res, MakeError(503, draining() ? "the server is shutting down (draining); retry "
                                               "on another replica"
                                             : "the models are still loading; retry shortly"));
    return false;
  };
  s.Get("/v1/models", [this, guard](const httplib::Request&, httplib::Response& res) {
    if (guard(res)) HandleModels(res);
  });
  s.Get(R"(/v1/models/(.+))", [this, guard](const httplib::Request& req, httplib::Response& res) {
    if (!guard(res)) return;
    const std::string id = req.matches[1];
    json all;
    HandleModels(res);
    all = json::parse(res.body);
    for (const json& m : all["data"]) {
      if (m["id"] == id) return SetJson(res, 200, m);
    }
    SendError(res, MakeError(404, "the model '" + id + "' does not exist", "", "model"));
  });
  s.Post("/v1/completions", [this, guard](const httplib::Request& req, httplib::Response& res) {
    if (guard(res)) HandleGeneration(req, res, false);
  });
  s.Post("/v1/chat/completions",
         [this, guard](const httplib::Request& req, httplib::Response& res) {
           if (guard(res)) HandleGeneration(req, res, true);
         });
  s.Post("/tokenize", [this, guard](const httplib::Request& req, httplib::Response& res) {
    if (guard(res)) HandleTokenize(req, res, false);
  });
  // Ollama's API (ollama_api.h).
  s.Post("/api/generate", [this, guard](const httplib::Request& req, httplib::Response& res) {
    if (guard(res)) HandleOllamaGeneration(req, res, false);
  });
  s.Post("/api/chat", [this, guard](const httplib::Request& req, httplib::Response& res) {
    if (guard(res)) HandleOllamaGeneration(req, res, true);
  });
  s.Get("/api/tags", [this, guard](const httplib::Request&, httplib::Response& res) {
    if (guard(res)) HandleOllamaModels(res, false);
  });
  s.Get("/api/ps", [this, guard](const httplib::Request&, httplib::Response& res) {
    if (guard(res)) HandleOllamaModels(res, true);
  });
  s.Post("/api/show", [this, guard](const httplib::Request& req, httplib::Response& res) {
    if (guard(res)) HandleOllamaShow(req, res);
  });
  s.Get("/api/version", [](const httplib::Request&, httplib::Response& res) {
    SetJson(res, 200, {{"version", UNMASK_VERSION}});
  });
  s.Post("/detokenize", [this, guard](const httplib::Request& req, httplib::Response& res) {
    if (guard(res)) HandleTokenize(req, res, true);
  });
  // Errors httplib produces itself (unknown path, body too large, bad request line) get an
  // OpenAI error body too.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string msg = "HTTP " + std::to_string(res.status);
    if (res.status == 404) {
      msg = "no route for " + req.method + " " + req.path;
      if (req.path == "/completions" || req.path == "/chat/completions" || req.path == "/models") {
        msg += " (the OpenAI API is under /v1: /v1" + req.path + ")";
      }
    }
    if (res.status == 413) {
      msg = "the request body is too large";
      if (req.get_header_value("Content-Type") == "application/x-www-form-urlencoded") {
        msg +=
            " for Content-Type application/x-www-form-urlencoded (curl -d's default; the HTTP "
            "library caps form bodies at 8 KiB): send Content-Type: application/json";
      }
    }
    if (res.status == 405) msg = "method not allowed";
    if (req.path.rfind("/api/", 0) == 0) {
      // Ollama's error shape on its routes (its clients print the string).
      res.set_content(json{{"error", msg}}.dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
      return;
    }
    res.set_content(ErrorBody(MakeError(res.status, msg)), "application/json");
  });
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        std::fprintf(stderr, "unmask serve: %s\n", what.c_str());
        res.status = 500;
        res.set_content(ErrorBody(MakeError(500, what)), "application/json");
      });
}

namespace {

// The model file's recommended sampling (request field names; {} when it has none).
json SamplingDefaultsJson(const SamplingDefaults& d) {
  json j = json::object();
  if (d.temperature) j["temperature"] = *d.temperature;
  if (d.top_k) j["top_k"] = *d.top_k;
  if (d.top_p) j["top_p"] = *d.top_p;
  if (d.min_p) j["min_p"] = *d.min_p;
  if (d.repeat_penalty) j["repeat_penalty"] = *d.repeat_penalty;
  if (d.repeat_last_n) j["repeat_last_n"] = *d.repeat_last_n;
  return j;
}

}  // namespace

void Server::HandleModels(httplib::Response& res) {
  json data = json::array();
  const int64_t created = UnixSeconds();
  for (const auto& m : models_) {
    const ModelConfig& c = m->loaded->model->config();
    json speculative = json::array();  // the request's "speculative" values this model takes
    if (!m->diffusion()) {
      speculative = {"none", "lookup"};
      if (m->medusa_heads != nullptr) speculative.push_back("medusa");
      if (m->eagle_head != nullptr) speculative.push_back("eagle");
    }
    data.push_back({{"id", m->id},
                    {"object", "model"},
                    {"created", created},
                    {"owned_by", "unmask"},
                    {"max_model_len", m->context_length},
                    {"x_unmask",
                     {{"engine", m->engine_name()},
                      {"architecture", c.architecture},
                      {"max_model_len", m->context_length},
                      {"compute", std::string(ComputeTypeName(m->loaded->model->compute()))},
                      {"chat_template", !m->loaded->tokenizer->chat_template().empty()},
                      {"sampling_defaults", SamplingDefaultsJson(m->loaded->sampling_defaults)},
                      {"speculative", speculative},
                      {"path", m->path}}}});
  }
  data.push_back({{"id", "auto"},
                  {"object", "model"},
                  {"created", created},
                  {"owned_by", "unmask"},
                  {"x_unmask", {{"engine", "router"}}}});
  SetJson(res, 200, {{"object", "list"}, {"data", data}});
}

void Server::HandleTokenize(const httplib::Request& req, httplib::Response& res, bool detokenize) {
  if (JsonNestingDepth(req.body) > kMaxJsonDepth) {
    return SendError(res, MakeError(400, "the request body nests too deeply"));
  }
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return SendError(res, MakeError(400, "the request body must be a JSON object"));
  }
  const ServedModel* m = nullptr;
  if (j.contains("model") && j["model"].is_string() && j["model"] != "auto") {
    m = FindModel(j["model"].get<std::string>());
    if (m == nullptr) {
      return SendError(res, MakeError(404,
                                      "unknown model '" + j["model"].get<std::string>() +
                                          "' (see GET /v1/models)",
                                      "", "model"));
    }
  } else if (j.contains("model") && !j["model"].is_string()) {
    return SendError(res, MakeError(400, "'model' must be a string", "", "model"));
  } else if (models_.size() == 1) {
    m = models_.front().get();
  } else {
    return SendError(res, MakeError(400,
                                    "'model' is required: this server has several (see GET "
                                    "/v1/models)",
                                    "", "model"));
  }
  if (j.contains("prompt") && j.contains("messages")) {
    return SendError(res, MakeError(400, "give 'prompt' or 'messages', not both", "", "messages"));
  }
  const Tokenizer& tok = *m->loaded->tokenizer;
  if (detokenize) {
    if (!j.contains("tokens") || !j["tokens"].is_array()) {
      return SendError(res, MakeError(400, "'tokens' must be an array of token ids", "", "tokens"));
    }
    std::vector<int32_t> ids;
    for (const json& t : j["tokens"]) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok.vocab_size()) {
        return SendError(
            res, MakeError(
                     400, "'tokens' must hold ids in [0, " + std::to_string(tok.vocab_size()) + ")",
                     "", "tokens"));
      }
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return SetJson(res, 200, {{"prompt", tok.Decode(ids, /*skip_special=*/false)}});
  }
  // Tokenize: {"prompt": text} or {"messages": [...]} (rendered as for chat completions).
  ApiRequest r;
  json as_request = j;
  as_request["model"] = m->id;
  as_request.erase("add_special");  // /tokenize's own field (llama-server's)
  const bool chat = j.contains("messages");
  if (auto e = ParseApiRequest(as_request.dump(), chat, &r)) return SendError(res, *e);
  if (j.contains("add_special") && !j["add_special"].is_boolean()) {
    return SendError(res, MakeError(400, "'add_special' must be a boolean", "", "add_special"));
  }
  if (j.contains("add_special") && !j["add_special"].get<bool>()) {
    if (!chat && !r.prompt_is_ids) {
      const auto ids = tok.Encode(r.prompt_text, false, false);
      return SetJson(
          res, 200, {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", m->context_length}});
    }
  }
  std::vector<int32_t> ids;
  if (auto e = PromptIds(r, *m, &ids)) return SendError(res, *e);
  SetJson(res, 200, {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", m->context_length}});
}

}  // namespace unmask::server
