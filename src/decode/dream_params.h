// Parameters and step schedule of Dream's reference sampler (HF Dream `generation_utils.py`
// `_sample`, copies in ZHZisZZ/dllm and NVlabs/Fast-dLLM; ALGORITHMS.md §2). Names follow the
// reference's `diffusion_generate` arguments.
#ifndef UNMASK_DECODE_DREAM_PARAMS_H_
#define UNMASK_DECODE_DREAM_PARAMS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace unmask {

// How a step picks the positions to commit (the reference's `alg`).
enum class DreamAlg {
  kOrigin,       // "origin": each masked position is committed with probability 1 - s/t
  kMaskGitPlus,  // "maskgit_plus": confidence = probability of the chosen token
  kTopKMargin,   // "topk_margin": confidence = top-1 minus top-2 probability
  kEntropy,      // "entropy": confidence = sum p log(p + 1e-10) (negative entropy)
};
std::string_view DreamAlgName(DreamAlg a);  // "origin" | "maskgit_plus" | ...
std::optional<DreamAlg> DreamAlgFromName(std::string_view name);

struct DreamParams {
  int64_t gen_length = 128;          // max_new_tokens: mask tokens appended to the prompt
  int64_t steps = 128;               // forward passes; any value >= 1 (not tied to gen_length)
  double eps = 1e-3;                 // last timestep of linspace(1, eps, steps + 1), in (0, 1)
  DreamAlg alg = DreamAlg::kOrigin;  // the reference's default (DreamGenerationConfig)
  double alg_temp = 0.0;             // > 0: positions drawn without replacement from
                                     // softmax(confidence / alg_temp) instead of top-k
  double temperature = 0.0;          // 0: argmax; > 0: sample from softmax(logits / T)
  double top_p = 1.0;                // nucleus filter, in (0, 1]; 1 = off (reference None)
  int64_t top_k = 0;                 // keep the top_k logits; 0 = off (reference None)
  uint64_t seed = 0;                 // keys the counter RNG (origin, T > 0, alg_temp > 0)
};

// InvalidArgument naming the parameter: gen_length <= 0, steps <= 0, eps outside (0, 1) or NaN,
// alg_temp / temperature negative or not finite, top_p outside (0, 1], top_k < 0, an empty
// prompt; OutOfRange when prompt_length + gen_length exceeds context_length.
Status ValidateDreamParams(const DreamParams& p, int64_t prompt_length, int64_t context_length);

// timesteps = torch.linspace(1, eps, steps + 1) in float32, by the kernel's scalar formula:
// n = steps + 1, step = (eps - 1) / (n - 1); t[i] = 1 + step * i for i < n / 2, else
// eps - step * (n - 1 - i); every operation rounded to float32, no fused multiply-add. (Torch's
// CPU kernel computes vector chunks as base + lane * step and CUDA contracts to FMA, so a few
// last bits can differ by machine; this formula is unmask's exact definition.) [steps + 1].
std::vector<float> DreamTimesteps(int64_t steps, double eps);

// 1 - s/t in float32 for step `step` (t = ts[step], s = ts[step + 1]): origin's transfer
// probability and the non-origin fraction. Requires step + 1 < ts.size().
float DreamTransferFraction(std::span<const float> ts, int64_t step);

// Tokens committed at `step` by the non-origin algs out of `num_masked` masked positions:
// int(float32(num_masked) * DreamTransferFraction) (truncation toward 0), and num_masked at the
// last step (step == ts.size() - 2). With steps == gen_length and eps = 1e-3 step 0 commits 0.
int64_t DreamNumTransfer(int64_t num_masked, std::span<const float> ts, int64_t step);

}  // namespace unmask

#endif  // UNMASK_DECODE_DREAM_PARAMS_H_
