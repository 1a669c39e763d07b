// Draft-model drafting: a small causal model with its own KV cache continues the context greedily.
// The cache keeps the longest common prefix with the previous call's context (rejected drafts are
// dropped by the next forward's position, kv/kv_cache.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "decode/drafter.h"
#include "sampling/token_choice.h"

namespace unmask {
namespace {

class ModelDrafter final : public Drafter {
 public:
  ModelDrafter(const Model* model, ModelDrafterParams p, KvCache kv)
      : model_(model), p_(p), kv_(std::move(kv)) {}
  std::string_view name() const override { return "draft"; }

 protected:
  Status DoPropose(std::span<const int32_t> ctx, int64_t max_tokens, DraftProposal* out) override {
    const ModelConfig& c = model_->config();
    const int64_t len = static_cast<int64_t>(ctx.size());
    max_tokens = std::min(max_tokens, c.context_length - len);
    if (len == 0 || max_tokens <= 0) return Status::Ok();
    // Reuse the cached prefix shared with `ctx` (at least the last context token is fed).
    int64_t keep = 0;
    const int64_t limit = std::min<int64_t>(len - 1, static_cast<int64_t>(cached_.size()));
    while (keep < limit && cached_[static_cast<size_t>(keep)] == ctx[static_cast<size_t>(keep)]) {
      ++keep;
    }
    cached_.assign(ctx.begin(), ctx.end());
    std::vector<int32_t> feed(ctx.begin() + keep, ctx.end());
    int64_t pos0 = keep;
    logits_.resize(static_cast<size_t>(c.vocab_size));
    for (int64_t i = 0; i < max_tokens; ++i) {
      const int32_t row = static_cast<int32_t>(feed.size() - 1);
      BatchPlan plan;
      plan.sequences.push_back(SequenceInput{feed, static_cast<int32_t>(pos0), {&row, 1}, 0});
      ForwardStats fs;
      UNMASK_RETURN_IF_ERROR(model_->Forward(
          plan, &kv_, ws_, TensorView{logits_.data(), DType::kF32, Shape{1, c.vocab_size}}, &fs));
      CountForward(fs);
      const int32_t tok = ArgMax(logits_);
      if (p_.p_min > 0) {
        double z = 0;
        for (float l : logits_) z += std::exp(static_cast<double>(l - logits_[tok]));
        if (1.0 / z < p_.p_min) break;
      }
      out->tokens.push_back(tok);
      out->q.push_back(TokenDistribution::PointMass(tok));
      pos0 += static_cast<int64_t>(feed.size());
      feed.assign(1, tok);
    }
    // The cache now also holds the fed drafts; remember them for the prefix match.
    cached_.insert(cached_.end(), out->tokens.begin(),
                   out->tokens.end() - (out->tokens.empty() ? 0 : 1));
    return Status::Ok();
  }

 private:
  const Model* model_;
  ModelDrafterParams p_;
  KvCache kv_;
  Workspace ws_;
  std::vector<int32_t> cached_;  // tokens whose K/V the cache holds, in order
  std::vector<float> logits_;
};

}  // namespace

StatusOr<std::unique_ptr<Drafter>> MakeModelDrafter(const Model* model,
                                                    const ModelDrafterParams& params) {
  if (model == nullptr || model->config().is_diffusion()) {
    return InvalidArgumentError("a draft model must be causal (autoregressive)");
  }
  if (!(params.p_min >= 0 && params.p_min <= 1)) {
    return InvalidArgumentError("draft p_min must be in [0, 1], got " +
                                std::to_string(params.p_min));
  }
  UNMASK_ASSIGN_OR_RETURN(KvCache kv, model->MakeKvCache(1));
  return std::unique_ptr<Drafter>(new ModelDrafter(model, params, std::move(kv)));
}

}  // namespace unmask
