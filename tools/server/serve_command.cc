#include "server/serve_command.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "common/cli_util.h"
#include "common/decode_args.h"
#include "common/model_args.h"
#include "decode/decoder_factory.h"
#include "server/draft_files.h"

namespace unmask::tools {

void ServeCommand::AddTo(CLI::App& app) {
  cli = &app;
  app.option_defaults()->always_capture_default();
  app.add_option("-m,--model", models,
                 "GGUF model to serve (repeat for several: a diffusion model and an AR model "
                 "side by side; the id is the file name without .gguf)")
      ->required();
  app.add_option("--alias", aliases, "model id for each -m, in order (default: the file stem)");
  app.add_option("--host", host, "address to listen on (0.0.0.0: every interface)");
  app.add_option("--port", port, "TCP port (0: any free port; the chosen one is printed)")
      ->check(CLI::Range(0, 65535));
  AddBackendFlags(app, &backend);
  app.add_option("--max-batch", options.scheduler.max_batch,
                 "running requests per model (continuous batching for AR, batched denoising for "
                 "diffusion)")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  app.add_option("--max-queue", options.scheduler.max_queue,
                 "waiting requests (all models) before new ones get 429 Too Many Requests")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  app.add_option("--max-batched-tokens", options.scheduler.max_batched_tokens,
                 "token budget: positions fed per forward before new requests wait")
      ->check(CLI::Range(int64_t{1}, kMaxLength));
  app.add_option("--request-timeout", request_timeout_s,
                 "default deadline of a request in seconds (the request's 'timeout' overrides)")
      ->check(CLI::Range(0.001, 1e7));
  app.add_option("--drain-timeout", drain_timeout_s,
                 "SIGTERM drains: new requests get 503 and /health says draining while the "
                 "running ones finish, for at most this many seconds (then they are aborted); "
                 "0: stop at once. SIGINT (Ctrl-C), or a second SIGTERM, stops at once")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--drain-grace", options.drain_grace_s,
                 "SIGTERM: stay up at least this many seconds answering 503 (and /health "
                 "draining), so that a load balancer's health checks take the replica out before "
                 "its port closes")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--latency-target-ms", options.latency_target_ms,
                 "model=auto: the end-to-end latency the router aims for when the request has "
                 "no latency_target_ms")
      ->check(CLI::Range(0.001, 1e9));
  app.add_option("--temperature,--temp", options.temperature,
                 "default temperature when a request gives none (OpenAI's default is 1)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--diffusion-max-tokens", options.diffusion_max_tokens,
                 "full-canvas diffusion models (LLaDA, Dream): the canvas of a request without "
                 "max_tokens (chat); AR and block-diffusion models generate until EOS or the "
                 "context instead")
      ->check(CLI::Range(int64_t{1}, kMaxLength));
  app.add_option("-c,--ctx-size", options.context_length,
                 "context every request may use, prompt + output (0: each model's own; a larger "
                 "value is capped at the model's)")
      ->check(CLI::Range(int64_t{0}, kMaxLength));
  app.add_option("--api-key", options.api_key,
                 "require 'Authorization: Bearer KEY' on the API (/health and the playground "
                 "page stay open); default: the UNMASK_API_KEY environment variable")
      ->envname("UNMASK_API_KEY");
  AddChatTemplateFileFlag(app, &options.chat_template_file);
  app.add_flag("--spec-lookup", options.speculative_lookup,
               "AR models: prompt-lookup speculative decoding by default (a request's "
               "'speculative' field overrides)");
  app.add_flag("--spec-medusa", options.speculative_medusa,
               "AR models with Medusa heads beside them (MODEL.medusa.gguf, loaded at start): "
               "Medusa speculative decoding by default (a request's 'speculative' field "
               "overrides)");
  app.add_flag("--spec-eagle", options.speculative_eagle,
               "AR models with an EAGLE draft layer beside them (MODEL.eagle.gguf, loaded at "
               "start): EAGLE speculative decoding (a draft tree verified per step) by default; "
               "before --spec-medusa where a model has both (a request's 'speculative' field "
               "overrides)");
  app.add_option("--draft-heads", options.draft_heads,
                 "[MODEL_ID=]FILE: Medusa heads or an EAGLE draft layer (the file's architecture "
                 "says which) for an AR model, instead of MODEL.medusa.gguf / MODEL.eagle.gguf "
                 "beside it; MODEL_ID= (the model's id, see --alias) is needed when several AR "
                 "models are served; repeat for more files")
      ->type_name("[ID=]FILE")
      ->default_str("");  // no "=[]" after a type name that has an '=' of its own
  // Diffusion defaults (a request's fields override them; the flags of unmask generate).
  diffusion.AddTo(app, /*request_flags=*/false);
}

int ServeCommand::Run() {
  constexpr const char* kWho = "unmask serve";
  auto created = backend.MakeBackend();
  if (!created.ok()) return FailWith(kWho, created.status());
  options.backend = *created;
  auto mode = backend.weight_mode();
  if (!mode.ok()) return FailWith(kWho, mode.status());
  options.host = host;
  options.port = port;
  options.model_paths = models;
  options.aliases = aliases;
  options.weight_mode = *mode;
  options.request_timeout_s = request_timeout_s;
  options.drain_timeout_s = drain_timeout_s;
  options.temperature_given = FlagGiven(cli, "--temperature");
  {
    // The server's defaults are settled as a request's are (--threshold alone implies the
    // threshold rule, --factor the factor rule; a parameter of another rule is an error).
    DecodeOptions o;
    auto named = diffusion.Resolve();
    if (!named.ok()) return FailWith(kWho, named.status(), 2);
    o.diffusion = *named;
    o.max_tokens = std::max<int64_t>(o.diffusion.block_length, 1);
    o.given = GivenFlags(*cli);
    auto settled = SettleDiffusionParams(o);
    if (!settled.ok()) return FailWith(kWho, settled.status(), 2);
    options.diffusion = *named;
    options.diffusion.commit = settled->commit;
  }
  if (aliases.size() > models.size()) {
    PrintError("unmask serve", "more --alias than -m");
    return 2;
  }
  if (!options.chat_template_file.empty() && models.size() > 1) {
    PrintError("unmask serve",
               "--chat-template-file replaces one model's template: serve one -m with it");
    return 2;
  }
  // A missing heads file is said before the models load (minutes for a large one).
  if (Status s = server::CheckDraftFilesExist(options.draft_heads); !s.ok()) {
    return FailWith(kWho, s, 2);
  }
  if (!options.chat_template_file.empty()) {
    // Before the port opens (the render check runs once the model's tokens are known).
    auto source = LoadChatTemplateFile(options.chat_template_file);
    if (!source.ok()) return FailWith(kWho, source.status());
  }

  // Thousands of connections (idle keep-alive clients, a proxy's pool): as many descriptors as
  // the hard limit allows (the soft default, 1024, is the usual first wall).
  if (rlimit nofile{};
      getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  // Signals: SIGINT/SIGTERM stop the server (handled on a thread of their own); SIGPIPE is
  // ignored (a client that hangs up is a failed write, not the end of the process).
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  server::Server srv(options);
  auto bound = srv.Bind();
  if (!bound.ok()) {
    PrintError("unmask serve", bound.status().message());
    return 1;
  }
  std::fprintf(stderr, "unmask serve: listening on http://%s:%d (loading %zu model%s)\n",
               host.c_str(), *bound, models.size(), models.size() == 1 ? "" : "s");
  std::fflush(stderr);
  int rc = 0;
  std::atomic<bool> serving_done{false};
  // Stop() only ends a server that is already listening: repeat it until Serve() has returned.
  auto stop_until_done = [&] {
    while (!serving_done.load()) {
      srv.Stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  std::thread loader([&] {
    Status s = srv.LoadModels([](size_t i, size_t n, const std::string& id) {
      std::fprintf(stderr, "unmask serve: loading model %zu/%zu: %s\n", i + 1, n, id.c_str());
    });
    if (!s.ok()) {
      PrintError("unmask serve", s.message());
      rc = 1;
      stop_until_done();
      return;
    }
    std::fprintf(stderr, "unmask serve: ready (%s)\n", options.backend->Describe().c_str());
  });
  // SIGTERM drains (a rolling restart loses no admitted request), then stops; SIGINT, or a
  // signal during the drain, stops at once (running requests end as aborted).
  std::thread drainer;
  std::thread signals([&] {
    for (;;) {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      if (serving_done.load()) return;
      if (sig == SIGTERM && !srv.draining() && srv.ready() && drain_timeout_s > 0) {
        std::fprintf(stderr, "unmask serve: SIGTERM: draining for up to %.0f s\n", drain_timeout_s);
        drainer = std::thread([&] {
          const int64_t left = srv.Drain(drain_timeout_s);
          if (serving_done.load()) return;
          if (left > 0) {
            std::fprintf(stderr, "unmask serve: drain deadline: aborting %lld request%s\n",
                         static_cast<long long>(left), left == 1 ? "" : "s");
          }
          std::fprintf(stderr, "unmask serve: stopping (drained)\n");
          stop_until_done();
        });
        continue;
      }
      std::fprintf(stderr, "unmask serve: stopping (signal %d)\n", sig);
      stop_until_done();
      return;
    }
  });
  srv.Serve();
  serving_done.store(true);
  loader.join();
  if (drainer.joinable()) drainer.join();
  // Wake the signal thread if it still waits (no signal came, or only the draining one).
  pthread_kill(signals.native_handle(), SIGINT);
  signals.join();
  return rc;
}

}  // namespace unmask::tools
