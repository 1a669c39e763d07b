#include "decode/decoder_block_diffusion.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "ops/softmax.h"
#include "sampling/top_k.h"

namespace unmask {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Sampled {
  int32_t token = 0;
  double confidence = 0;
  double entropy = 0;
};

// SDAR's entropy of a distribution: -sum_v max(p_v, 1e-12) log max(p_v, 1e-12) over every id
// (the clamp_min(eps) of generate.py's entropy_bounded branch), for p = softmax(l).
double Entropy(const std::vector<double>& l, double max, double total) {
  constexpr double kEps = 1e-12;
  double h = 0;
  for (double x : l) {
    const double p = std::max(std::exp(x - max) / total, kEps);
    h -= p * std::log(p);
  }
  return h;
}

// SDAR sample_with_temperature_topk_topp for one row (see the header), in float64.
Sampled SampleRow(std::span<const float> logits, const BlockParams& p, const CounterRng& rng,
                  uint32_t step, uint32_t position, bool want_entropy, std::vector<double>& l,
                  std::vector<int32_t>& order) {
  const size_t n = logits.size();
  const bool top_k = p.top_k > 0 && static_cast<size_t>(p.top_k) < n;
  if (p.temperature == 0 && !top_k && p.top_p >= 1.0 && !want_entropy) {
    // The common greedy case without filters: argmax and 1 / sum exp(l - max), f32 terms summed
    // in f64 (SumExpShifted), without a float64 copy of the row.
    size_t best = 0;
    for (size_t v = 1; v < n; ++v) {
      if (logits[v] > logits[best]) best = v;  // the lowest id on ties
    }
    Sampled s;
    s.token = static_cast<int32_t>(best);
    s.confidence = 1.0 / SumExpShifted(logits.data(), static_cast<int64_t>(n), logits[best]);
    return s;
  }
  l.assign(logits.begin(), logits.end());
  if (p.temperature > 0) {
    for (double& x : l) x /= p.temperature;
  }
  if (top_k) {
    std::vector<double> sorted(l);
    std::nth_element(sorted.begin(), sorted.begin() + (p.top_k - 1), sorted.end(),
                     std::greater<double>());
    const double kth = sorted[static_cast<size_t>(p.top_k - 1)];
    for (double& x : l) {
      if (x < kth) x = -kInf;
    }
  }
  if (p.top_p < 1.0) {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
    const double max = l[static_cast<size_t>(order[0])];
    double total = 0;
    for (double x : l) total += std::exp(x - max);
    // Entry i is removed when the cumulative probability up to and including the entry before it
    // exceeds top_p (the reference's mask shifted right by one: the first is always kept).
    double cum = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t v = static_cast<size_t>(order[i]);
      const bool remove = i > 0 && cum > p.top_p;
      cum += std::exp(l[v] - max) / total;
      if (remove) l[v] = -kInf;
    }
  }
  size_t best = 0;
  for (size_t v = 1; v < n; ++v) {
    if (l[v] > l[best]) best = v;  // the lowest id on ties
  }
  const double max = l[best];
  double total = 0;
  for (double x : l) total += std::exp(x - max);
  Sampled s;
  if (p.temperature == 0) {
    s.token = static_cast<int32_t>(best);
  } else {
    const double u = rng.Uniform(RngStream::kSampling, step, position, 0);
    double cum = 0;
    s.token = static_cast<int32_t>(best);  // rounding: u above the last cumulative sum
    for (size_t v = 0; v < n; ++v) {
      if (l[v] == -kInf) continue;
      cum += std::exp(l[v] - max) / total;
      if (u < cum) {
        s.token = static_cast<int32_t>(v);
        break;
      }
    }
  }
  s.confidence = std::exp(l[static_cast<size_t>(s.token)] - max) / total;
  if (want_entropy) s.entropy = Entropy(l, max, total);
  return s;
}

}  // namespace

StatusOr<BlockDiffusionDecoder> BlockDiffusionDecoder::Create(const BlockParams& params,
                                                              int32_t mask_id,
                                                              std::span<const int32_t> prompt,
                                                              int64_t context_length,
                                                              int64_t vocab_size, int32_t kv_seq) {
  const int64_t lp = static_cast<int64_t>(prompt.size());
  UNMASK_RETURN_IF_ERROR(ValidateBlockParams(params, lp, context_length));
  UNMASK_RETURN_IF_ERROR(CheckMaskAndPrompt(mask_id, prompt, vocab_size));
  BlockDiffusionDecoder d;
  d.params_ = params;
  d.schedule_ = BlockTransferSchedule(params.block_length, params.denoising_steps);
  d.mask_id_ = mask_id;
  d.vocab_size_ = vocab_size;
  d.prompt_length_ = lp;
  d.num_blocks_ = params.num_blocks(lp);
  d.canvas_.assign(static_cast<size_t>(d.num_blocks_ * params.block_length), mask_id);
  std::copy(prompt.begin(), prompt.end(), d.canvas_.begin());
  d.kv_seq_ = kv_seq;
  d.rng_ = CounterRng(params.seed);
  d.block_ = lp / params.block_length;  // the first block with masks
  d.phase_ = d.block_ > 0 && params.separate_store ? Phase::kPrefill : Phase::kDenoise;
  return d;
}

std::span<const int32_t> BlockDiffusionDecoder::generated() const {
  return std::span<const int32_t>(canvas_).subspan(static_cast<size_t>(prompt_length_));
}

int64_t BlockDiffusionDecoder::MaskedInBlock() const {
  const auto b = canvas_.begin() + BlockStart();
  return std::count(b, b + params_.block_length, mask_id_);
}

StatusOr<const BatchPlan*> BlockDiffusionDecoder::Plan() {
  if (Done()) return FailedPreconditionError("BlockDiffusionDecoder::Plan after Done()");
  const int64_t b = params_.block_length;
  plan_rows_.clear();
  SequenceInput seq;
  seq.kv_seq = kv_seq_;
  seq.block_length = static_cast<int32_t>(b);  // the mask follows the decoding block length
  if (phase_ == Phase::kPrefill) {
    seq.tokens = std::span<const int32_t>(canvas_).first(static_cast<size_t>(block_ * b));
    seq.pos0 = 0;
  } else {
    // Fused schedule: the clean positions not yet cached ride in front of the block.
    const int64_t from = params_.separate_store ? BlockStart() : cached_;
    seq.tokens = std::span<const int32_t>(canvas_).subspan(
        static_cast<size_t>(from), static_cast<size_t>(BlockStart() + b - from));
    seq.pos0 = static_cast<int32_t>(from);
    if (phase_ == Phase::kDenoise) {
      const int64_t quota =
          block_step_ < params_.denoising_steps ? schedule_[static_cast<size_t>(block_step_)] : 1;
      // Unmasked rows are needed only when the quota can reach them (the edge case), and for
      // token editing (every decoded non-prompt slot may be rewritten).
      const bool joint = params_.remasking == BlockRemasking::kJointThreshold;
      const bool all_rows = params_.overcommit && quota > MaskedInBlock() &&
                            params_.remasking != BlockRemasking::kSequential &&
                            params_.remasking != BlockRemasking::kEntropyBounded && !joint;
      for (int64_t j = 0; j < b; ++j) {
        const int64_t pos = BlockStart() + j;
        if (joint ? pos >= prompt_length_
                  : all_rows || canvas_[static_cast<size_t>(pos)] == mask_id_) {
          plan_rows_.push_back(static_cast<int32_t>(j));
        }
      }
    }
  }
  logit_rows_.clear();
  const int64_t offset = BlockStart() - seq.pos0;
  for (int32_t j : plan_rows_) logit_rows_.push_back(static_cast<int32_t>(offset + j));
  seq.logit_rows = logit_rows_;
  plan_.sequences.assign(1, seq);
  planned_ = true;
  return &plan_;
}

void BlockDiffusionDecoder::Advance() {
  const int64_t end = BlockStart() + params_.block_length;
  const auto gen_begin = canvas_.begin() + prompt_length_;
  for (int32_t id : params_.stop_ids) {
    if (std::find(gen_begin, canvas_.begin() + end, id) != canvas_.begin() + end) {
      finish_ = DecodeFinish::kEos;
      return;
    }
  }
  ++block_;
  block_step_ = 0;
  if (block_ >= num_blocks_) {
    finish_ = DecodeFinish::kLength;
    return;
  }
  phase_ = MaskedInBlock() > 0 ? Phase::kDenoise : Phase::kStore;
}

Status BlockDiffusionDecoder::Update(const TensorView& logits, DecodeStep* step) {
  if (Done()) return FailedPreconditionError("BlockDiffusionDecoder::Update after Done()");
  if (!planned_) return FailedPreconditionError("BlockDiffusionDecoder::Update without Plan()");
  const int64_t rows = static_cast<int64_t>(plan_rows_.size());
  UNMASK_RETURN_IF_ERROR(CheckLogitsShape(logits, rows, vocab_size_));
  planned_ = false;
  DecodeStep local;
  DecodeStep& out = step != nullptr ? *step : local;
  out.Reset();
  out.step = nfe_;
  out.block = block_;
  ++nfe_;
  if (phase_ == Phase::kPrefill) {
    cached_ = BlockStart();
    phase_ = MaskedInBlock() > 0 ? Phase::kDenoise : Phase::kStore;
    return Status::Ok();
  }
  if (phase_ == Phase::kStore) {
    cached_ = BlockStart() + params_.block_length;
    Advance();
    return Status::Ok();
  }
  cached_ = BlockStart();  // the fed clean positions in front of the block are cached now
  // The sampling stream follows the denoising forwards, so both schedules draw the same.
  const uint32_t rng_step = static_cast<uint32_t>(denoise_forwards_++);

  const int64_t b = params_.block_length, start = BlockStart();
  int32_t* x = canvas_.data() + start;
  std::vector<double> conf(static_cast<size_t>(b), -kInf), entropy(static_cast<size_t>(b), kInf);
  std::vector<int32_t> x0(static_cast<size_t>(b), -1);
  std::vector<double>& edit_conf = edit_conf_;
  edit_conf.assign(static_cast<size_t>(b), -kInf);
  std::vector<double> scratch;
  std::vector<int32_t> order;
  const bool want_entropy = params_.remasking == BlockRemasking::kEntropyBounded;
  step_logits_ = logits.as<float>();
  if (commit_lp_.enabled()) row_of_j_.assign(static_cast<size_t>(b), -1);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t j = plan_rows_[static_cast<size_t>(r)];
    const std::span<const float> row(logits.as<float>() + r * vocab_size_,
                                     static_cast<size_t>(vocab_size_));
    if (commit_lp_.enabled()) row_of_j_[static_cast<size_t>(j)] = r;
    const Sampled s = SampleRow(row, params_, rng_, rng_step, static_cast<uint32_t>(start + j),
                                want_entropy, scratch, order);
    x0[static_cast<size_t>(j)] = s.token == mask_id_ ? BestNonMaskToken(row, mask_id_) : s.token;
    if (x[j] == mask_id_) {
      conf[static_cast<size_t>(j)] = s.confidence;
      entropy[static_cast<size_t>(j)] = s.entropy;
    } else {
      edit_conf[static_cast<size_t>(j)] = s.confidence;  // joint_threshold's T2T
    }
  }
  if (params_.remasking == BlockRemasking::kJointThreshold) {
    return UpdateJoint(x, x0, conf, out);
  }
  const int64_t masked = MaskedInBlock();
  const int64_t scheduled =
      block_step_ < params_.denoising_steps ? schedule_[static_cast<size_t>(block_step_)] : 1;
  // SDAR's quirk: the quota may exceed the masks left and re-commit decoded slots; LLaDA 2.x
  // caps it at the masks left (overcommit false).
  const int64_t quota = params_.overcommit ? scheduled : std::min(scheduled, masked);
  std::vector<int32_t> chosen;
  switch (params_.remasking) {
    case BlockRemasking::kSequential: {
      int64_t first = 0;
      while (x[first] != mask_id_) ++first;
      for (int64_t j = first; j < std::min(b, first + quota); ++j) {
        chosen.push_back(static_cast<int32_t>(j));
      }
      break;
    }
    case BlockRemasking::kLowConfidenceStatic:
      chosen = SelectTopK(conf, quota);
      break;
    case BlockRemasking::kLowConfidenceDynamic: {
      for (int64_t j = 0; j < b; ++j) {
        if (conf[static_cast<size_t>(j)] > params_.confidence_threshold) {
          chosen.push_back(static_cast<int32_t>(j));
        }
      }
      if (static_cast<int64_t>(chosen.size()) < quota) chosen = SelectTopK(conf, quota);
      break;
    }
    case BlockRemasking::kEntropyBounded: {
      std::vector<int32_t> by_entropy(static_cast<size_t>(b));
      std::iota(by_entropy.begin(), by_entropy.end(), 0);
      std::stable_sort(by_entropy.begin(), by_entropy.end(), [&](int32_t a, int32_t c) {
        return entropy[static_cast<size_t>(a)] < entropy[static_cast<size_t>(c)];
      });
      int64_t k = 0;
      double cum = 0;
      for (int32_t j : by_entropy) {
        cum += entropy[static_cast<size_t>(j)];
        if (!(cum < params_.eb_threshold)) break;
        ++k;
      }
      k = std::clamp<int64_t>(k, 1, masked);
      chosen.assign(by_entropy.begin(), by_entropy.begin() + k);
      break;
    }
    case BlockRemasking::kJointThreshold:  // UpdateJoint
      break;
  }
  for (int32_t j : chosen) {
    x[j] = x0[static_cast<size_t>(j)];
    RecordCommit(start, j, x0[static_cast<size_t>(j)]);
    out.committed_positions.push_back(static_cast<int32_t>(start + j));
  }
  ++block_step_;
  if (MaskedInBlock() == 0) {
    if (params_.separate_store) {
      phase_ = Phase::kStore;
    } else {
      Advance();  // the next block's first forward stores this one
    }
  }
  return Status::Ok();
}

// joint_threshold (see block_params.h): M2T + T2T on the block, the post-edit budget, and the
// block's end at the first step that changes nothing.
Status BlockDiffusionDecoder::UpdateJoint(int32_t* x, const std::vector<int32_t>& x0,
                                          const std::vector<double>& conf, DecodeStep& out) {
  const int64_t b = params_.block_length, start = BlockStart();
  const int64_t masked = MaskedInBlock();
  std::vector<int32_t> chosen;
  bool budget_spent = false;
  if (masked > 0) {
    for (int64_t j = 0; j < b; ++j) {
      if (conf[static_cast<size_t>(j)] > params_.confidence_threshold) {
        chosen.push_back(static_cast<int32_t>(j));
      }
    }
    if (chosen.empty()) chosen = SelectTopK(conf, 1);
  } else {
    budget_spent = ++post_edit_steps_ > params_.max_post_edit_steps;
  }
  if (!budget_spent) {
    for (int64_t j = 0; j < b; ++j) {
      const size_t u = static_cast<size_t>(j);
      if (start + j < prompt_length_ || x[j] == mask_id_) continue;
      if (x0[u] != x[j] && edit_conf_[u] > params_.edit_threshold) {
        chosen.push_back(static_cast<int32_t>(j));
      }
    }
  }
  if (budget_spent || chosen.empty()) {
    // Nothing changed: this forward wrote the block's final K/V, the next block need not re-feed
    // it.
    cached_ = start + b;
    FinishJointBlock();
    return Status::Ok();
  }
  for (int32_t j : chosen) {
    x[j] = x0[static_cast<size_t>(j)];
    RecordCommit(start, j, x0[static_cast<size_t>(j)]);
    out.committed_positions.push_back(static_cast<int32_t>(start + j));
  }
  ++block_step_;
  if (block_step_ >= b + params_.max_post_edit_steps) {
    // The iteration cap with a change in the last step: the block's K/V must be written again
    // (the separate store forward, or the next block's first forward re-feeds it).
    if (params_.separate_store) {
      phase_ = Phase::kStore;
    } else {
      FinishJointBlock();
    }
  }
  return Status::Ok();
}

void BlockDiffusionDecoder::FinishJointBlock() {
  post_edit_steps_ = 0;
  Advance();
}

std::span<const int32_t> BlockDiffusionDecoder::committed() const {
  const std::span<const int32_t> gen = Decoder::committed();  // up to the first mask
  if (Done()) return gen;
  const int64_t finished = std::max<int64_t>(BlockStart() - prompt_length_, 0);
  return gen.first(std::min(gen.size(), static_cast<size_t>(finished)));
}

void BlockDiffusionDecoder::RecordCommit(int64_t start, int32_t j, int32_t token) {
  if (!commit_lp_.enabled()) return;
  const int64_t r = row_of_j_[static_cast<size_t>(j)];
  if (r < 0) return;
  commit_lp_.Record(
      start + j - prompt_length_,
      std::span<const float>(step_logits_ + r * vocab_size_, static_cast<size_t>(vocab_size_)),
      token);
}

Status BlockDiffusionDecoder::EnableLogprobs(int32_t k) {
  if (k < 0 || k > 20) {
    return InvalidArgumentError("logprobs: k must be in [0, 20], got " + std::to_string(k));
  }
  commit_lp_.Enable(k, static_cast<int64_t>(canvas_.size()) - prompt_length_);
  return Status::Ok();
}

}  // namespace unmask
