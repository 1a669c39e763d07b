// EAGLE drafting with EAGLE-2's dynamic draft tree (Li et al. 2024, "EAGLE-2: Faster Inference of
// Language Models with Dynamic Draft Trees", arXiv:2406.16858; SafeAILab/EAGLE, model/cnets.py
// topK_genrate). The draft layer (model/eagle_head.h) keeps its own K/V cache of the committed
// context, fed with the target's real features as they arrive (ObserveFeatures: every prompt
// position after the prefill, then one row per committed token). A proposal:
//
//  1. the pending real rows (f_j, t_{j+1}) go through the layer; the last row's output g guesses
//     the feature of the last committed token, and its draft logits give the first level: the
//     top_k tokens, each scored by its log-probability (the draft's confidence);
//  2. for depth 2 .. depth: the top_k nodes of the newest level by score (the product of the
//     probabilities along their path, EAGLE-2's estimate of the chance the target accepts them)
//     are expanded in one pass: input (g_parent, embed(token)) at the next position, tree attention
//     over the context and the node's ancestors; each expanded node gets its top_k children,
//     scored parent score + log p;
//  3. the tree verified is the total_tokens nodes of highest score over all levels (ancestors
//     score at least as high as their descendants, ties broken by creation order, so the set is
//     a tree), in creation order: parents first, siblings most likely first.
//
// The expansions' K/V rows are dropped by the next proposal's first pass.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "decode/drafter.h"
#include "model/eagle_head.h"

namespace unmask {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

class EagleDrafter final : public Drafter {
 public:
  EagleDrafter(const EagleHead* head, const Model* base, EagleDrafterParams p, KvCache kv)
      : head_(head), base_(base), p_(p), kv_(std::move(kv)) {}
  std::string_view name() const override { return "eagle"; }
  bool uses_target_features() const override { return true; }
  int64_t feature_size() const override { return head_->hidden_size(); }
  bool wants_prompt_features() const override { return true; }

  void ObserveFeatures(std::span<const float> h, int64_t rows, int64_t context_length) override {
    const int64_t width = head_->hidden_size();
    const int64_t first = context_length - rows - 1;
    if (rows < 1 || first < 0 || static_cast<int64_t>(h.size()) != rows * width) {
      pending_rows_ = 0;
      pending_for_ = -1;
      return;
    }
    if (pending_rows_ > 0 && first == pending_first_ + pending_rows_) {
      // Rows no proposal consumed yet (the verifier asked for none): keep them, append these.
      pending_.insert(pending_.end(), h.begin(), h.end());
      pending_rows_ += rows;
    } else {
      pending_.assign(h.begin(), h.end());
      pending_first_ = first;
      pending_rows_ = rows;
    }
    pending_for_ = context_length;
  }

 protected:
  Status DoPropose(std::span<const int32_t> ctx, int64_t max_tokens, DraftProposal* out) override {
    const auto length = static_cast<int64_t>(ctx.size());
    if (pending_for_ != length || pending_rows_ < 1) return Status::Ok();
    UNMASK_RETURN_IF_ERROR(FeedContext(ctx));
    const int64_t budget = std::min<int64_t>({max_tokens, p_.total_tokens, kMaxDraft});
    if (budget < 1) return Status::Ok();
    return BuildTree(ctx, budget, out);
  }

 private:
  struct Node {
    int32_t token;
    int32_t parent;  // node index, -1 for a child of the context
    double score;    // sum of the draft log-probabilities along the path
    int32_t row;     // tree row once expanded (its output in outputs_), else -1
  };

  // The real rows (f_j, t_{j+1}) of the pending features through the layer; leaves the last
  // row's output (the guess of the last committed token's feature) and logits in root_*.
  Status FeedContext(std::span<const int32_t> ctx) {
    const int64_t d = head_->hidden_size();
    const int64_t rows = pending_rows_;
    const int64_t first = pending_first_;
    // Cache row r holds position offset_ + r. A gap (features that never came) or a restart
    // starts the cache over at the first pending position.
    if (first < offset_ || first > offset_ + real_) {
      offset_ = first;
      real_ = 0;
    }
    const int64_t prefix = first - offset_;
    ids_.assign(ctx.begin() + first + 1, ctx.begin() + first + 1 + rows);
    positions_.resize(static_cast<size_t>(rows));
    std::iota(positions_.begin(), positions_.end(), static_cast<int32_t>(first));
    embed_.resize(static_cast<size_t>(rows * d));
    UNMASK_RETURN_IF_ERROR(
        base_->EmbedTokens(ids_, TensorView{embed_.data(), DType::kF32, Shape{rows, d}}));
    UNMASK_RETURN_IF_ERROR(head_->Forward(embed_, pending_, positions_, {}, prefix, kv_, ws_));
    CountPass(rows, static_cast<double>(rows) * head_->flops_per_row());
    real_ = prefix + rows;
    pending_rows_ = 0;
    pending_for_ = -1;
    root_hidden_.assign(ws_.x.begin() + (rows - 1) * d, ws_.x.begin() + rows * d);
    const int64_t nd = head_->draft_vocab_size();
    root_logits_.assign(ws_.logits.begin() + (rows - 1) * nd, ws_.logits.begin() + rows * nd);
    return Status::Ok();
  }

  // The top_k draft tokens of a logits row [n_draft] and their log-probabilities, most likely
  // first (equal logits: the lower draft index).
  void TopK(const float* logits, std::vector<std::pair<int32_t, double>>* out) {
    const int64_t nd = head_->draft_vocab_size();
    const int64_t k = std::min<int64_t>(p_.top_k, nd);
    order_.resize(static_cast<size_t>(nd));
    std::iota(order_.begin(), order_.end(), 0);
    std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    const double top = logits[order_[0]];
    double z = 0;
    for (int64_t j = 0; j < nd; ++j) z += std::exp(static_cast<double>(logits[j]) - top);
    const double lse = top + std::log(z);
    out->clear();
    const double log_p_min = p_.p_min > 0 ? std::log(p_.p_min) : -kInf;
    for (int64_t i = 0; i < k; ++i) {
      const int32_t j = order_[static_cast<size_t>(i)];
      if (!std::isfinite(logits[j])) break;
      const double logp = static_cast<double>(logits[j]) - lse;
      if (logp < log_p_min) break;  // --draft-p-min: the rest are less likely still
      out->emplace_back(head_->draft_id(j), logp);
    }
  }

  Status BuildTree(std::span<const int32_t> ctx, int64_t budget, DraftProposal* out) {
    const int64_t d = head_->hidden_size();
    const int64_t nd = head_->draft_vocab_size();
    const auto length = static_cast<int64_t>(ctx.size());
    const int64_t context = base_->config().context_length;
    nodes_.clear();
    tree_parents_.clear();
    outputs_.clear();
    std::vector<std::pair<int32_t, double>> top;
    TopK(root_logits_.data(), &top);
    std::vector<int32_t> level;  // the newest level's nodes
    for (const auto& [token, logp] : top) {
      level.push_back(static_cast<int32_t>(nodes_.size()));
      nodes_.push_back(Node{token, -1, logp, -1});
    }
    for (int32_t depth = 1; depth < p_.depth && !level.empty(); ++depth) {
      // The node at depth `depth` is fed at position length - 2 + depth.
      const int64_t position = length - 2 + depth;
      if (position >= context) break;
      // Expand the newest level's top_k nodes by score (stable: creation order on ties).
      std::stable_sort(level.begin(), level.end(),
                       [&](int32_t a, int32_t b) { return nodes_[a].score > nodes_[b].score; });
      if (static_cast<int64_t>(level.size()) > p_.top_k)
        level.resize(static_cast<size_t>(p_.top_k));
      std::sort(level.begin(), level.end());  // creation order: parents' rows first
      const auto n = static_cast<int64_t>(level.size());
      ids_.clear();
      features_.resize(static_cast<size_t>(n * d));
      positions_.assign(static_cast<size_t>(n), static_cast<int32_t>(position));
      for (int64_t i = 0; i < n; ++i) {
        Node& node = nodes_[static_cast<size_t>(level[static_cast<size_t>(i)])];
        ids_.push_back(node.token);
        const float* g = node.parent < 0
                             ? root_hidden_.data()
                             : outputs_.data() + nodes_[static_cast<size_t>(node.parent)].row * d;
        std::copy_n(g, d, features_.data() + i * d);
        tree_parents_.push_back(node.parent < 0 ? -1
                                                : nodes_[static_cast<size_t>(node.parent)].row);
        node.row = static_cast<int32_t>(tree_parents_.size()) - 1;
      }
      embed_.resize(static_cast<size_t>(n * d));
      UNMASK_RETURN_IF_ERROR(
          base_->EmbedTokens(ids_, TensorView{embed_.data(), DType::kF32, Shape{n, d}}));
      UNMASK_RETURN_IF_ERROR(
          head_->Forward(embed_, features_, positions_, tree_parents_, real_, kv_, ws_));
      CountPass(n, static_cast<double>(n) * head_->flops_per_row());
      outputs_.insert(outputs_.end(), ws_.x.begin(), ws_.x.begin() + n * d);
      std::vector<int32_t> next;
      for (int64_t i = 0; i < n; ++i) {
        const int32_t parent = level[static_cast<size_t>(i)];
        TopK(ws_.logits.data() + i * nd, &top);
        for (const auto& [token, logp] : top) {
          next.push_back(static_cast<int32_t>(nodes_.size()));
          nodes_.push_back(
              Node{token, parent, nodes_[static_cast<size_t>(parent)].score + logp, -1});
        }
      }
      level = std::move(next);
    }
    // The budget's best nodes over every level, then in creation order.
    std::vector<int32_t> best(nodes_.size());
    std::iota(best.begin(), best.end(), 0);
    std::stable_sort(best.begin(), best.end(),
                     [&](int32_t a, int32_t b) { return nodes_[a].score > nodes_[b].score; });
    if (static_cast<int64_t>(best.size()) > budget) best.resize(static_cast<size_t>(budget));
    std::sort(best.begin(), best.end());
    index_.assign(nodes_.size(), -1);
    for (int32_t i : best) {
      const Node& node = nodes_[static_cast<size_t>(i)];
      const int32_t parent = node.parent < 0 ? -1 : index_[static_cast<size_t>(node.parent)];
      if (node.parent >= 0 && parent < 0) continue;  // unreachable: parents score higher
      index_[static_cast<size_t>(i)] = static_cast<int32_t>(out->tokens.size());
      out->tokens.push_back(node.token);
      out->q.push_back(TokenDistribution::PointMass(node.token));
      out->parents.push_back(parent);
    }
    return Status::Ok();
  }

  const EagleHead* head_;
  const Model* base_;
  EagleDrafterParams p_;
  KvCache kv_;
  EagleWorkspace ws_;
  int64_t offset_ = 0;          // position of cache row 0
  int64_t real_ = 0;            // cache rows of real (committed) positions
  std::vector<float> pending_;  // [pending_rows_, hidden] features not yet fed
  int64_t pending_first_ = 0, pending_rows_ = 0, pending_for_ = -1;
  std::vector<float> root_hidden_, root_logits_;
  std::vector<Node> nodes_;
  std::vector<int32_t> tree_parents_;  // expanded rows' parents (rows), for the layer's mask
  std::vector<float> outputs_;         // [expanded rows, hidden]
  std::vector<int32_t> ids_, positions_, order_, index_;
  std::vector<float> embed_, features_;
};

}  // namespace

StatusOr<std::unique_ptr<Drafter>> MakeEagleDrafter(const EagleHead* head, const Model* base,
                                                    const EagleDrafterParams& params) {
  if (head == nullptr || base == nullptr) {
    return InvalidArgumentError("EAGLE drafter: no draft layer or no base model");
  }
  if (base->config().hidden_size != head->hidden_size()) {
    return InvalidArgumentError("EAGLE drafter: the draft layer's hidden size " +
                                std::to_string(head->hidden_size()) + " is not the model's " +
                                std::to_string(base->config().hidden_size));
  }
  if (params.depth < 1 || params.depth > 16) {
    return InvalidArgumentError("EAGLE drafter: depth must be in [1, 16], got " +
                                std::to_string(params.depth));
  }
  if (params.top_k < 1 || params.top_k > 16) {
    return InvalidArgumentError("EAGLE drafter: top_k must be in [1, 16], got " +
                                std::to_string(params.top_k));
  }
  if (params.total_tokens < 1 || params.total_tokens > kMaxDraft) {
    return InvalidArgumentError("EAGLE drafter: total_tokens must be in [1, " +
                                std::to_string(kMaxDraft) + "], got " +
                                std::to_string(params.total_tokens));
  }
  if (!(params.p_min >= 0.0 && params.p_min <= 1.0)) {
    return InvalidArgumentError("EAGLE drafter: p_min must be in [0, 1], got " +
                                std::to_string(params.p_min));
  }
  // Room for the context plus every expansion row of a proposal.
  UNMASK_ASSIGN_OR_RETURN(
      KvCache kv, head->MakeKvCache(base->config().context_length + params.depth * params.top_k));
  return std::unique_ptr<Drafter>(new EagleDrafter(head, base, params, std::move(kv)));
}

}  // namespace unmask
