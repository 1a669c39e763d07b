// Roofline projections of diffusion and autoregressive decoding (SERVING.md §4.3, "the
// arithmetic-intensity argument"): every forward of a decoding run is costed as
//   time = max(FLOPs / compute rate, bytes / memory rate) + a fixed per-forward overhead,
// with FLOPs and bytes from the same formulas the engine reports for its own forwards
// (ModelConfig::ForwardFlops / ForwardKvBytes / ForwardActivationBytes), so a projection for this
// CPU can be checked against what `unmask bench arena` measures.
#ifndef UNMASK_PLAN_PLANNER_H_
#define UNMASK_PLAN_PLANNER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/config.h"

namespace unmask::plan {

// What a machine can do, as the planner uses it (hardware.h turns a table entry into this).
struct MachineRates {
  double flops_per_second = 0;            // achievable dense GEMM rate (peak x efficiency), FLOP/s
  double bytes_per_second = 0;            // achievable memory read rate, bytes/s
  double overhead_ms = 0;                 // fixed cost per forward (launches, synchronisation), ms
  double memory_bytes = 0;                // capacity for weights + KV caches, bytes (0: unlimited)
  double weight_bytes_per_parameter = 2;  // bf16: 2, fp8: 1, f32: 4
  double kv_bytes_per_element = 2;        // KV cache dtype
  double activation_bytes_per_element = 2;
  // Achievable compute rate against the rows of the forward's matrix products (positions fed,
  // summed over the batch): measured (rows, FLOP/s) points in ascending rows, interpolated in
  // log2(rows) and held constant beyond the ends. Empty: flops_per_second at every size (the GPU
  // table's efficiency). A CPU runs a 16-row GEMM far below its large-GEMM peak.
  std::vector<std::pair<double, double>> flops_curve;
  // The compute rate for a forward of `rows` positions, FLOP/s.
  double FlopsAt(double rows) const;
  double ridge() const {  // FLOP/byte where the compute and memory roofs meet
    return bytes_per_second > 0 ? flops_per_second / bytes_per_second : 0;
  }
};

// kDiffusion: full-canvas diffusion (LLaDA, Dream); kBlockDiffusion: block-causal diffusion with
// an exact block KV cache (SDAR; decoding.md "Block diffusion").
enum class EngineKind { kAr, kArSpeculative, kDiffusion, kBlockDiffusion };
enum class DiffusionCache { kNone, kPrefix, kDual };

// One decoding engine configuration.
struct EngineSpec {
  std::string name;  // "ar", "ar+spec", "diffusion-exact", ...
  EngineKind kind = EngineKind::kAr;
  // kArSpeculative: drafts per verify forward (gamma: a chain's tokens or a tree's nodes; the
  // verify forward feeds gamma + 1 tokens) and the mean tokens committed per verify forward, bonus
  // token included (tau, in [1, gamma + 1]; SERVING.md §3). draft_cost: one drafter pass's time
  // relative to a target decode forward at the same batch (0: prompt lookup, no model);
  // draft_passes: drafter passes per verify step, -1 for gamma (a draft model, one forward per
  // drafted token); Medusa heads make 1, an EAGLE draft layer one per tree level.
  int64_t draft_max = 3;
  double tokens_per_verify = 1;
  double draft_cost = 0;
  int64_t draft_passes = -1;
  int64_t passes() const { return draft_passes < 0 ? draft_max : draft_passes; }
  // kDiffusion: semi-autoregressive block length N and tokens committed per forward k (exact
  // LLaDA decoding with steps == gen_length: 1). Cache: kNone feeds the whole canvas every forward
  // (LLaDA reference); kPrefix / kDual refresh every K/V with one full forward per block, then
  // feed the block and what follows it (prefix) or only the block (dual) — Fast-dLLM.
  // kBlockDiffusion: block_length is the model's attention block B and tokens_per_forward the
  // output tokens per forward over all of a request's forwards. block_separate_store (SDAR's own
  // schedule): the prefill of the prompt's whole blocks and each block's store forward are
  // forwards of their own (one token per step: B / (B + 1)), and every forward after the prefill
  // feeds one block of B positions against the cached prefix. Fused (the decoder's default): no
  // prefill or store forwards (one token per step: 1); a block's first forward also feeds the
  // prompt's whole blocks or the block before it.
  int64_t block_length = 32;
  double tokens_per_forward = 1;
  bool block_separate_store = false;
  DiffusionCache cache = DiffusionCache::kNone;

  // Full-canvas diffusion only (kBlockDiffusion is not).
  bool diffusion() const { return kind == EngineKind::kDiffusion; }
  bool block_diffusion() const { return kind == EngineKind::kBlockDiffusion; }
  bool ar_family() const { return kind == EngineKind::kAr || kind == EngineKind::kArSpeculative; }
};

// Error unless the spec is usable: block_length >= 1, tokens_per_forward in [1, block_length]
// (kBlockDiffusion: in (0, block_length]), draft_max >= 1 and tokens_per_verify in
// [1, draft_max + 1] for speculation, draft_cost >= 0.
Status ValidateEngineSpec(const EngineSpec& e);

struct Workload {
  int64_t prompt_length = 128;  // tokens
  int64_t gen_length = 256;     // output tokens per request (diffusion: rounded up to the block)
};

// One engine at one batch size. Times in ms, rates in tokens/s (output tokens of the whole batch).
struct Projection {
  std::string engine;
  int64_t batch = 1;
  bool fits_memory = true;        // weights + batch x (KV cache + resident activations) fit in
                                  // MachineRates::memory_bytes
  double forwards = 0;            // forwards per request (NFE; speculation: verify + draft)
  double tokens_per_forward = 0;  // output tokens per target forward
  double ttft_ms = 0;             // first output token (AR: the prefill; diffusion: first block)
  double tpot_ms = 0;             // (e2e - ttft) / (gen_length - 1)
  double e2e_ms = 0;              // whole request
  double tokens_per_second = 0;   // batch x gen_length / e2e
  double flops = 0;               // per batch run (all forwards)
  double bytes = 0;
  // Mixture-of-experts models: bytes of routed-expert weights read (counted in `bytes`), and the
  // mean experts one MoE layer's forward touches (ModelConfig::ExpectedExpertsHit of the
  // positions the batch feeds it).
  double expert_bytes = 0;
  double experts_hit_per_layer = 0;
  double compute_bound_fraction = 0;  // of the forward time spent in compute-bound forwards
  double arithmetic_intensity() const { return bytes > 0 ? flops / bytes : 0; }
};

// Projects one engine at one batch size (batch >= 1; requests start together and run to the end,
// a static batch). The model's weights count NumParameters() x weight_bytes_per_parameter once per
// forward; a mixture-of-experts model's routed experts count only those a forward is expected to
// touch (ModelConfig::ExpectedExpertsHit of batch x positions fed, per MoE layer). Errors:
// InvalidArgument for a bad spec, workload (lengths >= 1) or batch.
// One EAGLE draft-layer pass relative to a decode forward of `c`, for EngineSpec::draft_cost: the
// layer's weights (model/eagle_head.h: fc [d, 2d], one decoder layer of the model's attention and
// FFN shapes, a draft head of min(draft_vocab, vocab) rows) over the model's parameters (batch 1
// is memory-bound: the pass reads its weights once, as the forward reads the model's).
double EagleDraftCost(const ModelConfig& c, int64_t draft_vocab);

StatusOr<Projection> Project(const ModelConfig& model, const EngineSpec& engine,
                             const Workload& workload, const MachineRates& machine, int64_t batch);

// The smallest batch in `batches` (ascending) from which the best AR-family projection (kAr,
// kArSpeculative) has at least the tokens/s of the best diffusion one, full-canvas or block
// (batches[0] when AR is ahead from the start), -1 when it never catches up. `rows` holds
// projections of `engines`; projections that do not fit in memory are left out.
int64_t CrossoverBatch(const std::vector<EngineSpec>& engines, const std::vector<Projection>& rows,
                       const std::vector<int64_t>& batches);

// USD per million output tokens at `usd_per_hour` and `tokens_per_second` (SERVING.md §4.5).
double UsdPerMillionTokens(double usd_per_hour, double tokens_per_second);

}  // namespace unmask::plan

#endif  // UNMASK_PLAN_PLANNER_H_
