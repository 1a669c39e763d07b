// Diffusion drafting: canvas = context + k mask tokens; each forward of the bidirectional model
// scores every still-masked draft position, and the most confident ones are committed (steps = 1:
// all k from one forward). Greedy (argmax) tokens; confidence = softmax probability.
#include <algorithm>
#include <cmath>
#include <string>

#include "decode/drafter.h"
#include "decode/schedule.h"
#include "sampling/token_choice.h"
#include "sampling/top_k.h"

namespace unmask {
namespace {

class DiffusionDrafter final : public Drafter {
 public:
  DiffusionDrafter(const Model* model, DiffusionDrafterParams p) : model_(model), p_(p) {}
  std::string_view name() const override { return "diffusion"; }

 protected:
  Status DoPropose(std::span<const int32_t> ctx, int64_t max_tokens, DraftProposal* out) override {
    const ModelConfig& c = model_->config();
    const int64_t k = std::min(max_tokens, c.context_length - 1);
    if (ctx.empty() || k <= 0) return Status::Ok();
    const int64_t keep = std::min<int64_t>(static_cast<int64_t>(ctx.size()), c.context_length - k);
    canvas_.assign(ctx.end() - keep, ctx.end());
    canvas_.resize(static_cast<size_t>(keep + k), p_.mask_token);
    std::vector<double> conf(static_cast<size_t>(k), 0.0);
    const int64_t steps = std::min<int64_t>(p_.steps, k);
    const std::vector<int64_t> counts = NumTransferTokens(k, steps);
    for (int64_t s = 0; s < steps; ++s) {
      rows_.clear();
      for (int64_t i = 0; i < k; ++i) {
        if (canvas_[static_cast<size_t>(keep + i)] == p_.mask_token) {
          rows_.push_back(static_cast<int32_t>(keep + i));
        }
      }
      const int64_t r = static_cast<int64_t>(rows_.size());
      logits_.resize(static_cast<size_t>(r * c.vocab_size));
      BatchPlan plan;
      plan.sequences.push_back(SequenceInput{canvas_, 0, rows_, -1});
      ForwardStats fs;
      UNMASK_RETURN_IF_ERROR(model_->Forward(
          plan, ws_, TensorView{logits_.data(), DType::kF32, Shape{r, c.vocab_size}}, &fs));
      CountForward(fs);
      std::vector<int32_t> tok(static_cast<size_t>(r));
      std::vector<double> score(static_cast<size_t>(r));
      for (int64_t j = 0; j < r; ++j) {
        const std::span<const float> row(logits_.data() + j * c.vocab_size,
                                         static_cast<size_t>(c.vocab_size));
        // The mask token is never a draft.
        masked_row_.assign(row.begin(), row.end());
        masked_row_[static_cast<size_t>(p_.mask_token)] = -INFINITY;
        tok[static_cast<size_t>(j)] = ArgMax(masked_row_);
        score[static_cast<size_t>(j)] =
            SoftmaxProbability(masked_row_, tok[static_cast<size_t>(j)], {});
      }
      const int64_t n = s == steps - 1 ? r : counts[static_cast<size_t>(s)];
      for (int32_t j : SelectTopK(score, n)) {
        canvas_[static_cast<size_t>(rows_[static_cast<size_t>(j)])] = tok[static_cast<size_t>(j)];
        conf[static_cast<size_t>(rows_[static_cast<size_t>(j)] - keep)] =
            score[static_cast<size_t>(j)];
      }
    }
    for (int64_t i = 0; i < k; ++i) {
      if (p_.p_min > 0 && conf[static_cast<size_t>(i)] < p_.p_min) break;
      out->tokens.push_back(canvas_[static_cast<size_t>(keep + i)]);
      out->q.push_back(TokenDistribution::PointMass(out->tokens.back()));
    }
    return Status::Ok();
  }

 private:
  const Model* model_;
  DiffusionDrafterParams p_;
  Workspace ws_;
  std::vector<int32_t> canvas_, rows_;
  std::vector<float> logits_, masked_row_;
};

}  // namespace

StatusOr<std::unique_ptr<Drafter>> MakeDiffusionDrafter(const Model* model,
                                                        const DiffusionDrafterParams& params) {
  if (model == nullptr || !model->config().is_diffusion()) {
    return InvalidArgumentError("a diffusion drafter needs a bidirectional (diffusion) model");
  }
  if (params.mask_token < 0 || params.mask_token >= model->config().vocab_size) {
    return InvalidArgumentError("diffusion drafter: mask token " +
                                std::to_string(params.mask_token) + " is outside the vocabulary");
  }
  if (params.steps < 1) return InvalidArgumentError("diffusion drafter: steps must be >= 1");
  if (!(params.p_min >= 0 && params.p_min <= 1)) {
    return InvalidArgumentError("diffusion drafter: p_min must be in [0, 1]");
  }
  return std::unique_ptr<Drafter>(new DiffusionDrafter(model, params));
}

}  // namespace unmask
