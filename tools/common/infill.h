// Infilling (fill-in-the-middle): the text between a prompt and a suffix, as `unmask generate
// --suffix` and the server's `suffix` field ask for it.
//   - Diffusion models with bidirectional attention (LLaDA, Dream) fill it natively: the canvas
//     is prompt + masks + suffix (DecodeOptions::suffix, decode/decoder_factory.h).
//   - Autoregressive models can only do it when their vocabulary has fill-in-the-middle tokens;
//     then the prompt is rewritten in llama.cpp's PSM order (its /infill endpoint and
//     llama-infill): [FIM_PRE] prefix [FIM_SUF] suffix [FIM_MID], after BOS when the tokenizer
//     adds one, and the model writes the middle.
//   - Block-diffusion models (block-causal: SDAR, LLaDA 2.x, Fast-dLLM v2) cannot see text after
//     their block: refused.
#ifndef UNMASK_TOOLS_COMMON_INFILL_H_
#define UNMASK_TOOLS_COMMON_INFILL_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace unmask::tools {

// The fill-in-the-middle tokens of a vocabulary (-1 when absent), found by their text as
// llama.cpp's llama_vocab does when the GGUF has no tokenizer.ggml.fim_*_token_id keys:
// <|fim_prefix|> / <|fim_suffix|> / <|fim_middle|> (Qwen2.5, SmolLM-style <fim_prefix> ...,
// CodeLlama <PRE> <SUF> <MID>, DeepSeek <｜fim▁begin｜> <｜fim▁hole｜> <｜fim▁end｜>, Granite
// <fim-prefix> ...).
struct FimTokens {
  int32_t prefix = -1;
  int32_t suffix = -1;
  int32_t middle = -1;
  bool ok() const { return prefix >= 0 && suffix >= 0 && middle >= 0; }
};
FimTokens FindFimTokens(const Tokenizer& tok);

// [BOS when add_bos] FIM_PRE prefix FIM_SUF suffix FIM_MID: the prompt an autoregressive model
// with fill-in-the-middle tokens is given (`prefix` and `suffix` without BOS).
std::vector<int32_t> FimPrompt(const FimTokens& fim, std::span<const int32_t> prefix,
                               std::span<const int32_t> suffix, int32_t bos);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_INFILL_H_
