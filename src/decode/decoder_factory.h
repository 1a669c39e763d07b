// The one place where a request's decoding parameters are settled and validated, and the decoder
// that runs it is built (ARCHITECTURE.md "Main interfaces"). The CLI (`generate`, `bench`), the
// server, the arena and the router all call it; nothing else re-derives these rules:
//   - which decoder: AR models get ArDecoder; diffusion models the block decoder; Dream models
//     Dream's reference sampler unless a block-decoder parameter is given (sampler kAuto);
//     block-diffusion (block-causal) models BlockDiffusionDecoder;
//   - the canvas rule: gen_length = max_tokens rounded up to a multiple of block_length
//     (DiffusionCanvasLength; round_canvas, the server); the text returned is cut to max_tokens;
//   - default steps (steps <= 0): DefaultDiffusionSteps;
//   - which commit rule a parameter implies when `commit` is not given: low_threshold ->
//     hierarchy, factor -> factor, threshold -> threshold (unless the base rule already uses a
//     threshold);
//   - which parameters a model kind or a rule does not use: an InvalidArgument error naming the
//     parameter as the caller wrote it (refuse_unused: the CLI and the server, where a model that
//     refuses a field is not a candidate of model "auto"), or a list the caller may log.
#ifndef UNMASK_DECODE_DECODER_FACTORY_H_
#define UNMASK_DECODE_DECODER_FACTORY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "decode/decoder.h"
#include "decode/decoder_ar.h"
#include "decode/decoder_block_diffusion.h"
#include "decode/decoder_diffusion.h"
#include "decode/decoder_dream.h"
#include "decode/decoder_fast_dllm_v2.h"
#include "decode/drafter.h"
#include "model/config.h"

namespace unmask {

// Token ids a decoder needs, from the model's tokenizer (never constants); -1 when absent.
using ModelTokenIds = DiffusionTokenIds;

// A model as the factory sees it (not owned).
struct DecoderModel {
  const ModelConfig* config = nullptr;
  ModelTokenIds ids;
  std::string name;  // in messages, e.g. "model.gguf"
};

// Which diffusion decoder a Dream-layout model runs.
enum class DiffusionSampler {
  kAuto,   // Dream: its reference sampler unless a block-decoder parameter is given
  kBlock,  // decode/decoder_diffusion.h
  kDream,  // decode/decoder_dream.h (Dream models only)
};

// A parameter the caller set explicitly. `name` is its canonical name, the OpenAI/LLaDA request
// field ("top_k", "steps", "block_length", "speculative", ...); `label` is how the user wrote it
// ("--top-k"), used in messages.
struct GivenParam {
  std::string name;
  std::string label;
};

// The CLI's and Dream's evaluation default for Dream's sampler (the reference default is origin,
// which commits random positions).
inline DreamParams DefaultDreamParams() {
  DreamParams p;
  p.alg = DreamAlg::kEntropy;
  return p;
}

// DiffusionParams with steps = 0: the default-steps rule applies unless steps are set.
inline DiffusionParams DefaultStepsParams() {
  DiffusionParams p;
  p.steps = 0;
  return p;
}

// What a caller asks for, before the rules above settle it.
struct DecodeOptions {
  // Tokens to return. AR: n_predict (-1: until EOS or a full context). Diffusion: the text length;
  // the canvas is this rounded up to a multiple of block_length. Must be >= 1 for diffusion.
  int64_t max_tokens = 128;
  ArParams ar;  // n_predict is set from max_tokens
  // Diffusion: gen_length is set from max_tokens; steps <= 0: DefaultDiffusionSteps; the
  // temperature and seed also drive Dream's sampler.
  DiffusionParams diffusion = DefaultStepsParams();
  DreamParams dream = DefaultDreamParams();  // alg, eps, alg_temp (top_k/top_p come from `ar`)
  // Block-diffusion models (SDAR): remasking (SDAR's strategy names), denoising_steps,
  // confidence_threshold, eb_threshold. gen_length, block_length (default: the model's
  // diffusion.block_length), temperature, seed, top_k, top_p and the stop ids are settled from
  // max_tokens, `diffusion`, `ar` and the model (MakeDecoder); `steps`, when given, means
  // denoising_steps (steps per block, as SDAR counts them).
  BlockParams block;
  // Fast-dLLM v2 models: small_block_size (--small-block-size; default 8). block_size
  // (block_length, default the model's bd_size), threshold (default 0.9), temperature, top_p,
  // seed and the stop / pad ids are settled from the common fields and the model (MakeDecoder).
  FastDllmV2Params fast_dllm_v2;
  // The remasking strategy by name as the caller gave it ("" = the decoder's default): LLaDA's
  // (low_confidence, random) for diffusion models, SDAR's (BlockRemaskingNames()) for
  // block-diffusion models; the factory parses it for the decoder that runs and refuses the other
  // family's names.
  std::string remasking;
  DiffusionSampler sampler = DiffusionSampler::kAuto;
  bool speculative_lookup = false;  // AR: n-gram prompt-lookup drafting (owned by the decoder)
  int32_t lookup_ngram_max = 4;
  Drafter* drafter = nullptr;  // AR: a model drafter (not owned; outlives the decoder)
  // AR: Medusa drafting with these heads (not owned; outlive the decoder), a drafter per decoder
  // owned by it; used when `drafter` is null.
  const MedusaHeads* medusa_heads = nullptr;
  MedusaDrafterParams medusa;
  // AR: EAGLE drafting with this draft layer (not owned) over `eagle_base`, the target model the
  // decoder runs on (its token embeddings feed the layer); a drafter per decoder owned by it;
  // used when `drafter` and `medusa_heads` are null.
  const EagleHead* eagle_head = nullptr;
  const Model* eagle_base = nullptr;
  EagleDrafterParams eagle;
  std::vector<GivenParam> given;  // explicitly set parameters (the kind and rule checks)
  bool refuse_unused = true;      // false: unused parameters are listed, not refused
  // true: the canvas is max_tokens rounded up to whole blocks and the text cut back (the server);
  // false: max_tokens is gen_length itself and must be a multiple of block_length, as in the
  // LLaDA reference's generate (the CLI's -n).
  bool round_canvas = true;
  int32_t kv_seq = 0;  // KV cache sequence of the decoder
  // Infilling: token ids after the generated span (llama-server's and OpenAI's `suffix`). The
  // LLaDA and Dream decoders (bidirectional attention) run the canvas prompt + masks + suffix; the
  // canvas is max_tokens long (one block unless block_length is given: a canvas rounded up and
  // cut back would no longer join the suffix). Any other decoder: InvalidArgument (an AR model
  // with fill-in-the-middle tokens gets a rewritten prompt from the caller instead; see
  // tools/common/infill.h).
  std::vector<int32_t> suffix;
  // The context the request may use (llama.cpp's -c / --ctx-size): 0 = the model's
  // context_length; a smaller value caps prompt + output; a larger one is refused (InvalidArgument:
  // unmask does not extend a model's context).
  int64_t context_length = 0;
  // Grammar-constrained sampling (ArDecoder::SetConstraint): called once per decoder built (each
  // of n choices gets its own state); empty = none. AR models only: any other decoder is refused
  // with an InvalidArgument naming `constraint_label` (constrained unmasking is not implemented).
  std::function<std::unique_ptr<TokenConstraint>()> make_constraint;
  std::string constraint_label = "grammar";  // how the caller asked for it: "response_format", ...
};

// True when `name` is in `options.given`.
bool Given(const DecodeOptions& options, std::string_view name);

// The canvas rule: max_tokens rounded up to a multiple of block_length (block_length <= 0:
// max_tokens).
int64_t DiffusionCanvasLength(int64_t max_tokens, int64_t block_length);

// The most tokens a decoder of `kind` can generate after `prompt_length` prompt tokens within
// `config.context_length` (<= 0: none fit): AR: the context left; block diffusion (SDAR): whole
// blocks of `block_length` aligned to position 0; Fast-dLLM v2: its blocks after the prompt's
// whole blocks, one position kept free; full-canvas diffusion: the context left rounded down to a
// multiple of `block_length` (Dream: the context left). block_length < 1 counts as 1.
int64_t MaxTokensInContext(const ModelConfig& config, DecoderKind kind, int64_t prompt_length,
                           int64_t block_length);

// The length of a request that runs until EOS or the context (max_tokens -1) on a model with
// `config` (named `name` in messages): MaxTokensInContext for the decoder `options` select, with
// its block length (block_length when given, else the model's) and options.context_length.
// Errors: InvalidArgument for a full-canvas decoder (LLaDA, Dream: the canvas has a fixed length);
// OutOfRange when no token fits after the prompt.
StatusOr<int64_t> UntilDoneLength(const ModelConfig& config, std::string_view name,
                                  int64_t prompt_length, const DecodeOptions& options);

// Steps when none are given: one token per step up to 128 tokens (LLaDA's example setting, 128
// steps for 128 tokens), then 128 steps rounded down to a multiple of the block count (at least
// one step per block).
int64_t DefaultDiffusionSteps(int64_t gen_length, int64_t block_length);

// The block decoder's parameters for `options`: gen_length (canvas rule), default steps, the
// implied commit rule. `unused` (may be null) receives the labels of given rule parameters the
// settled rule does not use. Errors (refuse_unused): InvalidArgument "<label> does not apply to
// commit <rule>" / "... applies to cache vicinity"; max_tokens < 1.
StatusOr<DiffusionParams> SettleDiffusionParams(const DecodeOptions& options,
                                                std::vector<std::string>* unused = nullptr);

// The block-diffusion decoder's parameters for `options` on `model` (see DecodeOptions::block).
// Errors: InvalidArgument when --steps and --denoising-steps disagree, or a strategy parameter
// (threshold, eb_threshold) is given for another strategy; max_tokens < 1.
StatusOr<BlockParams> SettleBlockParams(const DecoderModel& model, const DecodeOptions& options);

// A built decoder and how its request was settled.
struct BuiltDecoder {
  std::unique_ptr<Decoder> decoder;
  DecoderKind kind = DecoderKind::kAr;
  ArParams ar;                      // kAr: as run
  DiffusionParams diffusion;        // kDiffusion: as run
  DreamParams dream;                // kDream: as run
  BlockParams block;                // kBlockDiffusion: as run
  FastDllmV2Params fast_dllm_v2;    // kFastDllmV2: as run
  std::vector<std::string> unused;  // labels of given parameters this decoder does not use
};

// Which decoder `options` selects for `model` (no validation).
DecoderKind SelectDecoder(const ModelConfig& config, const DecodeOptions& options);

// Settles `options` for `model` and builds the decoder for `prompt`.
// Errors: InvalidArgument for a parameter of another model kind, sampler or rule (refuse_unused),
// invalid values (the decoders' Create errors), max_tokens < 1 for diffusion or < -1 for AR, a
// fixed-rule `steps` beyond the context length (the most forwards a request may take);
// OutOfRange when the prompt plus max_tokens (AR) or the canvas (diffusion) exceed the context;
// InvalidArgument for make_constraint on a non-AR decoder.
StatusOr<BuiltDecoder> MakeDecoder(const DecoderModel& model, std::span<const int32_t> prompt,
                                   const DecodeOptions& options);

}  // namespace unmask

#endif  // UNMASK_DECODE_DECODER_FACTORY_H_
