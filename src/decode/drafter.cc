#include "decode/drafter.h"

#include <chrono>
#include <string>

#include "core/clock.h"

namespace unmask {

Status Drafter::Propose(std::span<const int32_t> context, int64_t max_tokens, DraftProposal* out) {
  const auto start = std::chrono::steady_clock::now();
  out->tokens.clear();
  out->q.clear();
  out->parents.clear();
  Status s = DoPropose(context, max_tokens, out);
  if (s.ok() && out->q.size() != out->tokens.size()) {
    s = InternalError("drafter " + std::string(name()) + ": " + std::to_string(out->q.size()) +
                      " distributions for " + std::to_string(out->tokens.size()) + " tokens");
  }
  if (s.ok()) s = ValidateDraftTree(*out);
  ++stats_.calls;
  stats_.ms += MsSince(start);
  return s;
}

Status ValidateDraftTree(const DraftProposal& d) {
  if (d.parents.empty()) return Status::Ok();
  if (d.parents.size() != d.tokens.size()) {
    return InvalidArgumentError("draft tree: " + std::to_string(d.parents.size()) +
                                " parents for " + std::to_string(d.tokens.size()) + " tokens");
  }
  for (size_t i = 0; i < d.parents.size(); ++i) {
    if (d.parents[i] < -1 || d.parents[i] >= static_cast<int32_t>(i)) {
      return InvalidArgumentError("draft tree: draft " + std::to_string(i) + " has parent " +
                                  std::to_string(d.parents[i]) +
                                  " (must be -1 or an earlier draft)");
    }
  }
  return Status::Ok();
}

void Drafter::CountForward(const ForwardStats& fs) {
  ++stats_.forwards;
  stats_.positions += fs.num_positions;
  stats_.flops += fs.flops;
}

}  // namespace unmask
