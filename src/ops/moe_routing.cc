#include "ops/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace unmask {
namespace {

// Inserts candidate (score, id) into the descending list best[0..n) of capacity k; a score equal
// to one already present goes after it, so with ids visited in increasing order ties keep the
// lower id first.
void Insert(float score, int32_t id, int64_t k, int64_t& n, float* best_score, int32_t* best_id) {
  if (n == k && !(score > best_score[k - 1])) return;
  int64_t i = n < k ? n++ : k - 1;
  while (i > 0 && score > best_score[i - 1]) {
    best_score[i] = best_score[i - 1];
    best_id[i] = best_id[i - 1];
    --i;
  }
  best_score[i] = score;
  best_id[i] = id;
}

}  // namespace

Status ValidateMoeRouting(const MoeRouting& r) {
  auto bad = [](const std::string& what) { return InvalidArgumentError("MoE routing: " + what); };
  if (r.num_experts < 1 || r.num_experts > (int64_t{1} << 20)) {
    return bad("num_experts must be in [1, 2^20], got " + std::to_string(r.num_experts));
  }
  if (r.top_k < 1 || r.top_k > r.num_experts) {
    return bad("top_k must be in [1, num_experts = " + std::to_string(r.num_experts) + "], got " +
               std::to_string(r.top_k));
  }
  if (r.num_groups < 1 || r.num_experts % r.num_groups != 0) {
    return bad("num_groups (" + std::to_string(r.num_groups) + ") must divide num_experts (" +
               std::to_string(r.num_experts) + ")");
  }
  if (r.groups_used < 1 || r.groups_used > r.num_groups) {
    return bad("groups_used must be in [1, num_groups = " + std::to_string(r.num_groups) +
               "], got " + std::to_string(r.groups_used));
  }
  if (r.groups_used * (r.num_experts / r.num_groups) < r.top_k) {
    return bad("groups_used (" + std::to_string(r.groups_used) + ") groups of " +
               std::to_string(r.num_experts / r.num_groups) + " experts hold fewer than top_k (" +
               std::to_string(r.top_k) + ") experts");
  }
  if (!std::isfinite(r.scale)) return bad("scale must be finite");
  if (!(r.normalize_eps >= 0.0f) || !std::isfinite(r.normalize_eps)) {
    return bad("normalize_eps must be finite and >= 0");
  }
  return Status::Ok();
}

Status RouteExperts(const TensorView& logits, std::span<const float> selection_bias,
                    const MoeRouting& r, std::span<int32_t> ids, std::span<float> weights) {
  UNMASK_RETURN_IF_ERROR(ValidateMoeRouting(r));
  const int64_t e_count = r.num_experts, k = r.top_k;
  if (logits.device != Device::kCpu) {
    return UnimplementedError("RouteExperts: no kernel for " +
                              std::string(DeviceName(logits.device)));
  }
  if (logits.dtype != DType::kF32 || logits.shape.rank() != 2 || logits.shape[1] != e_count) {
    return InvalidArgumentError("RouteExperts: logits must be f32 [T, " + std::to_string(e_count) +
                                "], got " + logits.shape.ToString());
  }
  const int64_t t_count = logits.shape[0];
  if (!selection_bias.empty() && static_cast<int64_t>(selection_bias.size()) != e_count) {
    return InvalidArgumentError("RouteExperts: selection_bias has " +
                                std::to_string(selection_bias.size()) + " entries, expected " +
                                std::to_string(e_count));
  }
  if (static_cast<int64_t>(ids.size()) != t_count * k ||
      static_cast<int64_t>(weights.size()) != t_count * k) {
    return InvalidArgumentError("RouteExperts: ids and weights must hold T * top_k = " +
                                std::to_string(t_count * k) + " entries");
  }
  const int64_t group_size = e_count / r.num_groups;
  const bool grouped = r.num_groups > 1 && r.groups_used < r.num_groups;
  std::vector<float> p(static_cast<size_t>(e_count)), sel(static_cast<size_t>(e_count));
  std::vector<float> best_score(static_cast<size_t>(std::max(k, r.groups_used)));
  std::vector<int32_t> best_id(best_score.size());
  std::vector<char> allowed(static_cast<size_t>(r.num_groups), 1);
  for (int64_t t = 0; t < t_count; ++t) {
    const float* x = logits.as<float>() + t * e_count;
    for (int64_t e = 0; e < e_count; ++e) {
      if (std::isnan(x[e])) {
        return InvalidArgumentError("RouteExperts: token " + std::to_string(t) +
                                    " has a NaN router logit (expert " + std::to_string(e) + ")");
      }
    }
    if (r.gating == MoeGating::kSoftmax) {
      const float m = *std::max_element(x, x + e_count);
      float sum = 0.0f;
      for (int64_t e = 0; e < e_count; ++e) sum += (p[e] = std::exp(x[e] - m));
      for (int64_t e = 0; e < e_count; ++e) p[e] /= sum;
    } else {
      for (int64_t e = 0; e < e_count; ++e) p[e] = 1.0f / (1.0f + std::exp(-x[e]));
    }
    for (int64_t e = 0; e < e_count; ++e) {
      sel[e] = p[e] + (selection_bias.empty() ? 0.0f : selection_bias[e]);
    }
    if (grouped) {
      int64_t n = 0;
      for (int64_t g = 0; g < r.num_groups; ++g) {
        const float* s = sel.data() + g * group_size;
        float a = -INFINITY, b = -INFINITY;  // the group's two best scores
        for (int64_t i = 0; i < group_size; ++i) {
          if (s[i] > a) {
            b = a;
            a = s[i];
          } else if (s[i] > b) {
            b = s[i];
          }
        }
        const float score = group_size > 1 ? a + b : a;
        Insert(score, static_cast<int32_t>(g), r.groups_used, n, best_score.data(), best_id.data());
      }
      std::fill(allowed.begin(), allowed.end(), 0);
      for (int64_t i = 0; i < n; ++i) allowed[best_id[i]] = 1;
    }
    int64_t n = 0;
    for (int64_t e = 0; e < e_count; ++e) {
      if (grouped && !allowed[e / group_size]) continue;
      Insert(sel[e], static_cast<int32_t>(e), k, n, best_score.data(), best_id.data());
    }
    int32_t* out_ids = ids.data() + t * k;
    float* out_w = weights.data() + t * k;
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      out_ids[j] = best_id[j];
      out_w[j] = p[best_id[j]];
      sum += out_w[j];
    }
    const float norm = r.normalize ? 1.0f / (sum + r.normalize_eps) : 1.0f;
    for (int64_t j = 0; j < k; ++j) out_w[j] = out_w[j] * norm * r.scale;
  }
  return Status::Ok();
}

int64_t MoeDispatch::experts_hit() const {
  int64_t n = 0;
  for (size_t e = 0; e + 1 < offsets.size(); ++e) n += offsets[e + 1] > offsets[e] ? 1 : 0;
  return n;
}

Status DispatchExperts(std::span<const int32_t> ids, int64_t num_experts, MoeDispatch* out) {
  out->offsets.assign(static_cast<size_t>(num_experts + 1), 0);
  for (int32_t id : ids) {
    if (id < 0 || id >= num_experts) {
      return InvalidArgumentError("DispatchExperts: expert id " + std::to_string(id) +
                                  " outside [0, " + std::to_string(num_experts) + ")");
    }
    ++out->offsets[static_cast<size_t>(id) + 1];
  }
  for (int64_t e = 0; e < num_experts; ++e) out->offsets[e + 1] += out->offsets[e];
  out->order.resize(ids.size());
  std::vector<int32_t> next(out->offsets.begin(), out->offsets.end() - 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    out->order[static_cast<size_t>(next[static_cast<size_t>(ids[i])]++)] = static_cast<int32_t>(i);
  }
  return Status::Ok();
}

}  // namespace unmask
