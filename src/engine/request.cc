#include "engine/request.h"

namespace unmask {

std::string_view FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kDeadline:
      return "deadline";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
  }
  return "error";
}

void RequestStream::Push(StreamEvent e) {
  const bool done = e.type == StreamEvent::Type::kDone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
    if (done) finished_.store(true);
  }
  cv_.notify_all();
  if (done) done_cv_.notify_all();
}

bool RequestStream::WaitFinished(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return done_cv_.wait_for(lock, timeout, [&] { return finished_.load(); });
}

bool RequestStream::Pop(StreamEvent* e, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  *e = std::move(events_.front());
  events_.pop_front();
  return true;
}

}  // namespace unmask
