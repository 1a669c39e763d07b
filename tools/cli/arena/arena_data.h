// The arena's workload and quality judges: prompts (the held-out TinyStories the twins never
// trained on, or a user's file), the judge perplexity of outputs under an AR model of the same
// tokenizer (the measure of issue 5's fast-diffusion benchmark,
// scripts/bench/bench_diffusion_quality.py), and an independent judge's perplexity of the output
// texts, retokenized with its own tokenizer (SmolLM2-135M-Instruct by default).
#ifndef UNMASK_TOOLS_CLI_ARENA_ARENA_DATA_H_
#define UNMASK_TOOLS_CLI_ARENA_ARENA_DATA_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace unmask::tools {

// ../shared/data/corpus/tinystories_train_head_944k.txt next to the source tree ($UNMASK_CORPUS
// overrides).
std::string DefaultArenaCorpus();

// The held-out stories of the twins' corpus: the last 5% of stories (scripts/train/data.py
// split_stories / load_splits: paragraphs separated by one blank line, a new story starts on the
// line right after a paragraph). Errors: NotFound for a missing file; InvalidArgument when it
// holds no story.
StatusOr<std::vector<std::string>> HeldOutStories(const std::string& corpus_path);

// Prompt texts of a file: a .jsonl file gives each line's "prompt", "turns"[0], "question",
// "instruction" or "text" (the first present); any other file one prompt per non-blank line.
// Errors: NotFound; InvalidArgument naming the line of bad JSON or a line without a prompt field,
// or for a file without prompts.
StatusOr<std::vector<std::string>> ReadPromptFile(const std::string& path);

// The first `prompt_length` tokens of each text (BOS first when the tokenizer adds it); shorter
// texts are skipped. Errors: InvalidArgument when no text is long enough.
StatusOr<std::vector<std::vector<int32_t>>> TokenizePrompts(const Tokenizer& tok,
                                                            const std::vector<std::string>& texts,
                                                            int64_t prompt_length);

struct JudgeResult {
  double nll = 0;      // total negative log-likelihood, nats
  int64_t tokens = 0;  // scored tokens
  int64_t outputs = 0;
  double perplexity() const;  // exp(nll / tokens); 0 with no token
};

// Adds the judge's NLL of each continuation given its prompt to `result`: the output up to and
// including its first end-of-generation token (later positions are fill and not scored), one
// forward of prompt + continuation (no KV cache). The judge must be causal and share the
// vocabulary. Errors: InvalidArgument for a bidirectional judge, mismatched sizes or ids outside
// the judge's vocabulary, or prompt + continuation over its context; any forward error.
Status JudgeOutputs(const Model& judge, const Tokenizer& judge_tok,
                    const std::vector<std::vector<int32_t>>& prompts,
                    const std::vector<std::vector<int32_t>>& outputs, JudgeResult* result);

// A prompt and its output as text, for a judge with another tokenizer.
struct JudgeText {
  std::string prompt;  // the prompt as the engine saw it (its ids decoded, special tokens dropped)
  std::string output;  // the text the output adds after it, up to its first end-of-generation
                       // token (that token has no text and is not scored)
};

// The texts of `prompt` and `output` (ids of `tok`): Decode of the prompt, and DecodeContinuation
// of the output after the prompt's last token (so that prompt + output is the whole sequence's
// text), cut before the output's first end-of-generation token; special tokens dropped.
JudgeText DecodeForJudge(const Tokenizer& tok, std::span<const int32_t> prompt,
                         std::span<const int32_t> output);

// The judge's tokens for one text pair and the first one scored: ids = Encode(prompt + output,
// add_special = true) — BOS or not as the judge's tokenizer wants —, first = the length of the
// longest common prefix of ids and Encode(prompt, true), at least 1. A token that spans the
// boundary (a prompt cut inside a word) is scored as output. first == ids.size(): nothing to
// score (an empty output).
struct JudgeTokens {
  std::vector<int32_t> ids;
  size_t first = 1;
};
JudgeTokens RetokenizeForJudge(const Tokenizer& judge_tok, const JudgeText& text);

// Adds the judge's NLL of each output text given its prompt text to `result`, both retokenized
// with the judge's own tokenizer (RetokenizeForJudge); NLL over the output's tokens only, one
// forward of the whole sequence (no KV cache). Pairs with an empty output are skipped. Errors:
// InvalidArgument for a judge that is not causal or a sequence over its context; forward errors.
Status JudgeTexts(const Model& judge, const Tokenizer& judge_tok,
                  const std::vector<JudgeText>& texts, JudgeResult* result);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_ARENA_ARENA_DATA_H_
