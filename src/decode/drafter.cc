#include "decode/drafter.h"

#include <chrono>

#include "core/clock.h"

namespace unmask {

Status Drafter::Propose(std::span<const int32_t> context, int64_t max_tokens, DraftProposal* out) {
  const auto start = std::chrono::steady_clock::now();
  out->tokens.clear();
  out->q.clear();
  const Status s = DoPropose(context, max_tokens, out);
  ++stats_.calls;
  stats_.ms += MsSince(start);
  return s;
}

void Drafter::CountForward(const ForwardStats& fs) {
  ++stats_.forwards;
  stats_.positions += fs.num_positions;
  stats_.flops += fs.flops;
}

}  // namespace unmask
