#include "cli/arena/arena_data.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/cli_util.h"

namespace unmask::tools {
namespace {

StatusOr<std::string> ReadAll(const std::string& path, const std::string& what) {
  return ReadRegularFile(path, size_t{1} << 30, what);
}

std::string RStrip(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

// Adds to `result` the judge's NLL of seq[first..] given what precedes each token: one forward of
// `seq` (no KV cache) with logit rows first - 1 .. size - 2 (row r predicts token r + 1).
Status ScoreSequence(const Model& judge, const std::vector<int32_t>& seq, size_t first,
                     Workspace& ws, Tensor& logits, JudgeResult* result) {
  const ModelConfig& c = judge.config();
  if (static_cast<int64_t>(seq.size()) > c.context_length) {
    return InvalidArgumentError("judge: prompt + output (" + std::to_string(seq.size()) +
                                " tokens) exceed its context of " +
                                std::to_string(c.context_length));
  }
  for (int32_t id : seq) {
    if (id < 0 || id >= c.vocab_size) {
      return InvalidArgumentError("judge: token id " + std::to_string(id) +
                                  " is outside its vocabulary");
    }
  }
  std::vector<int32_t> rows;
  for (size_t r = first - 1; r + 1 < seq.size(); ++r) rows.push_back(static_cast<int32_t>(r));
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{seq, 0, rows});
  const auto n_rows = static_cast<int64_t>(rows.size());
  if (logits.shape().rank() != 2 || logits.shape()[0] < n_rows ||
      logits.shape()[1] != c.vocab_size) {
    logits = Tensor(DType::kF32, {n_rows, c.vocab_size});
  }
  const TensorView out{logits.data(), DType::kF32, Shape{n_rows, c.vocab_size}};
  UNMASK_RETURN_IF_ERROR(judge.Forward(plan, ws, out, nullptr));
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = logits.as<float>() + r * c.vocab_size;
    double mx = row[0];
    for (int64_t v = 1; v < c.vocab_size; ++v) mx = std::max(mx, static_cast<double>(row[v]));
    double sum = 0;
    for (int64_t v = 0; v < c.vocab_size; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
    const int32_t target = seq[static_cast<size_t>(rows[static_cast<size_t>(r)]) + 1];
    result->nll += -(static_cast<double>(row[target]) - mx - std::log(sum));
  }
  result->tokens += n_rows;
  result->outputs += 1;
  return Status::Ok();
}

// The judge reads its inputs left to right: a bidirectional or block-causal model is no judge.
Status CheckCausalJudge(const Model& judge) {
  if (judge.config().needs_mask_token()) {
    return InvalidArgumentError("the judge must be an autoregressive model");
  }
  return Status::Ok();
}

}  // namespace

std::string DefaultArenaCorpus() {
  if (const char* env = std::getenv("UNMASK_CORPUS"); env && *env) return env;
  return std::string(UNMASK_SOURCE_DIR) + "/../shared/data/corpus/tinystories_train_head_944k.txt";
}

StatusOr<std::vector<std::string>> HeldOutStories(const std::string& corpus_path) {
  UNMASK_ASSIGN_OR_RETURN(std::string text, ReadAll(corpus_path, "corpus"));
  std::vector<std::string> stories, paragraphs;
  bool prev_blank = true;
  auto flush = [&] {
    std::string story;
    for (size_t i = 0; i < paragraphs.size(); ++i) story += (i ? "\n\n" : "") + paragraphs[i];
    stories.push_back(std::move(story));
    paragraphs.clear();
  };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    line = RStrip(line);
    if (line.empty()) {
      prev_blank = true;
      continue;
    }
    if (!prev_blank && !paragraphs.empty()) flush();
    paragraphs.push_back(line);
    prev_blank = false;
  }
  if (!paragraphs.empty()) flush();
  if (stories.empty()) return InvalidArgumentError(corpus_path + ": no story in the corpus");
  const auto held = std::max<size_t>(
      1, static_cast<size_t>(std::llround(static_cast<double>(stories.size()) * 0.05)));
  return std::vector<std::string>(stories.end() - static_cast<std::ptrdiff_t>(held), stories.end());
}

StatusOr<std::vector<std::string>> ReadPromptFile(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(std::string text, ReadAll(path, "prompt file"));
  const bool jsonl = path.size() >= 6 && path.substr(path.size() - 6) == ".jsonl";
  std::vector<std::string> prompts;
  std::istringstream lines(text);
  int64_t n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    line = RStrip(line);
    if (line.empty()) continue;
    if (!jsonl) {
      prompts.push_back(line);
      continue;
    }
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return InvalidArgumentError(path + ":" + std::to_string(n) + ": not a JSON object");
    }
    std::string prompt;
    for (const char* key : {"prompt", "turns", "question", "instruction", "text"}) {
      if (!j.contains(key)) continue;
      const nlohmann::json& v = j.at(key);
      if (v.is_string()) prompt = v.get<std::string>();
      if (v.is_array() && !v.empty() && v[0].is_string()) prompt = v[0].get<std::string>();
      if (!prompt.empty()) break;
    }
    if (prompt.empty()) {
      return InvalidArgumentError(path + ":" + std::to_string(n) +
                                  ": no prompt, turns, question, instruction or text field");
    }
    prompts.push_back(std::move(prompt));
  }
  if (prompts.empty()) return InvalidArgumentError(path + ": no prompts");
  return prompts;
}

StatusOr<std::vector<std::vector<int32_t>>> TokenizePrompts(const Tokenizer& tok,
                                                            const std::vector<std::string>& texts,
                                                            int64_t prompt_length) {
  std::vector<std::vector<int32_t>> out;
  for (const std::string& t : texts) {
    std::vector<int32_t> ids = tok.Encode(t, /*add_special=*/true, /*parse_special=*/false);
    if (static_cast<int64_t>(ids.size()) < prompt_length) continue;
    ids.resize(static_cast<size_t>(prompt_length));
    out.push_back(std::move(ids));
  }
  if (out.empty()) {
    return InvalidArgumentError("no prompt has " + std::to_string(prompt_length) +
                                " tokens; give a smaller --prompt-length");
  }
  return out;
}

double JudgeResult::perplexity() const {
  return tokens > 0 ? std::exp(nll / static_cast<double>(tokens)) : 0.0;
}

Status JudgeOutputs(const Model& judge, const Tokenizer& judge_tok,
                    const std::vector<std::vector<int32_t>>& prompts,
                    const std::vector<std::vector<int32_t>>& outputs, JudgeResult* result) {
  UNMASK_RETURN_IF_ERROR(CheckCausalJudge(judge));
  if (prompts.size() != outputs.size()) {
    return InvalidArgumentError("judge: prompts and outputs differ in number");
  }
  Workspace ws;
  Tensor logits;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<int32_t> cont = outputs[i];
    const auto eog =
        std::find_if(cont.begin(), cont.end(), [&](int32_t id) { return judge_tok.IsEog(id); });
    if (eog != cont.end()) cont.erase(eog + 1, cont.end());
    if (cont.empty() || prompts[i].empty()) continue;
    std::vector<int32_t> seq = prompts[i];
    seq.insert(seq.end(), cont.begin(), cont.end());
    // The rows from the last prompt position to the one before the last continuation token.
    UNMASK_RETURN_IF_ERROR(ScoreSequence(judge, seq, prompts[i].size(), ws, logits, result));
  }
  return Status::Ok();
}

JudgeText DecodeForJudge(const Tokenizer& tok, std::span<const int32_t> prompt,
                         std::span<const int32_t> output) {
  JudgeText t;
  t.prompt = tok.Decode(prompt, /*skip_special=*/true);
  const auto eog =
      std::find_if(output.begin(), output.end(), [&](int32_t id) { return tok.IsEog(id); });
  const std::span<const int32_t> cut(output.begin(), eog);
  t.output = tok.DecodeContinuation(prompt.empty() ? kNoToken : prompt.back(), cut,
                                    /*skip_special=*/true);
  return t;
}

JudgeTokens RetokenizeForJudge(const Tokenizer& judge_tok, const JudgeText& text) {
  JudgeTokens t;
  t.ids = judge_tok.Encode(text.prompt + text.output, /*add_special=*/true,
                           /*parse_special=*/false);
  const std::vector<int32_t> prompt =
      judge_tok.Encode(text.prompt, /*add_special=*/true, /*parse_special=*/false);
  size_t k = 0;
  while (k < prompt.size() && k < t.ids.size() && prompt[k] == t.ids[k]) ++k;
  // The first token has no context to be predicted from: it is never scored.
  t.first = std::min(std::max<size_t>(k, 1), t.ids.size());
  return t;
}

Status JudgeTexts(const Model& judge, const Tokenizer& judge_tok,
                  const std::vector<JudgeText>& texts, JudgeResult* result) {
  UNMASK_RETURN_IF_ERROR(CheckCausalJudge(judge));
  Workspace ws;
  Tensor logits;
  for (const JudgeText& text : texts) {
    if (text.output.empty()) continue;
    const JudgeTokens t = RetokenizeForJudge(judge_tok, text);
    if (t.first >= t.ids.size()) continue;
    UNMASK_RETURN_IF_ERROR(ScoreSequence(judge, t.ids, t.first, ws, logits, result));
  }
  return Status::Ok();
}

}  // namespace unmask::tools
