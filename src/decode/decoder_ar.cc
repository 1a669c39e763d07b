#include "decode/decoder_ar.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/rng.h"

namespace unmask {

std::string_view ArFinishName(ArFinish f) {
  switch (f) {
    case ArFinish::kEos:
    case ArFinish::kStopped:
      return "stop";
    case ArFinish::kLength:
    case ArFinish::kContext:
      return "length";
    default:
      return "";
  }
}

StatusOr<ArDecoder> ArDecoder::Create(const ArParams& params, ArTokenIds ids,
                                      std::span<const int32_t> prompt, int64_t context_length,
                                      int64_t vocab_size, Drafter* drafter, int32_t kv_seq) {
  UNMASK_RETURN_IF_ERROR(ValidateSamplingParams(params.sampling));
  if (prompt.empty()) {
    return InvalidArgumentError("the prompt is empty (an AR model needs at least one token)");
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab_size) {
      return InvalidArgumentError("prompt token " + std::to_string(prompt[i]) + " at index " +
                                  std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(vocab_size) + ")");
    }
  }
  if (static_cast<int64_t>(prompt.size()) >= context_length) {
    return InvalidArgumentError("the prompt has " + std::to_string(prompt.size()) +
                                " tokens; the context holds " + std::to_string(context_length) +
                                ", which leaves no room to generate");
  }
  if (params.n_predict < -1) {
    return InvalidArgumentError("n_predict must be -1 (until EOS or a full context) or >= 0");
  }
  if (params.logprobs < -1 || params.logprobs > kMaxTopLogprobs) {
    return InvalidArgumentError("logprobs must be -1 (off) or in [0, " +
                                std::to_string(kMaxTopLogprobs) + "], got " +
                                std::to_string(params.logprobs));
  }
  if (params.draft_max < 1 || params.draft_max > kMaxDraft) {
    return InvalidArgumentError("draft_max must be in [1, " + std::to_string(kMaxDraft) +
                                "] (a verification of up to 16 tokens stays bit-exact), got " +
                                std::to_string(params.draft_max));
  }
  ArDecoder d;
  d.params_ = params;
  d.ids_ = ids;
  d.sampler_ = Sampler(params.sampling);
  d.drafter_ = drafter;
  d.kv_seq_ = kv_seq;
  d.prompt_length_ = static_cast<int64_t>(prompt.size());
  d.context_length_ = context_length;
  d.vocab_size_ = vocab_size;
  d.tokens_.assign(prompt.begin(), prompt.end());
  if (params.n_predict == 0) d.finish_ = ArFinish::kLength;
  return d;
}

std::span<const int32_t> ArDecoder::generated() const {
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(prompt_length_));
}

StatusOr<const BatchPlan*> ArDecoder::Plan() {
  if (Done()) return FailedPreconditionError("AR decoder: Plan() after the generation ended");
  const int64_t len = static_cast<int64_t>(tokens_.size());
  draft_.tokens.clear();
  draft_.q.clear();
  draft_.parents.clear();
  if (drafter_ != nullptr) {
    // A step commits the accepted drafts plus one token: never draft past the budget or context.
    int64_t room = context_length_ - len - 1;
    if (params_.n_predict >= 0) {
      room = std::min(room, params_.n_predict - static_cast<int64_t>(generated().size()) - 1);
    }
    const int64_t max = std::min<int64_t>(params_.draft_max, room);
    if (max > 0) {
      UNMASK_RETURN_IF_ERROR(drafter_->Propose(tokens_, max, &draft_));
      if (static_cast<int64_t>(draft_.tokens.size()) > max) {
        // A prefix of a tree is a tree: its parents come first.
        draft_.tokens.resize(static_cast<size_t>(max));
        draft_.q.resize(static_cast<size_t>(max));
        if (!draft_.parents.empty()) draft_.parents.resize(static_cast<size_t>(max));
      }
    }
  }
  feed_.assign(tokens_.begin() + cached_, tokens_.end());
  const int32_t first_row = static_cast<int32_t>(feed_.size()) - 1;
  feed_.insert(feed_.end(), draft_.tokens.begin(), draft_.tokens.end());
  rows_.clear();
  for (int32_t r = first_row; r < static_cast<int32_t>(feed_.size()); ++r) rows_.push_back(r);
  plan_.sequences.assign(1, SequenceInput{feed_, static_cast<int32_t>(cached_), rows_, kv_seq_});
  SequenceInput& seq = plan_.sequences[0];
  tree_parents_.clear();
  if (!draft_.parents.empty()) {
    // The uncached tail is a chain; draft i hangs below its parent draft or the tail's last token.
    for (int32_t i = 0; i <= first_row; ++i) tree_parents_.push_back(i - 1);
    for (int32_t p : draft_.parents) tree_parents_.push_back(p < 0 ? first_row : first_row + 1 + p);
    seq.tree_parents = tree_parents_;
  }
  seq.kv_keep = kv_keep_;  // the last tree step's accepted path, moved into place first
  // The prefill gives a drafter that reads every prompt position's state all of them.
  seq.all_features =
      wants_features() && nfe_ == 0 && draft_.tokens.empty() && drafter_->wants_prompt_features();
  all_features_ = seq.all_features;
  planned_ = true;
  return &plan_;
}

bool ArDecoder::Commit(int32_t t, std::span<const float> row, ArStepResult* result) {
  if (params_.logprobs >= 0) logprobs_.push_back(LogprobOf(row, t, params_.logprobs));
  tokens_.push_back(t);
  result->tokens.push_back(t);
  if (constraint_ != nullptr && (!constraint_->Accept(t).ok() || constraint_->Complete())) {
    // Accept cannot fail for a token drawn from the masked row; Complete: nothing may follow.
    finish_ = ArFinish::kStopped;
  }
  const int64_t generated = static_cast<int64_t>(tokens_.size()) - prompt_length_;
  if (finish_ != ArFinish::kNone) {
    // ended by the constraint
  } else if (!params_.ignore_eos && (t == ids_.eos || t == ids_.eot) && t >= 0) {
    finish_ = ArFinish::kEos;
  } else if (params_.n_predict >= 0 && generated >= params_.n_predict) {
    finish_ = ArFinish::kLength;
  } else if (static_cast<int64_t>(tokens_.size()) >= context_length_) {
    finish_ = ArFinish::kContext;
  }
  return finish_ == ArFinish::kNone;
}

std::span<const float> ArDecoder::MaskedRow(std::span<const float> row) {
  if (constraint_ == nullptr) return row;
  const std::span<const uint8_t> allowed = constraint_->Allowed();
  masked_.assign(row.begin(), row.end());
  bool any = false;
  const size_t n = std::min(masked_.size(), allowed.size());
  for (size_t v = 0; v < n; ++v) {
    if (allowed[v] == 0) {
      masked_[v] = -std::numeric_limits<float>::infinity();
    } else {
      any = true;
    }
  }
  for (size_t v = n; v < masked_.size(); ++v) {  // ids the constraint's vocabulary lacks
    masked_[v] = -std::numeric_limits<float>::infinity();
  }
  if (!any) return {};
  return masked_;
}

Status ArDecoder::Update(const TensorView& logits, ArStepResult* out) {
  ArStepResult scratch;
  ArStepResult* result = out != nullptr ? out : &scratch;
  if (!planned_) return FailedPreconditionError("AR decoder: Update() without a Plan()");
  const int64_t rows = static_cast<int64_t>(rows_.size());
  if (logits.dtype != DType::kF32 || logits.shape.rank() != 2 || logits.shape[0] != rows ||
      logits.shape[1] != vocab_size_) {
    return InvalidArgumentError("AR decoder: logits must be f32 [" + std::to_string(rows) + ", " +
                                std::to_string(vocab_size_) + "], got " + logits.shape.ToString());
  }
  planned_ = false;
  result->Reset();
  result->step = nfe_;
  ++nfe_;
  const int64_t k = static_cast<int64_t>(draft_.tokens.size());
  result->drafted = k;
  result->accepted = 0;
  const int64_t pos0 = cached_;
  const CounterRng rng(params_.sampling.seed);
  history_.assign(tokens_.begin(), tokens_.end());
  kv_keep_.clear();  // applied by the forward just run
  path_.clear();
  if (!draft_.parents.empty()) {
    VerifyTree(logits, rng, result);
    const int64_t tail = static_cast<int64_t>(feed_.size()) - k;
    // Cached now: the tail, and the accepted drafts once the next forward has moved their rows
    // (written at pos0 + tail + draft index) into place.
    cached_ = pos0 + tail + static_cast<int64_t>(path_.size());
    for (int32_t j : path_) kv_keep_.push_back(static_cast<int32_t>(pos0 + tail + j));
    feature_rows_.assign(1, 0);
    for (int32_t j : path_) feature_rows_.push_back(1 + j);
  } else {
    VerifyChain(logits, rng, result);
    cached_ = pos0 + static_cast<int64_t>(feed_.size()) - k + result->accepted;
    feature_rows_.clear();
    for (int64_t r = 0; r <= result->accepted; ++r)
      feature_rows_.push_back(static_cast<int32_t>(r));
  }
  PassFeatures(rows, result);
  if (constraint_ != nullptr) {
    // A grammar that became too ambiguous to follow fails the request rather than ending it.
    const Status cs = constraint_->status();
    if (!cs.ok()) {
      finish_ = ArFinish::kStopped;
      return cs;
    }
  }
  if (drafter_ != nullptr) {
    ++spec_.steps;
    spec_.drafted += k;
    spec_.accepted += result->accepted;
  }
  return Status::Ok();
}

void ArDecoder::VerifyChain(const TensorView& logits, const CounterRng& rng, ArStepResult* result) {
  const int64_t k = static_cast<int64_t>(draft_.tokens.size());
  for (int64_t i = 0; i <= k; ++i) {
    const std::span<const float> row(logits.as<float>() + i * vocab_size_,
                                     static_cast<size_t>(vocab_size_));
    const std::span<const float> sample_row = MaskedRow(row);
    if (sample_row.empty()) {  // the grammar allows nothing more: end here
      finish_ = ArFinish::kStopped;
      break;
    }
    const TokenDistribution p = sampler_.Distribution(sample_row, history_);
    const uint32_t position = static_cast<uint32_t>(tokens_.size());
    if (i == k) {  // every draft accepted (or none): draw from p
      const int32_t t =
          p.ids.size() == 1 ? p.ids[0] : p.Draw(rng.Uniform(RngStream::kSampling, position, 0, 0));
      Commit(t, row, result);
      break;
    }
    const int32_t d = draft_.tokens[static_cast<size_t>(i)];
    const double q = draft_.q[static_cast<size_t>(i)].Prob(d);
    const double u = rng.Uniform(RngStream::kSpecAccept, position, 0, 0);
    if (q > 0 && u < std::min(1.0, p.Prob(d) / q)) {
      ++result->accepted;
      if (!Commit(d, row, result)) break;
      history_.push_back(d);
      continue;
    }
    // Rejected: draw from the residual norm(max(p - q, 0)).
    const TokenDistribution& qd = draft_.q[static_cast<size_t>(i)];
    TokenDistribution residual;
    double sum = 0;
    for (size_t j = 0; j < p.ids.size(); ++j) {
      const double r = std::max(0.0, p.probs[j] - qd.Prob(p.ids[j]));
      if (r > 0) {
        residual.ids.push_back(p.ids[j]);
        residual.probs.push_back(r);
        sum += r;
      }
    }
    if (sum <= 0) residual = p;  // unreachable for a rejection; keeps the draw well defined
    for (double& r : residual.probs) r /= sum > 0 ? sum : 1.0;
    const int32_t t = residual.ids.size() == 1
                          ? residual.ids[0]
                          : residual.Draw(rng.Uniform(RngStream::kSpecResidual, position, 0, 0));
    Commit(t, row, result);
    break;
  }
}

void ArDecoder::VerifyTree(const TensorView& logits, const CounterRng& rng, ArStepResult* result) {
  const int64_t k = static_cast<int64_t>(draft_.tokens.size());
  int32_t node = -1;  // the last accepted draft (-1: the committed context)
  int64_t row_index = 0;
  for (;;) {
    const std::span<const float> row(logits.as<float>() + row_index * vocab_size_,
                                     static_cast<size_t>(vocab_size_));
    const std::span<const float> sample_row = MaskedRow(row);
    if (sample_row.empty()) {  // the grammar allows nothing more: end here
      finish_ = ArFinish::kStopped;
      return;
    }
    TokenDistribution p = sampler_.Distribution(sample_row, history_);
    const uint32_t position = static_cast<uint32_t>(tokens_.size());
    // The children of `node`, most likely first, each accepted with its probability under p
    // renormalised over the children not yet rejected; a rejected child's probability is removed
    // from p (EAGLE's multi-round speculative sampling with deterministic drafts). Greedy: p is a
    // point mass, so the child equal to the target's argmax is accepted and no other.
    int32_t accepted = -1;
    uint32_t tried = 0;
    for (int32_t j = node + 1; j < static_cast<int32_t>(k) && accepted < 0; ++j) {
      if (draft_.parents[static_cast<size_t>(j)] != node) continue;
      const int32_t d = draft_.tokens[static_cast<size_t>(j)];
      const double pd = p.Prob(d);
      const double u = rng.Uniform(RngStream::kSpecAccept, position, tried++, 0);
      if (pd > 0 && u < pd) {
        accepted = j;
        break;
      }
      if (pd > 0) p = p.Without(d);
    }
    if (accepted >= 0) {
      ++result->accepted;
      path_.push_back(accepted);
      const int32_t d = draft_.tokens[static_cast<size_t>(accepted)];
      if (!Commit(d, row, result)) return;
      history_.push_back(d);
      node = accepted;
      row_index = 1 + accepted;
      continue;
    }
    // No child accepted (or none drafted): draw from what is left of p.
    const int32_t t = p.ids.size() == 1
                          ? p.ids[0]
                          : p.Draw(rng.Uniform(RngStream::kSpecResidual, position, 0, 0));
    Commit(t, row, result);
    return;
  }
}

void ArDecoder::PassFeatures(int64_t rows, const ArStepResult* result) {
  if (!wants_features()) return;
  const int64_t width = drafter_->feature_size();
  const TensorView f = features_;
  features_ = TensorView{};
  if (f.data == nullptr || f.dtype != DType::kF32 || f.shape.rank() != 2 || f.shape[1] != width ||
      result->tokens.empty()) {
    return;  // no features this step: the drafter proposes nothing next
  }
  const float* h = f.as<float>();
  if (all_features_) {
    // The prefill's every position (SequenceInput::all_features): row i gave the token after
    // prompt position i, the last row the first generated token.
    if (f.shape[0] != static_cast<int64_t>(feed_.size())) return;
    drafter_->ObserveFeatures(std::span<const float>(h, static_cast<size_t>(f.shape[0] * width)),
                              f.shape[0], static_cast<int64_t>(tokens_.size()));
    return;
  }
  if (f.shape[0] != rows) return;
  // The rows that gave the committed tokens, in order (a step that ended on an accepted draft
  // committed no token from the last of them).
  const auto n = std::min(feature_rows_.size(), result->tokens.size());
  gathered_.resize(n * static_cast<size_t>(width));
  for (size_t i = 0; i < n; ++i) {
    std::copy_n(h + feature_rows_[i] * width, width, gathered_.data() + i * width);
  }
  drafter_->ObserveFeatures(gathered_, static_cast<int64_t>(n),
                            static_cast<int64_t>(tokens_.size()));
}

}  // namespace unmask
