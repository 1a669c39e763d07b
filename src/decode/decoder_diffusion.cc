#include "decode/decoder_diffusion.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/parallel.h"
#include "decode/schedule.h"
#include "sampling/token_choice.h"
#include "sampling/top_k.h"

namespace unmask {

StatusOr<DiffusionDecoder> DiffusionDecoder::Create(const DiffusionParams& params,
                                                    DiffusionTokenIds ids,
                                                    std::span<const int32_t> prompt,
                                                    int64_t context_length, int64_t vocab_size,
                                                    bool shift_logits,
                                                    std::span<const int32_t> suffix) {
  UNMASK_RETURN_IF_ERROR(
      ValidateDiffusionParams(params, static_cast<int64_t>(prompt.size()), context_length));
  if (ids.mask < 0 || ids.mask >= vocab_size) {
    return InvalidArgumentError("the model has no valid mask token id (got " +
                                std::to_string(ids.mask) + ")");
  }
  if (params.logits_eos_inf && (ids.eos < 0 || ids.eos >= vocab_size)) {
    return InvalidArgumentError("logits_eos_inf needs an EOS token, but the model has none");
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab_size) {
      return InvalidArgumentError("prompt token id " + std::to_string(prompt[i]) + " at index " +
                                  std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(vocab_size) + ")");
    }
  }
  UNMASK_RETURN_IF_ERROR(CheckInfillSuffix(suffix, ids.mask, vocab_size,
                                           static_cast<int64_t>(prompt.size()), params.gen_length,
                                           context_length));
  DiffusionDecoder d;
  d.params_ = params;
  d.ids_ = ids;
  d.prompt_length_ = static_cast<int64_t>(prompt.size());
  d.vocab_size_ = vocab_size;
  d.rng_ = CounterRng(params.seed);
  d.canvas_.assign(prompt.begin(), prompt.end());
  d.canvas_.resize(static_cast<size_t>(d.prompt_length_ + params.gen_length), ids.mask);
  d.canvas_.insert(d.canvas_.end(), suffix.begin(), suffix.end());
  if (params.cfg_scale > 0) {
    d.uncond_ = d.canvas_;
    // The reference masks prompt_index = (x != mask_id) at the start: the prompt positions (and
    // the suffix's: it is part of the condition).
    for (int64_t i = 0; i < d.prompt_length_; ++i) d.uncond_[static_cast<size_t>(i)] = ids.mask;
    for (size_t i = static_cast<size_t>(d.prompt_length_ + params.gen_length); i < d.uncond_.size();
         ++i) {
      d.uncond_[i] = ids.mask;
    }
  }
  d.shift_ = shift_logits;
  if (params.commit == CommitRule::kCredit) {
    d.credit_.emplace(params.credit_alpha, params.credit_beta, params.credit_gamma);
  }
  d.StartBlock();
  return d;
}

int64_t DiffusionDecoder::BlockMasks(int64_t b) const {
  const int64_t begin = BlockBegin(b);
  int64_t masked = 0;
  for (int64_t p = begin; p < begin + params_.block_length; ++p) {
    masked += (canvas_[static_cast<size_t>(p)] == ids_.mask);
  }
  return masked;
}

void DiffusionDecoder::StartBlock() {
  step_in_block_ = 0;
  if (params_.commit == CommitRule::kFixed) {
    // Transfer counts are computed once per block from the masks inside it (reference).
    schedule_ = NumTransferTokens(BlockMasks(block_), params_.steps_per_block());
  }
  if (credit_) credit_->StartBlock(params_.block_length);
}

void DiffusionDecoder::Advance(DiffusionStepResult* result) {
  const bool fixed = params_.commit == CommitRule::kFixed;
  const bool finished =
      fixed ? step_in_block_ >= params_.steps_per_block() : BlockMasks(block_) == 0;
  if (!finished) return;
  if (params_.early_stop) {
    const int64_t begin = BlockBegin(block_);
    bool has_eos = false;
    for (int64_t p = begin; p < begin + params_.block_length; ++p) {
      const int32_t t = canvas_[static_cast<size_t>(p)];
      has_eos |= (t == ids_.eos && t >= 0) || (t == ids_.eot && t >= 0);
    }
    if (has_eos && ids_.eos >= 0) {
      const size_t gen_end = static_cast<size_t>(prompt_length_ + params_.gen_length);
      for (size_t p = static_cast<size_t>(begin + params_.block_length); p < gen_end; ++p) {
        canvas_[p] = ids_.eos;
      }
      if (result != nullptr) result->early_stopped = block_ + 1 < params_.num_blocks();
      done_ = true;
      finish_ = DecodeFinish::kEos;
      return;
    }
  }
  ++block_;
  // A dynamic rule skips blocks without masks; the fixed schedule spends its steps regardless
  // (reference).
  while (!fixed && block_ < params_.num_blocks() && BlockMasks(block_) == 0) ++block_;
  if (block_ >= params_.num_blocks()) {
    done_ = true;
    finish_ = DecodeFinish::kLength;
    block_ = params_.num_blocks() - 1;
    return;
  }
  StartBlock();
}

void DiffusionDecoder::Stop() {
  if (done_) return;
  done_ = true;
  finish_ = DecodeFinish::kStopped;
  planned_ = false;
}

std::span<const int32_t> DiffusionDecoder::generated() const {
  return std::span<const int32_t>(canvas_).subspan(static_cast<size_t>(prompt_length_),
                                                   static_cast<size_t>(params_.gen_length));
}

int64_t DiffusionDecoder::num_masked() const {
  int64_t n = 0;
  for (int32_t t : canvas_) n += (t == ids_.mask);
  return n;
}

StatusOr<const BatchPlan*> DiffusionDecoder::Plan() {
  if (done_) return FailedPreconditionError("diffusion decoder: Plan() after the last step");
  const int64_t begin = BlockBegin(block_);
  const int64_t end = begin + params_.block_length;
  const int64_t length = static_cast<int64_t>(canvas_.size());
  const bool cached = params_.cache != CacheMode::kNone;
  full_forward_ = !cached || step_in_block_ == 0;
  // Decoded positions: cache none: every masked position before the block end (reference);
  // cached: the block's masked positions.
  rows_.clear();
  for (int64_t p = cached ? begin : 0; p < end; ++p) {
    if (canvas_[static_cast<size_t>(p)] == ids_.mask) rows_.push_back(static_cast<int32_t>(p));
  }
  // The fed window [lo, hi) and whether it overwrites the cache in place.
  int64_t lo = 0, hi = length;
  bool replace = false;
  if (!full_forward_) {
    const int64_t first = shift_ ? begin - 1 : begin;  // shifted logits: s - 1 predicts s
    switch (params_.cache) {
      case CacheMode::kPrefix:
        lo = first;
        break;
      case CacheMode::kDual:
        lo = first, hi = end, replace = true;
        break;
      case CacheMode::kVicinity:
        lo = std::max<int64_t>(0, std::min(first, begin - params_.prefix_look));
        hi = std::min(length, end + params_.after_look), replace = true;
        break;
      case CacheMode::kNone:
        break;
    }
  }
  // Rows ascending and unique: with shifted logits positions 0 and 1 both read row 0 (only
  // possible when the prompt starts with a mask token).
  logit_rows_.clear();
  row_slot_.clear();
  for (int32_t p : rows_) {
    const int32_t row = static_cast<int32_t>((shift_ ? std::max<int64_t>(p - 1, 0) : p) - lo);
    if (logit_rows_.empty() || logit_rows_.back() != row) logit_rows_.push_back(row);
    row_slot_.push_back(static_cast<int32_t>(logit_rows_.size() - 1));
  }
  const std::span<const int32_t> tokens = std::span<const int32_t>(canvas_).subspan(
      static_cast<size_t>(lo), static_cast<size_t>(hi - lo));
  plan_.sequences.clear();
  SequenceInput seq{tokens, static_cast<int32_t>(lo), logit_rows_};
  if (cached) {
    seq.kv_seq = kv_seq_;
    seq.kv_replace = replace;
  }
  plan_.sequences.push_back(seq);
  if (params_.cfg_scale > 0) plan_.sequences.push_back(SequenceInput{uncond_, 0, logit_rows_});
  planned_ = true;
  return &plan_;
}

Status DiffusionDecoder::Update(const TensorView& logits, DiffusionStepResult* result) {
  if (Done()) return FailedPreconditionError("Update called after the last step");
  if (!planned_) return FailedPreconditionError("Update called without Plan() for this step");
  const int64_t num_rows = static_cast<int64_t>(rows_.size());
  const int64_t num_logit_rows = static_cast<int64_t>(logit_rows_.size());
  const int64_t expected_rows = num_logit_rows * (params_.cfg_scale > 0 ? 2 : 1);
  if (logits.dtype != DType::kF32 || logits.shape.rank() != 2 || logits.shape[0] != expected_rows ||
      logits.shape[1] != vocab_size_) {
    return InvalidArgumentError("logits must be f32 [" + std::to_string(expected_rows) + ", " +
                                std::to_string(vocab_size_) + "], got " + logits.shape.ToString());
  }
  const int64_t block = block_;
  const int64_t block_begin = BlockBegin(block_);
  if (credit_) credit_->StartStep();

  const double temperature = params_.temperature;
  const double cfg = params_.cfg_scale;
  const float* cond = logits.as<float>();
  const float* uncond = cond + num_logit_rows * vocab_size_;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // Ids removed from the confidence softmax by confidence_eos_eot_inf (see header).
  std::vector<int32_t> excluded;
  if (params_.confidence_eos_eot_inf) {
    if (temperature == 0 && ids_.eos >= 0) excluded.push_back(ids_.eos);
    if (ids_.eot >= 0) excluded.push_back(ids_.eot);
  }

  std::vector<int32_t> x0(static_cast<size_t>(num_rows));
  std::vector<double> confidence(static_cast<size_t>(num_rows));
  if (combined_.size() < static_cast<size_t>(num_rows * vocab_size_)) {
    combined_.resize(static_cast<size_t>(num_rows * vocab_size_));
  }
  const uint32_t step32 = static_cast<uint32_t>(step_);
  // Rows are independent and every random draw is keyed by (step, position, id): the result does
  // not depend on how rows are split across threads.
  ParallelFor(num_rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t slot = row_slot_[static_cast<size_t>(r)];
      const float* row = cond + slot * vocab_size_;
      const std::span<float> out(combined_.data() + r * vocab_size_,
                                 static_cast<size_t>(vocab_size_));
      if (cfg > 0) {
        const float* un = uncond + slot * vocab_size_;
        for (int64_t v = 0; v < vocab_size_; ++v) {
          out[static_cast<size_t>(v)] =
              static_cast<float>(un[v] + (cfg + 1.0) * (double{row[v]} - un[v]));
        }
      } else {
        std::copy_n(row, vocab_size_, out.begin());
      }
      if (params_.logits_eos_inf) out[static_cast<size_t>(ids_.eos)] = neg_inf;
      // Dynamic rules run a block until it has no mask left: the mask id itself is never a
      // candidate (dInfer's rm_mask), or a block could never finish. The fixed schedule keeps the
      // reference's behaviour (a committed mask id stays masked).
      if (params_.commit != CommitRule::kFixed) out[static_cast<size_t>(ids_.mask)] = neg_inf;
      const uint32_t pos = static_cast<uint32_t>(rows_[static_cast<size_t>(r)]);
      if (credit_ && int64_t{pos} >= block_begin) credit_->Fuse(int64_t{pos} - block_begin, out);
      const int32_t token =
          temperature == 0 ? ArgMax(out) : SampleGumbelMax(out, temperature, rng_, step32, pos);
      x0[static_cast<size_t>(r)] = token;
      confidence[static_cast<size_t>(r)] =
          params_.remasking == Remasking::kRandom
              ? rng_.Uniform(RngStream::kRemaskRandom, step32, pos, 0)
              : SoftmaxProbability(out, token, excluded);
    }
  });

  std::vector<int32_t> chosen;
  switch (params_.commit) {
    case CommitRule::kFixed:
      chosen = SelectTopK(confidence, schedule_[static_cast<size_t>(step_in_block_)]);
      break;
    case CommitRule::kThreshold:
    case CommitRule::kCredit:
      chosen = SelectThreshold(confidence, params_.threshold);
      break;
    case CommitRule::kFactor:
      chosen = SelectFactor(confidence, params_.factor);
      break;
    case CommitRule::kHierarchy:
      chosen = SelectHierarchy(confidence, rows_, params_.threshold, params_.low_threshold);
      break;
  }
  if (result != nullptr) {
    result->Reset();
    result->step = step_;
    result->block = block;
  }
  for (int32_t r : chosen) {
    const int32_t pos = rows_[static_cast<size_t>(r)];
    canvas_[static_cast<size_t>(pos)] = x0[static_cast<size_t>(r)];
    if (!uncond_.empty()) uncond_[static_cast<size_t>(pos)] = x0[static_cast<size_t>(r)];
    if (commit_lp_.enabled()) {
      commit_lp_.Record(pos - prompt_length_,
                        std::span<const float>(combined_.data() + int64_t{r} * vocab_size_,
                                               static_cast<size_t>(vocab_size_)),
                        x0[static_cast<size_t>(r)]);
    }
    if (result != nullptr) result->committed_positions.push_back(pos);
  }
  ++step_;
  ++step_in_block_;
  planned_ = false;
  Advance(result);
  return Status::Ok();
}

Status DiffusionDecoder::EnableLogprobs(int32_t k) {
  if (k < 0 || k > 20) {
    return InvalidArgumentError("logprobs: k must be in [0, 20], got " + std::to_string(k));
  }
  commit_lp_.Enable(k, static_cast<int64_t>(generated().size()));
  return Status::Ok();
}

}  // namespace unmask
