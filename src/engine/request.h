// A generation request as the engine sees it (no HTTP, no JSON): prompt ids, decoding parameters,
// stop strings, a deadline; and the stream of events the engine sends back to whoever submitted it
// (ARCHITECTURE.md "Data flow of one request").
#ifndef UNMASK_ENGINE_REQUEST_H_
#define UNMASK_ENGINE_REQUEST_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "decode/decoder_factory.h"

namespace unmask {

using SteadyClock = std::chrono::steady_clock;

// The decoding options (max_tokens, ar, diffusion, dream, speculative_lookup, given, ...) are
// settled by the decoder factory (decode/decoder_factory.h) when the request is built or
// submitted; max_tokens is also where the text is cut.
struct GenerationRequest : DecodeOptions {
  GenerationRequest() { max_tokens = 16; }
  std::string id;               // for logs and metrics ("cmpl-..." in the server)
  std::vector<int32_t> prompt;  // token ids
  std::vector<std::string> stop;
  bool stream_canvas = false;  // diffusion: send a kCanvas event after every step
  // The text is the tokens' bytes, without the tokenizer's clean-up of spaces (set whenever the
  // text is parsed afterwards: grammar-constrained output, tool calls).
  bool verbatim_text = false;
  // max_tokens was settled from the context (a chat request without a length): the output ends at
  // EOS long before, so the router predicts with at most kRouteUntilDoneTokens.
  bool until_done = false;
  SteadyClock::time_point arrival = SteadyClock::now();
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
};

// Why a request ended (OpenAI finish_reason, plus the engine's own).
enum class FinishReason {
  kStop,      // EOS/EOT or a stop string ("stop")
  kLength,    // max_tokens or the context ("length")
  kDeadline,  // the deadline passed ("length" in the API, x_unmask.finish_detail "deadline")
  kAbort,     // cancelled (client gone) or server shutting down ("abort")
  kError,     // an engine fault (status set)
};
std::string_view FinishReasonName(FinishReason r);  // "stop" | "length" | "deadline" | ...

// Work and timings of one request. Times in milliseconds from arrival.
struct RequestStats {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // tokens returned (EOS included when it ended the text)
  int64_t nfe = 0;                // forwards this request took part in
  int64_t forward_positions = 0;  // positions it fed, summed over its forwards
  int64_t drafted = 0;            // speculative: tokens proposed
  int64_t accepted = 0;           // speculative: tokens accepted
  double queue_ms = 0;            // arrival -> admitted into the running batch
  double ttft_ms = -1;            // arrival -> first text sent (-1: none)
  double total_ms = 0;            // arrival -> finished
  double tokens_per_forward() const {
    return nfe > 0 ? static_cast<double>(completion_tokens) / static_cast<double>(nfe) : 0;
  }
};

struct StreamEvent {
  enum class Type {
    kText,    // `text`: the next piece of the output (UTF-8 complete, stop strings removed)
    kCanvas,  // diffusion: `canvas` = the generated part of the canvas after step `step`
    kDone,    // last event: finish, stats, status (kError)
  };
  Type type = Type::kText;
  std::string text;
  std::vector<int32_t> canvas;  // kCanvas: [gen_length] token ids, the mask id where masked
  int32_t mask_id = -1;
  int64_t step = 0;
  int64_t block = 0;
  double elapsed_ms = 0;
  FinishReason finish = FinishReason::kStop;
  RequestStats stats;
  std::vector<int32_t> output_ids;     // kDone: the completion_tokens tokens returned
  std::vector<TokenLogprob> logprobs;  // kDone: theirs, when the request asked (AR)
  Status status;
};

// The channel between the engine thread (producer) and the submitter (consumer), shared by both.
// Cancel() may be called from any thread; the engine stops the request at its next step.
class RequestStream {
 public:
  void Push(StreamEvent e);
  // Waits up to `timeout` for an event; false on timeout.
  bool Pop(StreamEvent* e, std::chrono::milliseconds timeout);
  // Waits up to `timeout` for the kDone event to be queued, without waking for the events before
  // it (a benchmark client that only needs the result keeps its thread asleep while the engine
  // runs); true once finished.
  bool WaitFinished(std::chrono::milliseconds timeout);
  void Cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  // Set by the engine once the kDone event has been pushed.
  bool finished() const { return finished_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::deque<StreamEvent> events_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> finished_{false};
};

}  // namespace unmask

#endif  // UNMASK_ENGINE_REQUEST_H_
