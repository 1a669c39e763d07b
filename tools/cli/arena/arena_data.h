// The arena's workload and quality judge: prompts (the held-out TinyStories the twins never trained
// on, or a user's file) and the judge perplexity of outputs under an AR model (the measure of
// issue 5's fast-diffusion benchmark, scripts/bench/bench_diffusion_quality.py).
#ifndef UNMASK_TOOLS_CLI_ARENA_ARENA_DATA_H_
#define UNMASK_TOOLS_CLI_ARENA_ARENA_DATA_H_

#include <cstdint>
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

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_CLI_ARENA_ARENA_DATA_H_
