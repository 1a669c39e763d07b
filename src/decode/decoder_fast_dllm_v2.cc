#include "decode/decoder_fast_dllm_v2.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace unmask {
namespace {

// Index of the largest value, the lowest on ties.
int32_t ArgMaxRow(std::span<const float> row) {
  size_t best = 0;
  for (size_t v = 1; v < row.size(); ++v) {
    if (row[v] > row[best]) best = v;
  }
  return static_cast<int32_t>(best);
}

struct Choice {
  int32_t token = 0;
  double confidence = 0;
};

// softmax(row) in float64, its argmax and probability (T = 0), or a draw from the top-p filtered
// softmax(row / T) (T > 0).
Choice ChooseToken(std::span<const float> row, const FastDllmV2Params& p, const CounterRng& rng,
                   uint32_t step, uint32_t position, std::vector<double>& l,
                   std::vector<int32_t>& order) {
  const size_t n = row.size();
  l.assign(row.begin(), row.end());
  if (p.temperature > 0) {
    for (double& x : l) x /= p.temperature;
  }
  size_t best = 0;
  for (size_t v = 1; v < n; ++v) {
    if (l[v] > l[best]) best = v;
  }
  const double max = l[best];
  double total = 0;
  for (double x : l) total += std::exp(x - max);
  Choice c;
  if (p.temperature == 0) {
    c.token = static_cast<int32_t>(best);
    c.confidence = 1.0 / total;  // exp(max - max) / total
    return c;
  }
  // Top-p: keep the most probable ids while the mass before them is below top_p.
  order.resize(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
  double kept = 0;
  size_t num_kept = 0;
  for (; num_kept < n; ++num_kept) {
    if (num_kept > 0 && kept > p.top_p) break;
    kept += std::exp(l[static_cast<size_t>(order[num_kept])] - max) / total;
  }
  const double u = rng.Uniform(RngStream::kSampling, step, position, 0) * kept;
  double cum = 0;
  c.token = order[0];
  for (size_t i = 0; i < num_kept; ++i) {
    const size_t v = static_cast<size_t>(order[i]);
    cum += std::exp(l[v] - max) / total;
    if (u < cum) {
      c.token = static_cast<int32_t>(v);
      break;
    }
  }
  c.confidence = std::exp(l[static_cast<size_t>(c.token)] - max) / total / kept;
  return c;
}

}  // namespace

Status ValidateFastDllmV2Params(const FastDllmV2Params& p, int64_t prompt_length,
                                int64_t context_length) {
  if (p.block_size < 1) return InvalidArgumentError("block_length must be at least 1");
  if (p.small_block_size < 1 || p.block_size % p.small_block_size != 0) {
    return InvalidArgumentError("small_block_length (" + std::to_string(p.small_block_size) +
                                ") must divide block_length (" + std::to_string(p.block_size) +
                                ")");
  }
  if (p.max_new_tokens < p.block_size) {
    return InvalidArgumentError("max_tokens (" + std::to_string(p.max_new_tokens) +
                                ") must be at least block_length (" + std::to_string(p.block_size) +
                                "): Fast-dLLM v2 decodes max_tokens / block_length whole blocks");
  }
  if (!(p.threshold >= 0 && p.threshold <= 1)) {
    return InvalidArgumentError("threshold must be in [0, 1]");
  }
  if (!(p.temperature >= 0) || !std::isfinite(p.temperature)) {
    return InvalidArgumentError("temperature must be a finite number >= 0");
  }
  if (!(p.top_p > 0 && p.top_p <= 1)) return InvalidArgumentError("top_p must be in (0, 1]");
  if (prompt_length < 1) return InvalidArgumentError("the prompt is empty");
  const int64_t blocks = p.max_new_tokens / p.block_size + prompt_length / p.block_size;
  if (blocks * p.block_size + 1 > context_length) {
    return OutOfRangeError(
        "the prompt (" + std::to_string(prompt_length) + " tokens) + " +
        std::to_string(p.max_new_tokens) + " tokens in blocks of " + std::to_string(p.block_size) +
        " need " + std::to_string(blocks * p.block_size + 1) +
        " positions, more than the context of " + std::to_string(context_length));
  }
  return Status::Ok();
}

StatusOr<FastDllmV2Decoder> FastDllmV2Decoder::Create(const FastDllmV2Params& params,
                                                      int32_t mask_id,
                                                      std::span<const int32_t> prompt,
                                                      int64_t context_length, int64_t vocab_size,
                                                      int32_t kv_seq) {
  const int64_t lp = static_cast<int64_t>(prompt.size());
  UNMASK_RETURN_IF_ERROR(ValidateFastDllmV2Params(params, lp, context_length));
  UNMASK_RETURN_IF_ERROR(CheckMaskAndPrompt(mask_id, prompt, vocab_size));
  FastDllmV2Decoder d;
  d.params_ = params;
  if (d.params_.pad_token < 0) d.params_.pad_token = d.params_.stop_token;
  d.mask_id_ = mask_id;
  d.vocab_size_ = vocab_size;
  d.prompt_length_ = lp;
  const int64_t b = params.block_size;
  d.num_blocks_ = params.max_new_tokens / b + lp / b;
  d.canvas_.assign(static_cast<size_t>(d.num_blocks_ * b + 1), mask_id);
  std::copy(prompt.begin(), prompt.end(), d.canvas_.begin());
  d.length_ = lp;
  d.kv_seq_ = kv_seq;
  d.rng_ = CounterRng(params.seed);
  d.block_ = lp / b;
  if (lp >= b) {
    d.phase_ = Phase::kPrefill;
  } else {
    d.StartBlock();
  }
  return d;
}

std::span<const int32_t> FastDllmV2Decoder::generated() const {
  return std::span<const int32_t>(canvas_).subspan(static_cast<size_t>(prompt_length_),
                                                   static_cast<size_t>(length_ - prompt_length_));
}

bool FastDllmV2Decoder::SubBlockHasMask(int64_t sb) const {
  const auto s = canvas_.begin() + BlockStart() + sb * params_.small_block_size;
  return std::find(s, s + params_.small_block_size, mask_id_) != s + params_.small_block_size;
}

void FastDllmV2Decoder::StartBlock() {
  const int64_t hi = BlockStart() + params_.block_size;
  std::fill(canvas_.begin() + length_, canvas_.begin() + hi, mask_id_);
  length_ = hi;
  phase_ = Phase::kDenoise;
  sub_block_ = 0;
  const int64_t subs = params_.block_size / params_.small_block_size;
  while (sub_block_ < subs && !SubBlockHasMask(sub_block_)) ++sub_block_;
  if (sub_block_ == subs) phase_ = Phase::kStore;  // nothing to denoise (cannot happen: masks)
}

void FastDllmV2Decoder::AppendArgmax(std::span<const float> row) {
  canvas_[static_cast<size_t>(length_)] = ArgMaxRow(row);
  commit_lp_.Record(length_ - prompt_length_, row, canvas_[static_cast<size_t>(length_)]);
  ++length_;
}

StatusOr<const BatchPlan*> FastDllmV2Decoder::Plan() {
  if (Done()) return FailedPreconditionError("FastDllmV2Decoder::Plan after Done()");
  const int64_t b = params_.block_size;
  plan_rows_.clear();
  SequenceInput seq;
  seq.kv_seq = kv_seq_;
  seq.block_length = static_cast<int32_t>(b);
  if (phase_ == Phase::kPrefill) {
    const int64_t n = prompt_length_ / b * b;
    seq.tokens = std::span<const int32_t>(canvas_).first(static_cast<size_t>(n));
    seq.pos0 = 0;
    if (prompt_length_ % b == 0) plan_rows_.push_back(static_cast<int32_t>(n - 1));
  } else {
    seq.tokens = std::span<const int32_t>(canvas_).subspan(static_cast<size_t>(BlockStart()),
                                                           static_cast<size_t>(b));
    seq.pos0 = static_cast<int32_t>(BlockStart());
    if (phase_ == Phase::kStore) {
      plan_rows_.push_back(static_cast<int32_t>(b - 1));
    } else {
      // The rows the sub-block's masked slots read (j - 1; row 0 for j = 0), ascending, unique.
      const int64_t s = sub_block_ * params_.small_block_size;
      for (int64_t j = s; j < s + params_.small_block_size; ++j) {
        if (seq.tokens[static_cast<size_t>(j)] != mask_id_) continue;
        const int32_t row = static_cast<int32_t>(std::max<int64_t>(j - 1, 0));
        if (plan_rows_.empty() || plan_rows_.back() != row) plan_rows_.push_back(row);
      }
    }
  }
  seq.logit_rows = plan_rows_;
  plan_.sequences.assign(1, seq);
  planned_ = true;
  return &plan_;
}

Status FastDllmV2Decoder::Update(const TensorView& logits, DecodeStep* step) {
  if (Done()) return FailedPreconditionError("FastDllmV2Decoder::Update after Done()");
  if (!planned_) return FailedPreconditionError("FastDllmV2Decoder::Update without Plan()");
  const int64_t rows = static_cast<int64_t>(plan_rows_.size());
  UNMASK_RETURN_IF_ERROR(CheckLogitsShape(logits, rows, vocab_size_));
  planned_ = false;
  DecodeStep local;
  DecodeStep& out = step != nullptr ? *step : local;
  out.Reset();
  out.step = nfe_;
  out.block = block_;
  const uint32_t rng_step = static_cast<uint32_t>(nfe_);
  ++nfe_;
  auto row = [&](int64_t r) {
    return std::span<const float>(logits.as<float>() + r * vocab_size_,
                                  static_cast<size_t>(vocab_size_));
  };
  const int64_t b = params_.block_size;
  if (phase_ == Phase::kPrefill) {
    if (rows == 1) {
      out.committed_positions.push_back(static_cast<int32_t>(length_));
      AppendArgmax(row(0));
    }
    if (block_ >= num_blocks_) {
      finish_ = DecodeFinish::kLength;
      return Status::Ok();
    }
    StartBlock();
    return Status::Ok();
  }
  if (phase_ == Phase::kStore) {
    out.committed_positions.push_back(static_cast<int32_t>(length_));
    AppendArgmax(row(0));
    ++block_;
    if (block_ >= num_blocks_) {
      finish_ = DecodeFinish::kLength;
      return Status::Ok();
    }
    StartBlock();
    return Status::Ok();
  }

  // A denoising step of sub-block sub_block_.
  const int64_t lo = BlockStart();
  const int64_t s = sub_block_ * params_.small_block_size;
  const int64_t e = s + params_.small_block_size;
  int32_t* x = canvas_.data() + lo;
  std::vector<double> scratch;
  std::vector<int32_t> order;
  std::vector<double> conf(static_cast<size_t>(e - s), -std::numeric_limits<double>::infinity());
  std::vector<int32_t> x1(static_cast<size_t>(e - s), 0);
  std::vector<int64_t> row_of(static_cast<size_t>(e - s), -1);
  size_t r = 0;
  for (int64_t j = s; j < e; ++j) {
    if (x[j] != mask_id_) continue;
    const int32_t want = static_cast<int32_t>(std::max<int64_t>(j - 1, 0));
    while (plan_rows_[r] != want) ++r;
    const Choice c = ChooseToken(row(static_cast<int64_t>(r)), params_, rng_, rng_step,
                                 static_cast<uint32_t>(lo + j), scratch, order);
    x1[static_cast<size_t>(j - s)] =
        c.token == mask_id_ ? BestNonMaskToken(row(static_cast<int64_t>(r)), mask_id_) : c.token;
    conf[static_cast<size_t>(j - s)] = c.confidence;
    row_of[static_cast<size_t>(j - s)] = static_cast<int64_t>(r);
  }
  const size_t best =
      static_cast<size_t>(std::max_element(conf.begin(), conf.end()) - conf.begin());
  for (int64_t j = s; j < e; ++j) {
    const size_t k = static_cast<size_t>(j - s);
    if (x[j] != mask_id_ || !(conf[k] > params_.threshold || k == best)) continue;
    x[j] = x1[k];
    if (commit_lp_.enabled()) commit_lp_.Record(lo + j - prompt_length_, row(row_of[k]), x1[k]);
    out.committed_positions.push_back(static_cast<int32_t>(lo + j));
    if (x1[k] == params_.stop_token) finished_ = true;
  }
  const int64_t subs = b / params_.small_block_size;
  while (sub_block_ < subs && !SubBlockHasMask(sub_block_)) ++sub_block_;
  if (sub_block_ < subs) return Status::Ok();
  // The block is full.
  if (finished_) {
    const auto gen = canvas_.begin() + prompt_length_;
    const auto end = canvas_.begin() + length_;
    const auto first = std::find(gen, end, params_.stop_token);
    if (first != end) std::fill(first + 1, end, params_.pad_token);
    finish_ = DecodeFinish::kEos;
    return Status::Ok();
  }
  phase_ = Phase::kStore;
  return Status::Ok();
}

std::span<const int32_t> FastDllmV2Decoder::committed() const {
  const std::span<const int32_t> gen = Decoder::committed();  // up to the first mask
  if (Done()) return gen;
  const int64_t finished = std::max<int64_t>(BlockStart() - prompt_length_, 0);
  return gen.first(std::min(gen.size(), static_cast<size_t>(finished)));
}

Status FastDllmV2Decoder::EnableLogprobs(int32_t k) {
  if (k < 0 || k > 20) {
    return InvalidArgumentError("logprobs: k must be in [0, 20], got " + std::to_string(k));
  }
  commit_lp_.Enable(k, static_cast<int64_t>(canvas_.size()) - prompt_length_);
  return Status::Ok();
}

}  // namespace unmask
