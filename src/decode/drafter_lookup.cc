// Prompt-lookup drafting: the last n tokens (n = ngram_max down to ngram_min) are searched for in
// the earlier context, most recent occurrence first; the tokens that followed it are proposed.
#include <algorithm>
#include <string>

#include "decode/drafter.h"

namespace unmask {
namespace {

class LookupDrafter final : public Drafter {
 public:
  explicit LookupDrafter(LookupDrafterParams p) : p_(p) {}
  std::string_view name() const override { return "lookup"; }

 protected:
  Status DoPropose(std::span<const int32_t> ctx, int64_t max_tokens, DraftProposal* out) override {
    const int64_t len = static_cast<int64_t>(ctx.size());
    for (int64_t n = p_.ngram_max; n >= p_.ngram_min && out->tokens.empty(); --n) {
      if (n >= len) continue;
      const auto suffix = ctx.subspan(static_cast<size_t>(len - n));
      // Most recent earlier match that has at least one following token.
      for (int64_t at = len - n - 1; at >= 0; --at) {
        if (!std::equal(suffix.begin(), suffix.end(), ctx.begin() + at)) continue;
        const int64_t from = at + n;
        const int64_t count = std::min(max_tokens, len - from);
        for (int64_t i = 0; i < count; ++i) {
          out->tokens.push_back(ctx[static_cast<size_t>(from + i)]);
          out->q.push_back(TokenDistribution::PointMass(out->tokens.back()));
        }
        break;
      }
    }
    return Status::Ok();
  }

 private:
  LookupDrafterParams p_;
};

}  // namespace

StatusOr<std::unique_ptr<Drafter>> MakeLookupDrafter(const LookupDrafterParams& params) {
  if (params.ngram_min < 1 || params.ngram_max < params.ngram_min) {
    return InvalidArgumentError("lookup drafter needs 1 <= ngram_min <= ngram_max, got " +
                                std::to_string(params.ngram_min) + " and " +
                                std::to_string(params.ngram_max));
  }
  return std::unique_ptr<Drafter>(new LookupDrafter(params));
}

}  // namespace unmask
