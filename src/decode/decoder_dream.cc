#include "decode/decoder_dream.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/parallel.h"
#include "decode/dream_sampling.h"
#include "sampling/top_k.h"

namespace unmask {

StatusOr<DreamDecoder> DreamDecoder::Create(const DreamParams& params, int32_t mask_id,
                                            bool shift_logits, std::span<const int32_t> prompt,
                                            int64_t context_length, int64_t vocab_size,
                                            std::span<const int32_t> suffix) {
  UNMASK_RETURN_IF_ERROR(
      ValidateDreamParams(params, static_cast<int64_t>(prompt.size()), context_length));
  if (mask_id < 0 || mask_id >= vocab_size) {
    return InvalidArgumentError("the model has no valid mask token id (got " +
                                std::to_string(mask_id) + ")");
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab_size) {
      return InvalidArgumentError("prompt token id " + std::to_string(prompt[i]) + " at index " +
                                  std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(vocab_size) + ")");
    }
  }
  UNMASK_RETURN_IF_ERROR(CheckInfillSuffix(suffix, mask_id, vocab_size,
                                           static_cast<int64_t>(prompt.size()), params.gen_length,
                                           context_length));
  DreamDecoder d;
  d.params_ = params;
  d.mask_id_ = mask_id;
  d.shift_ = shift_logits;
  d.prompt_length_ = static_cast<int64_t>(prompt.size());
  d.vocab_size_ = vocab_size;
  d.rng_ = CounterRng(params.seed);
  d.timesteps_ = DreamTimesteps(params.steps, params.eps);
  d.canvas_.assign(prompt.begin(), prompt.end());
  d.canvas_.resize(static_cast<size_t>(d.prompt_length_ + params.gen_length), mask_id);
  d.canvas_.insert(d.canvas_.end(), suffix.begin(), suffix.end());
  return d;
}

std::span<const int32_t> DreamDecoder::generated() const {
  return std::span<const int32_t>(canvas_).subspan(static_cast<size_t>(prompt_length_),
                                                   static_cast<size_t>(params_.gen_length));
}

int64_t DreamDecoder::num_masked() const {
  int64_t n = 0;
  for (int32_t t : canvas_) n += (t == mask_id_);
  return n;
}

StatusOr<const BatchPlan*> DreamDecoder::Plan() {
  if (Done()) return FailedPreconditionError("Dream decoder: Plan() after the last step");
  masked_.clear();
  rows_.clear();
  row_of_.clear();
  for (size_t p = 0; p < canvas_.size(); ++p) {
    if (canvas_[p] != mask_id_) continue;
    const int32_t pos = static_cast<int32_t>(p);
    const int32_t row = shift_ && pos > 0 ? pos - 1 : pos;
    masked_.push_back(pos);
    // Positions ascend, so rows do too; p = 0 and p = 1 both read row 0 when shifted.
    if (rows_.empty() || rows_.back() != row) rows_.push_back(row);
    row_of_.push_back(static_cast<int32_t>(rows_.size()) - 1);
  }
  plan_.sequences.clear();
  plan_.sequences.push_back(SequenceInput{canvas_, 0, rows_});
  planned_ = true;
  return &plan_;
}

Status DreamDecoder::Update(const TensorView& logits, DreamStepResult* result) {
  if (Done()) return FailedPreconditionError("Update called after the last step");
  if (!planned_) return FailedPreconditionError("Update called without Plan() for this step");
  const int64_t num_rows = static_cast<int64_t>(rows_.size());
  if (logits.dtype != DType::kF32 || logits.shape.rank() != 2 || logits.shape[0] != num_rows ||
      logits.shape[1] != vocab_size_) {
    return InvalidArgumentError("logits must be f32 [" + std::to_string(num_rows) + ", " +
                                std::to_string(vocab_size_) + "], got " + logits.shape.ToString());
  }
  const float* data = logits.as<float>();
  const uint32_t step32 = static_cast<uint32_t>(step_);
  const int64_t num_masked = static_cast<int64_t>(masked_.size());
  auto row = [&](int64_t i) {
    return std::span<const float>(
        data + static_cast<int64_t>(row_of_[static_cast<size_t>(i)]) * vocab_size_,
        static_cast<size_t>(vocab_size_));
  };
  const bool last = step_ == params_.steps - 1;

  // Candidates sampled this step (indices into masked_).
  std::vector<int32_t> candidates;
  if (params_.alg == DreamAlg::kOrigin) {
    const double p_transfer = last ? 1.0 : DreamTransferFraction(timesteps_, step_);
    for (int64_t i = 0; i < num_masked; ++i) {
      const uint32_t pos = static_cast<uint32_t>(masked_[static_cast<size_t>(i)]);
      if (rng_.Uniform(RngStream::kDreamOrigin, step32, pos, 0) < p_transfer) {
        candidates.push_back(static_cast<int32_t>(i));
      }
    }
  } else {
    candidates.reserve(static_cast<size_t>(num_masked));
    for (int64_t i = 0; i < num_masked; ++i) candidates.push_back(static_cast<int32_t>(i));
  }
  const int64_t num_candidates = static_cast<int64_t>(candidates.size());
  std::vector<DreamSample> samples(candidates.size());
  // Rows are independent and every draw is keyed by (step, position, id): the result does not
  // depend on how rows are split across threads.
  ParallelFor(num_candidates, 4, [&](int64_t begin, int64_t end) {
    DreamScratch scratch;
    for (int64_t c = begin; c < end; ++c) {
      const int64_t i = candidates[static_cast<size_t>(c)];
      samples[static_cast<size_t>(c)] =
          DreamSampleTokens(row(i), params_, rng_, step32,
                            static_cast<uint32_t>(masked_[static_cast<size_t>(i)]), scratch);
    }
  });

  std::vector<int32_t> chosen;  // indices into candidates, in commit order
  if (params_.alg == DreamAlg::kOrigin) {
    chosen.reserve(candidates.size());
    for (size_t c = 0; c < candidates.size(); ++c) chosen.push_back(static_cast<int32_t>(c));
  } else {
    const int64_t k = DreamNumTransfer(num_masked, timesteps_, step_);
    if (k > 0) {
      std::vector<double> scores(samples.size());
      for (size_t c = 0; c < samples.size(); ++c) {
        double s = samples[c].confidence;
        if (params_.alg_temp > 0) {
          const double u =
              rng_.Uniform(RngStream::kDreamAlgTemp, step32, static_cast<uint32_t>(masked_[c]), 0);
          s = u > 0 ? s / params_.alg_temp - std::log(-std::log(u))
                    : -std::numeric_limits<double>::infinity();
        }
        scores[c] = s;
      }
      chosen = SelectTopK(scores, k);
    }
  }
  if (result != nullptr) {
    result->Reset();
    result->step = step_;
    result->num_transfer = static_cast<int64_t>(chosen.size());
  }
  for (int32_t c : chosen) {
    const int32_t i = candidates[static_cast<size_t>(c)];
    const int32_t pos = masked_[static_cast<size_t>(i)];
    canvas_[static_cast<size_t>(pos)] = samples[static_cast<size_t>(c)].token;
    commit_lp_.Record(pos - prompt_length_, row(i), samples[static_cast<size_t>(c)].token);
    if (result != nullptr) result->committed_positions.push_back(pos);
  }
  ++step_;
  planned_ = false;
  return Status::Ok();
}

Status DreamDecoder::EnableLogprobs(int32_t k) {
  if (k < 0 || k > 20) {
    return InvalidArgumentError("logprobs: k must be in [0, 20], got " + std::to_string(k));
  }
  commit_lp_.Enable(k, static_cast<int64_t>(generated().size()));
  return Status::Ok();
}

}  // namespace unmask
