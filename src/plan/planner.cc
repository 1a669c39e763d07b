#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace unmask::plan {
namespace {

// `v` in %g form (a flag's 1e308 is not printed with 309 digits).
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// Costs the forwards of one batch run of `batch` identical sequences into `p`.
struct Costing {
  const ModelConfig& model;
  const MachineRates& machine;
  int64_t batch;
  double weight_bytes;  // every weight but the routed experts (all of them for dense models)
  double expert_bytes;  // one routed expert's weights (0 for dense models)
  Projection* p;
  double moe_layer_forwards = 0;  // for the mean experts hit
  double experts_hit = 0;
  double compute_ms = 0;  // time of compute-bound forwards
  double total_ms = 0;

  // One forward; returns its time in ms.
  double Forward(int64_t positions, int64_t logit_rows, int64_t cached, bool writes_cache) {
    const double b = static_cast<double>(batch);
    // The last layer pruned to the logit rows, as TransformerModel runs every diffusion model
    // (full-canvas and block-causal alike); AR forwards are costed unpruned.
    const bool prune = model.needs_mask_token();
    const double flops = b * model.ForwardFlops(positions, logit_rows, prune, cached);
    // Routed experts: those the batch's positions are expected to reach, in every MoE layer.
    double experts = 0;
    if (model.is_moe()) {
      const double hit = model.ExpectedExpertsHit(b * static_cast<double>(positions));
      const double layers = static_cast<double>(model.num_layers - model.leading_dense_layers);
      experts = layers * hit * expert_bytes;
      moe_layer_forwards += layers;
      experts_hit += layers * hit;
    }
    const double bytes =
        weight_bytes + experts +
        b * (model.ForwardKvBytes(positions, cached, writes_cache, machine.kv_bytes_per_element) +
             model.ForwardActivationBytes(positions, logit_rows,
                                          machine.activation_bytes_per_element));
    const double t_compute = 1000.0 * flops / machine.FlopsAt(b * static_cast<double>(positions));
    const double t_memory = 1000.0 * bytes / machine.bytes_per_second;
    const double ms = std::max(t_compute, t_memory) + machine.overhead_ms;
    p->flops += flops;
    p->bytes += bytes;
    p->expert_bytes += experts;
    total_ms += ms;
    if (t_compute > t_memory) compute_ms += ms;
    return ms;
  }
};

void ProjectAr(const EngineSpec& e, const Workload& w, Costing& c, Projection& p) {
  const int64_t prompt = w.prompt_length, gen = w.gen_length;
  // Prefill: the prompt in one forward; its last row gives the first token.
  p.ttft_ms = c.Forward(prompt, 1, 0, true);
  double target_forwards = 1;
  const bool spec = e.kind == EngineKind::kArSpeculative;
  const int64_t fed = spec ? e.draft_max + 1 : 1;
  const double per_forward = spec ? e.tokens_per_verify : 1.0;
  double produced = 1;  // tokens so far (the prefill's)
  while (produced < static_cast<double>(gen)) {
    const auto cached = prompt + static_cast<int64_t>(produced) - 1;
    const double ms = c.Forward(fed, fed, cached, true);
    if (spec && e.draft_cost > 0) {
      // The drafter's passes (draft_max forwards of a draft model, one pass of Medusa heads, one
      // per level of an EAGLE tree), each at draft_cost of a decode step.
      c.total_ms += static_cast<double>(e.passes()) * e.draft_cost * ms;
    }
    produced += per_forward;
    target_forwards += 1;
  }
  p.forwards =
      target_forwards +
      (spec && e.draft_cost > 0 ? static_cast<double>(e.passes()) * (target_forwards - 1) : 0.0);
  p.tokens_per_forward = static_cast<double>(gen) / target_forwards;
}

void ProjectDiffusion(const EngineSpec& e, const Workload& w, Costing& c, Projection& p) {
  const int64_t n = e.block_length;
  const int64_t blocks = (w.gen_length + n - 1) / n;
  const int64_t canvas = w.prompt_length + blocks * n;
  const auto per_block =
      static_cast<int64_t>(std::ceil(static_cast<double>(n) / e.tokens_per_forward - 1e-9));
  double forwards = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t start = w.prompt_length + b * n;
    for (int64_t j = 0; j < per_block; ++j) {
      // Masked positions of the block before this forward: its logit rows.
      const auto masked = std::max<int64_t>(
          1, n - static_cast<int64_t>(std::floor(static_cast<double>(j) * e.tokens_per_forward)));
      if (e.cache == DiffusionCache::kNone) {
        c.Forward(canvas, masked, 0, false);
      } else if (j == 0) {  // the block's refresh: every K/V recomputed and cached
        c.Forward(canvas, masked, 0, true);
      } else if (e.cache == DiffusionCache::kPrefix) {
        c.Forward(canvas - start, masked, start, false);
      } else {  // dual: only the block, attending to every cached position
        c.Forward(n, masked, canvas - n, true);
      }
      forwards += 1;
    }
    if (b == 0) p.ttft_ms = c.total_ms;
  }
  p.forwards = forwards;
  p.tokens_per_forward = static_cast<double>(w.gen_length) / forwards;
}

// SDAR (decoder_block_diffusion.h). Separate stores (SDAR's schedule): one forward of the prompt's
// whole blocks (no logits), then per block its share of the request's forwards, each feeding the
// block's B positions against the cached prefix; the last of a block's forwards is its store
// forward (no logits), the others ask for the block's rows. The forwards after the prefill are
// gen / tokens_per_forward (minus the prefill), at least two per block (one denoising step and
// the store), spread evenly over the blocks. Fused (the default): see the branch below.
void ProjectBlockDiffusion(const EngineSpec& e, const Workload& w, Costing& c, Projection& p) {
  const int64_t n = e.block_length;
  const int64_t whole = w.prompt_length / n * n;
  const int64_t blocks = (w.prompt_length + w.gen_length + n - 1) / n - w.prompt_length / n;
  double forwards = 0;
  if (!e.block_separate_store) {
    // Fused: the request's forwards (at least one per block), spread evenly over the blocks; a
    // block's first forward also feeds the prompt's whole blocks (the first block) or the block
    // before it, writing their K/V.
    const auto total = static_cast<int64_t>(
        std::ceil(static_cast<double>(w.gen_length) / e.tokens_per_forward - 1e-9));
    const int64_t all = std::max<int64_t>(total, blocks);
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t mine = (b + 1) * all / blocks - b * all / blocks;
      for (int64_t j = 0; j < mine; ++j) {
        const int64_t front = j > 0 ? 0 : (b == 0 ? whole : n);
        c.Forward(front + n, n, whole + b * n - front, true);
        forwards += 1;
      }
      if (b == 0) p.ttft_ms = c.total_ms;
    }
    p.forwards = forwards;
    p.tokens_per_forward = static_cast<double>(w.gen_length) / forwards;
    return;
  }
  if (whole > 0) {
    c.Forward(whole, 0, 0, true);
    forwards += 1;
  }
  const auto total = static_cast<int64_t>(
      std::ceil(static_cast<double>(w.gen_length) / e.tokens_per_forward - 1e-9));
  const int64_t after = std::max<int64_t>(total - (whole > 0 ? 1 : 0), 2 * blocks);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t mine = (b + 1) * after / blocks - b * after / blocks;
    for (int64_t j = 0; j < mine; ++j) {
      c.Forward(n, j + 1 < mine ? n : 0, whole + b * n, true);
      forwards += 1;
    }
    if (b == 0) p.ttft_ms = c.total_ms;
  }
  p.forwards = forwards;
  p.tokens_per_forward = static_cast<double>(w.gen_length) / forwards;
}

}  // namespace

double MachineRates::FlopsAt(double rows) const {
  if (flops_curve.empty()) return flops_per_second;
  if (rows <= flops_curve.front().first) return flops_curve.front().second;
  if (rows >= flops_curve.back().first) return flops_curve.back().second;
  for (size_t i = 1; i < flops_curve.size(); ++i) {
    const auto [x1, y1] = flops_curve[i];
    if (rows > x1) continue;
    const auto [x0, y0] = flops_curve[i - 1];
    const double f = (std::log2(rows) - std::log2(x0)) / (std::log2(x1) - std::log2(x0));
    return y0 + f * (y1 - y0);
  }
  return flops_curve.back().second;
}

Status ValidateEngineSpec(const EngineSpec& e) {
  if (e.kind == EngineKind::kBlockDiffusion) {
    if (e.block_length < 1) return InvalidArgumentError("block_length must be >= 1");
    if (!(e.tokens_per_forward > 0.0 &&
          e.tokens_per_forward <= static_cast<double>(e.block_length))) {
      return InvalidArgumentError(
          "block diffusion: tokens_per_forward must be in (0, "
          "block_length] (got " +
          Num(e.tokens_per_forward) + ", block " + std::to_string(e.block_length) + ")");
    }
  }
  if (e.kind == EngineKind::kDiffusion) {
    if (e.block_length < 1) return InvalidArgumentError("block_length must be >= 1");
    if (!(e.tokens_per_forward >= 1.0 &&
          e.tokens_per_forward <= static_cast<double>(e.block_length))) {
      return InvalidArgumentError("tokens_per_forward must be in [1, block_length] (got " +
                                  Num(e.tokens_per_forward) + ", block " +
                                  std::to_string(e.block_length) + ")");
    }
  }
  if (e.kind == EngineKind::kArSpeculative) {
    if (e.draft_max < 1) return InvalidArgumentError("draft_max must be >= 1");
    if (!(e.tokens_per_verify >= 1.0 &&
          e.tokens_per_verify <= static_cast<double>(e.draft_max + 1))) {
      return InvalidArgumentError(
          "tokens_per_verify must be in [1, draft_max + 1 = " + std::to_string(e.draft_max + 1) +
          "] (got " + Num(e.tokens_per_verify) + ")");
    }
    if (!(e.draft_cost >= 0.0 && std::isfinite(e.draft_cost))) {
      return InvalidArgumentError("draft_cost must be a finite number >= 0");
    }
    if (e.draft_passes < -1) return InvalidArgumentError("draft_passes must be -1 or >= 0");
  }
  return Status::Ok();
}

double EagleDraftCost(const ModelConfig& c, int64_t draft_vocab) {
  const double d = static_cast<double>(c.hidden_size);
  const double q = static_cast<double>(c.num_heads * c.head_dim);
  const double kv = static_cast<double>(c.num_kv_heads * c.head_dim);
  const double ffn = static_cast<double>(c.ffn_size);
  const double head = static_cast<double>(std::min(draft_vocab, c.vocab_size)) * d;
  const double layer = 2 * d * d + 2 * d * q + 2 * d * kv + 3 * d * ffn + head;
  const double model = static_cast<double>(c.NumParameters());
  return model > 0 ? layer / model : 0.0;
}

StatusOr<Projection> Project(const ModelConfig& model, const EngineSpec& engine,
                             const Workload& workload, const MachineRates& machine, int64_t batch) {
  UNMASK_RETURN_IF_ERROR(ValidateEngineSpec(engine));
  if (workload.prompt_length < 1 || workload.gen_length < 1) {
    return InvalidArgumentError("prompt and output lengths must be >= 1");
  }
  if (batch < 1) return InvalidArgumentError("batch must be >= 1");
  if (!(machine.flops_per_second > 0 && machine.bytes_per_second > 0)) {
    return InvalidArgumentError("the machine's compute and memory rates must be > 0");
  }
  if (model.num_layers < 1 || model.hidden_size < 1) {
    return InvalidArgumentError("the model has no layers");
  }
  Projection p;
  p.engine = engine.name;
  p.batch = batch;
  const double weight_bytes =
      static_cast<double>(model.NumParameters()) * machine.weight_bytes_per_parameter;
  const double expert_bytes = model.is_moe() ? static_cast<double>(model.ExpertParameters()) *
                                                   machine.weight_bytes_per_parameter
                                             : 0.0;
  const double all_experts =
      expert_bytes * static_cast<double>(model.num_experts) *
      static_cast<double>(model.is_moe() ? model.num_layers - model.leading_dense_layers : 0);
  const bool block = engine.block_diffusion();
  const int64_t n = engine.diffusion() || block ? engine.block_length : 1;
  // Block diffusion: the canvas ends with the block holding prompt + output (blocks aligned to
  // position 0); full-canvas diffusion: the output rounded up to whole blocks.
  const int64_t canvas = block ? (workload.prompt_length + workload.gen_length + n - 1) / n * n
                               : workload.prompt_length + (workload.gen_length + n - 1) / n * n;
  const double kv = engine.diffusion() && engine.cache == DiffusionCache::kNone
                        ? 0.0
                        : model.KvCacheBytes(canvas, machine.kv_bytes_per_element);
  // Activations resident during the largest forward: the residual stream, its norm, Q/K/V and
  // attention output, the FFN's gate/up and activation for every position fed, and f32 logits
  // for the rows scored (a block, or the prompt's last row and the drafts).
  const double d = static_cast<double>(model.hidden_size);
  double f = 0;  // the widest FFN a position runs through
  for (int64_t l = 0; l < model.num_layers; ++l) {
    f = std::max(f, static_cast<double>(model.ActiveFfnWidth(l)));
  }
  const double fed =
      block ? static_cast<double>(std::max(workload.prompt_length / n * n, n))
            : static_cast<double>(engine.diffusion() ? canvas : workload.prompt_length);
  const double rows =
      static_cast<double>(engine.diffusion() || block ? engine.block_length : engine.draft_max + 1);
  const double activations = fed * (6 * d + 3 * f) * machine.activation_bytes_per_element +
                             rows * static_cast<double>(model.vocab_size) * 4.0;
  p.fits_memory =
      machine.memory_bytes <= 0 ||
      weight_bytes + static_cast<double>(batch) * (kv + activations) <= machine.memory_bytes;
  Costing c{model, machine, batch, weight_bytes - all_experts, expert_bytes, &p};
  if (block) {
    ProjectBlockDiffusion(engine, workload, c, p);
  } else if (engine.diffusion()) {
    ProjectDiffusion(engine, workload, c, p);
  } else {
    ProjectAr(engine, workload, c, p);
  }
  p.e2e_ms = c.total_ms;
  p.tpot_ms = workload.gen_length > 1
                  ? (p.e2e_ms - p.ttft_ms) / static_cast<double>(workload.gen_length - 1)
                  : 0.0;
  p.tokens_per_second =
      1000.0 * static_cast<double>(batch * workload.gen_length) / std::max(p.e2e_ms, 1e-12);
  p.compute_bound_fraction = c.total_ms > 0 ? c.compute_ms / c.total_ms : 0;
  p.experts_hit_per_layer = c.moe_layer_forwards > 0 ? c.experts_hit / c.moe_layer_forwards : 0;
  return p;
}

int64_t CrossoverBatch(const std::vector<EngineSpec>& engines, const std::vector<Projection>& rows,
                       const std::vector<int64_t>& batches) {
  // Full-canvas and block diffusion alike are the other side of the comparison.
  auto diffusion = [&](const std::string& name) {
    for (const EngineSpec& e : engines) {
      if (e.name == name) return !e.ar_family();
    }
    return false;
  };
  for (size_t i = 0; i < batches.size(); ++i) {
    double best_ar = -1, best_diffusion = -1;
    for (const Projection& p : rows) {
      if (p.batch != batches[i] || !p.fits_memory) continue;
      double& best = diffusion(p.engine) ? best_diffusion : best_ar;
      best = std::max(best, p.tokens_per_second);
    }
    if (best_ar < 0 || best_diffusion < 0) continue;
    if (best_ar >= best_diffusion) return batches[i];
  }
  return -1;
}

double UsdPerMillionTokens(double usd_per_hour, double tokens_per_second) {
  if (!(tokens_per_second > 0)) return std::numeric_limits<double>::infinity();
  return usd_per_hour / (tokens_per_second * 3600.0) * 1e6;
}

}  // namespace unmask::plan
