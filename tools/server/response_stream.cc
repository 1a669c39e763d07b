#include "server/response_stream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string_view>

namespace unmask::server {

using json = nlohmann::ordered_json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(100);
constexpr int kPingEvery = 2;  // polls of silence between keep-alive writes (200 ms)

void LogDone(const Exchange& x, size_t choice, const StreamEvent& e) {
  const std::string which =
      x.streams.size() > 1 ? " choice=" + std::to_string(choice) : std::string();
  std::fprintf(stderr,
               "unmask serve: %s%s model=%s finish=%s prompt=%lld completion=%lld nfe=%lld "
               "queue=%.0fms ttft=%.0fms total=%.0fms%s%s\n",
               x.log_prefix.c_str(), which.c_str(), x.head.model.c_str(),
               std::string(FinishReasonName(e.finish)).c_str(),
               static_cast<long long>(e.stats.prompt_tokens),
               static_cast<long long>(e.stats.completion_tokens),
               static_cast<long long>(e.stats.nfe), e.stats.queue_ms, e.stats.ttft_ms,
               e.stats.total_ms,
               e.status.ok() ? "" : " error=", e.status.ok() ? "" : e.status.message().c_str());
}

// The error a request that did not complete ends with (an engine fault, or an abort the client
// can still see: the server is shutting down).
ApiError EndError(const StreamEvent& e) {
  if (e.finish == FinishReason::kAbort) {
    return MakeError(503, "the request was aborted: the server is shutting down");
  }
  return MakeError(500, "generation failed: " + e.status.message());
}

bool Failed(const StreamEvent& e) {
  return e.finish == FinishReason::kError || e.finish == FinishReason::kAbort;
}

bool WriteSse(httplib::DataSink& sink, const std::string& data) {
  const std::string line = "data: " + data + "\n\n";
  return sink.write(line.data(), line.size());
}

// Waits for the next event of choice `i`, writing `keep_alive` to the client after 200 ms
// without an event, and at least every kBusyKeepAlive while events come (nothing when `sink` is
// null): a whole response writes nothing else until it is done, so these writes are how a
// departed client is noticed (at the second write after it left). False when a write failed: the
// client is gone.
bool NextEvent(Exchange& x, size_t i, httplib::DataSink* sink, std::string_view keep_alive,
               StreamEvent* e) {
  constexpr auto kBusyKeepAlive = std::chrono::seconds(1);
  int silent = 0;
  for (;;) {
    const bool got = x.streams[i]->Pop(e, kPollInterval);
    if (sink != nullptr) {
      const auto now = std::chrono::steady_clock::now();
      if (x.last_keep_alive == std::chrono::steady_clock::time_point{}) x.last_keep_alive = now;
      silent = got ? 0 : silent + 1;
      if (silent >= kPingEvery || now - x.last_keep_alive >= kBusyKeepAlive) {
        silent = 0;
        x.last_keep_alive = now;
        if (!sink->write(keep_alive.data(), keep_alive.size())) return false;
      }
    }
    if (got) return true;
  }
}

// Usage of the whole response: the prompt once (as OpenAI counts it), every choice's tokens.
json TotalUsage(const std::vector<StreamEvent>& done) {
  RequestStats sum = done.front().stats;
  for (size_t i = 1; i < done.size(); ++i) {
    sum.completion_tokens += done[i].stats.completion_tokens;
  }
  return UsageJson(sum);
}

// x_unmask of the first choice, plus the number of choices when there are several.
json ResponseXUnmask(const Exchange& x, const std::vector<StreamEvent>& done) {
  json xu = XUnmaskJson(x.head, x.engine, done.front().finish, done.front().stats, x.route);
  if (done.size() > 1) xu["n"] = done.size();
  return xu;
}

// OpenAI's logprobs object of one choice from its tokens' log-probabilities (null when the
// request did not ask): completions {tokens, token_logprobs, top_logprobs, text_offset}, chat
// {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}. A token's text is
// its piece as it continues the one before (a SentencePiece word keeps its space).
json LogprobsJson(const Exchange& x, const StreamEvent& done) {
  if (!x.logprobs) return nullptr;
  const Tokenizer& tok = *x.tokenizer;
  int32_t previous = x.last_prompt_token;
  auto piece = [&](int32_t prev, int32_t t) {
    const int32_t one[1] = {t};
    return tok.DecodeContinuation(prev, one, /*skip_special=*/false);
  };
  auto bytes = [](const std::string& s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back(static_cast<int>(c));
    return b;
  };
  if (x.head.chat) {
    json content = json::array();
    for (const TokenLogprob& lp : done.logprobs) {
      const std::string text = piece(previous, lp.token);
      json top = json::array();
      for (const auto& [id, v] : lp.top) {
        const std::string alt = piece(previous, id);
        top.push_back({{"token", alt}, {"logprob", v}, {"bytes", bytes(alt)}});
      }
      content.push_back({{"token", text},
                         {"logprob", lp.logprob},
                         {"bytes", bytes(text)},
                         {"top_logprobs", top}});
      previous = lp.token;
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
       offsets = json::array();
  size_t offset = x.echo.size();
  for (const TokenLogprob& lp : done.logprobs) {
    const std::string text = piece(previous, lp.token);
    tokens.push_back(text);
    token_logprobs.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [id, v] : lp.top) top[piece(previous, id)] = v;
    top_logprobs.push_back(top);
    offsets.push_back(offset);
    offset += text.size();
    previous = lp.token;
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top_logprobs},
          {"text_offset", offsets}};
}

// OpenAI's tool_calls of parsed calls, each with a fresh id "call_" + 24 letters and digits.
json ToolCallsJson(const std::vector<chat::ParsedToolCall>& calls) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  json out = json::array();
  for (const chat::ParsedToolCall& c : calls) {
    std::string id = "call_";
    for (int k = 0; k < 24; ++k) id += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
    out.push_back({{"id", id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

// A finished reply of a request with tools: content and calls.
chat::ParsedReply ParseReply(const Exchange& x, const std::string& text) {
  return chat::ParseToolCalls(x.tool_format, text, *x.tools);
}

}  // namespace

// Collects every choice of a whole (non-streaming) response and returns its body, or nullopt when
// the client is gone (a failed keep-alive write; `sink` null: no keep-alive).
std::optional<std::string> CollectWhole(Exchange& x, httplib::DataSink* sink, int* status) {
  std::vector<ChoiceResult> choices(x.streams.size());
  std::vector<StreamEvent> done(x.streams.size());
  for (size_t i = 0; i < x.streams.size(); ++i) {
    choices[i].text = x.echo;
    StreamEvent e;
    for (;;) {
      if (!NextEvent(x, i, sink, " ", &e)) return std::nullopt;
      if (e.type == StreamEvent::Type::kText) choices[i].text += e.text;
      if (e.type == StreamEvent::Type::kDone) break;
    }
    LogDone(x, i, e);
    choices[i].finish = e.finish;
    choices[i].logprobs = LogprobsJson(x, e);
    if (x.tools) {
      chat::ParsedReply reply = ParseReply(x, choices[i].text);
      choices[i].text = std::move(reply.content);
      if (!reply.calls.empty()) choices[i].tool_calls = ToolCallsJson(reply.calls);
    }
    done[i] = std::move(e);
  }
  for (const StreamEvent& e : done) {
    if (Failed(e)) {
      *status = EndError(e).status;
      return ErrorBody(EndError(e));
    }
  }
  *status = 200;
  return Dump(CompletionBody(x.head, choices, TotalUsage(done), ResponseXUnmask(x, done)));
}

// The whole streaming response; false when the client is gone. Choices are interleaved as their
// events come (each chunk names its index).
bool ProvideStream(Exchange& x, httplib::DataSink& sink) {
  const size_t n = x.streams.size();
  std::vector<bool> first(n, true), finished(n, false);
  // With tools: each choice's text so far and how much of it was sent as content.
  std::vector<std::string> reply(n);
  std::vector<size_t> sent(n, 0);
  std::vector<StreamEvent> done(n);
  if (!x.echo.empty()) {
    for (size_t i = 0; i < n; ++i) {
      if (!WriteSse(sink,
                    Dump(ChunkBody(x.head, &x.echo, true, nullptr, static_cast<int64_t>(i))))) {
        return false;
      }
      first[i] = false;
    }
  }
  size_t left = n;
  int silent = 0;
  const auto poll = n == 1 ? kPollInterval : std::chrono::milliseconds(10);
  const int ping_every = n == 1 ? kPingEvery : 20;  // 200 ms of silence either way
  while (left > 0) {
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      if (finished[i]) continue;
      StreamEvent e;
      if (!x.streams[i]->Pop(&e, poll)) continue;
      any = true;
      const auto index = static_cast<int64_t>(i);
      if (e.type == StreamEvent::Type::kText) {
        if (x.tools) {
          // Content streams up to where a tool call may begin; the calls come whole at the end.
          reply[i] += e.text;
          const size_t safe = chat::StreamableContentLength(x.tool_format, reply[i]);
          if (safe <= sent[i]) continue;
          e.text = reply[i].substr(sent[i], safe - sent[i]);
          sent[i] = safe;
        }
        if (!WriteSse(sink, Dump(ChunkBody(x.head, &e.text, first[i], nullptr, index)))) {
          return false;
        }
        first[i] = false;
        continue;
      }
      if (e.type == StreamEvent::Type::kCanvas) {
        json tokens = json::array();
        for (int32_t t : e.canvas) {
          if (t == e.mask_id) {
            tokens.push_back(nullptr);
          } else {
            const int32_t one[1] = {t};
            // A piece as it continues the text (a SentencePiece word keeps its leading space):
            // any previous token other than BOS keeps it; the mask id is one.
            tokens.push_back(
                x.tokenizer->DecodeContinuation(e.mask_id, one, /*skip_special=*/false));
          }
        }
        json c = {{"id", x.head.id},
                  {"object", "unmask.canvas"},
                  {"model", x.head.model},
                  {"step", e.step},
                  {"block", e.block},
                  {"nfe", e.step + 1},
                  {"elapsed_ms", e.elapsed_ms},
                  {"tokens", tokens}};
        if (n > 1) c["index"] = index;
        if (!WriteSse(sink, Dump(c))) return false;
        continue;
      }
      // kDone of choice i.
      LogDone(x, i, e);
      finished[i] = true;
      --left;
      if (Failed(e)) {
        if (!WriteSse(sink, ErrorBody(EndError(e)))) return false;
        x.CancelAll();
        static const char kEnd[] = "data: [DONE]\n\n";
        if (!sink.write(kEnd, sizeof(kEnd) - 1)) return false;
        sink.done();
        return true;
      }
      const char* finish = ApiFinishReason(e.finish);
      if (x.tools) {
        chat::ParsedReply parsed = ParseReply(x, reply[i]);
        // The content not sent yet (what was sent is a prefix of it unless trimming cut it).
        const std::string_view streamed = std::string_view(reply[i]).substr(0, sent[i]);
        if (parsed.content.size() > sent[i] && parsed.content.starts_with(streamed)) {
          const std::string rest = parsed.content.substr(sent[i]);
          if (!WriteSse(sink, Dump(ChunkBody(x.head, &rest, first[i], nullptr, index)))) {
            return false;
          }
          first[i] = false;
        }
        if (!parsed.calls.empty()) {
          json chunk = ToolCallsChunkBody(x.head, ToolCallsJson(parsed.calls), index);
          if (first[i]) chunk["choices"][0]["delta"]["role"] = "assistant";
          if (!WriteSse(sink, Dump(chunk))) return false;
          first[i] = false;
          if (e.finish == FinishReason::kStop) finish = "tool_calls";
        }
      }
      json last = ChunkBody(x.head, nullptr, first[i], finish, index);
      // The choice's log-probabilities come whole with its last chunk.
      if (x.logprobs) last["choices"][0]["logprobs"] = LogprobsJson(x, e);
      done[i] = std::move(e);
      if (left == 0 && !x.include_usage) last["x_unmask"] = ResponseXUnmask(x, done);
      if (!WriteSse(sink, Dump(last))) return false;
    }
    if (!any && ++silent >= ping_every) {
      silent = 0;
      static const char kPing[] = ": ping\n\n";
      if (!sink.write(kPing, sizeof(kPing) - 1)) return false;
    } else if (any) {
      silent = 0;
    }
  }
  if (x.include_usage &&
      !WriteSse(sink, Dump(UsageChunkBody(x.head, TotalUsage(done), ResponseXUnmask(x, done))))) {
    return false;
  }
  static const char kDone[] = "data: [DONE]\n\n";
  if (!sink.write(kDone, sizeof(kDone) - 1)) return false;
  sink.done();
  return true;
}

// The whole non-streaming response; false when the client is gone.
bool ProvideWhole(Exchange& x, httplib::DataSink& sink) {
  int status = 200;
  const auto body = CollectWhole(x, &sink, &status);
  if (!body) return false;
  const std::string line = *body + "\n";
  if (!sink.write(line.data(), line.size())) return false;
  sink.done();
  return true;
}

}  // namespace unmask::server
