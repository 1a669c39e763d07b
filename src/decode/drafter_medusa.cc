// Medusa drafting (Cai et al. 2024, arXiv:2401.10774). After each verification the engine passes
// the target's final hidden state at the position that predicted the last committed token
// (ObserveFeatures); the base head's prediction from it is that token, so head 0's greedy token
// is the first draft token and head k's the (k+1)-th. The draft is a chain (Medusa's top-1 path,
// one candidate per head); the verifier's rule keeps the output exact.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "decode/drafter.h"

namespace unmask {
namespace {

class MedusaDrafter final : public Drafter {
 public:
  MedusaDrafter(const MedusaHeads* heads, MedusaDrafterParams p) : heads_(heads), p_(p) {}
  std::string_view name() const override { return "medusa"; }
  bool uses_target_features() const override { return true; }
  int64_t feature_size() const override { return heads_->hidden_size(); }
  void ObserveFeatures(std::span<const float> h, int64_t rows, int64_t context_length) override {
    const int64_t width = heads_->hidden_size();
    if (rows < 1 || static_cast<int64_t>(h.size()) != rows * width) {
      features_for_ = -1;
      return;
    }
    // The last row predicted the last committed token: the heads draft what follows it.
    h_.assign(h.end() - width, h.end());
    features_for_ = context_length;
  }

 protected:
  Status DoPropose(std::span<const int32_t> ctx, int64_t max_tokens, DraftProposal* out) override {
    // Only the hidden state of this very context predicts its continuation; anything else (the
    // first step, features from another context) proposes nothing.
    if (features_for_ != static_cast<int64_t>(ctx.size())) return Status::Ok();
    const auto n = static_cast<int32_t>(std::min<int64_t>({max_tokens, heads_->head_count(), 16}));
    if (n < 1) return Status::Ok();
    UNMASK_RETURN_IF_ERROR(heads_->PredictChain(h_, n, scratch_, &guesses_));
    CountFlops(n * heads_->flops_per_head());
    for (const MedusaGuess& g : guesses_) {
      if (g.prob < p_.p_min) break;
      out->tokens.push_back(g.token);
      out->q.push_back(TokenDistribution::PointMass(g.token));
    }
    return Status::Ok();
  }

 private:
  const MedusaHeads* heads_;
  MedusaDrafterParams p_;
  std::vector<float> h_;
  int64_t features_for_ = -1;  // the context length h_ belongs to
  MedusaScratch scratch_;
  std::vector<MedusaGuess> guesses_;
};

}  // namespace

StatusOr<std::unique_ptr<Drafter>> MakeMedusaDrafter(const MedusaHeads* heads,
                                                     const MedusaDrafterParams& params) {
  if (heads == nullptr) return InvalidArgumentError("Medusa drafter: no heads");
  if (!(params.p_min >= 0 && params.p_min <= 1)) {
    return InvalidArgumentError("Medusa drafter: p_min must be in [0, 1], got " +
                                std::to_string(params.p_min));
  }
  return std::unique_ptr<Drafter>(new MedusaDrafter(heads, params));
}

}  // namespace unmask
