// Grammar-constrained sampling cost per token (Google Benchmark): a JSON text as the model would
// produce it (tokenized with a real vocabulary) is replayed through a fresh GrammarConstraint:
// per token, Allowed() (the vocabulary-trie walk, or the mask cache) plus Accept(), plus the
// decoder's masking of the logit row. Counters: us_per_token, walks_per_token (walks not answered
// by the cache), nodes_per_walk (trie nodes visited), vs_sampler: the cost per token over the
// sampling chain's (Sampler::Distribution at temperature 0.8, top-p 0.95 on a row of the same
// vocabulary), measured in the same run. BM_VocabTrie: building the trie (once per model).
//
// The vocabulary: $UNMASK_BENCH_VOCAB (a GGUF), else SmolLM2-135M-Instruct
// (scripts/fetch-smollm2.sh), else ../shared/data/vocab/ggml-vocab-gpt-2.gguf.
//
//   unmask_grammar_bench [benchmark flags]
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/token_constraint.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace unmask {
namespace {

std::string VocabPath() {
  if (const char* p = std::getenv("UNMASK_BENCH_VOCAB")) return p;
  const char* home = std::getenv("HOME");
  const std::string cache = std::getenv("UNMASK_CACHE") != nullptr
                                ? std::getenv("UNMASK_CACHE")
                                : std::string(home != nullptr ? home : "") + "/.cache/unmask";
  const std::string smol = cache + "/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (std::filesystem::exists(smol)) return smol;
  return std::string(UNMASK_SOURCE_DIR) + "/../shared/data/vocab/ggml-vocab-gpt-2.gguf";
}

struct Setup {
  std::unique_ptr<Tokenizer> tokenizer;
  std::shared_ptr<const grammar::VocabTrie> trie;
  std::string path;
};

const Setup& Vocab() {
  static const Setup s = [] {
    Setup v;
    v.path = VocabPath();
    auto file = gguf::GgufFile::Open(v.path);
    if (!file.ok()) {
      std::fprintf(stderr, "grammar_bench: %s\n", file.status().message().c_str());
      std::exit(1);
    }
    auto tok = Tokenizer::FromGguf(**file);
    if (!tok.ok()) {
      std::fprintf(stderr, "grammar_bench: %s\n", tok.status().message().c_str());
      std::exit(1);
    }
    v.tokenizer = std::move(tok).value();
    v.trie = grammar::VocabTrie::Build(*v.tokenizer);
    std::fprintf(stderr, "grammar_bench: vocabulary %s (%d tokens)\n", v.path.c_str(),
                 v.tokenizer->vocab_size());
    return v;
  }();
  return s;
}

struct Case {
  const char* name;
  const char* schema;  // "" = JSON mode (any object)
  const char* text;    // what the model writes
};

const Case kCases[] = {
    {"json_object", "",
     R"({"title": "The Cat", "pages": 120, "tags": ["pets", "fun"], "rating": 4.5, "ok": true})"},
    {"schema_person",
     R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer",
         "minimum":0,"maximum":150},"mood":{"enum":["happy","sad"]},"tags":{"type":"array",
         "items":{"type":"string"}}},"required":["name","age","mood"]})",
     R"({"name": "Ann Smith \"Nan\"", "age": 42, "mood": "happy", "tags": ["a", "bb", "ccc"]})"},
    {"schema_long_string",
     R"({"type":"object","properties":{"story":{"type":"string"}},"required":["story"]})",
     R"({"story": "Once upon a time there was a little girl named Lily who loved to play in the park with her red ball and her dog Max."})"},
};

std::shared_ptr<const grammar::Grammar> GrammarOf(const Case& c) {
  auto gbnf = c.schema[0] == '\0' ? StatusOr<std::string>(grammar::JsonObjectGbnf())
                                  : grammar::JsonSchemaTextToGbnf(c.schema);
  if (!gbnf.ok()) std::abort();
  auto g = grammar::ParseGbnf(*gbnf);
  if (!g.ok()) std::abort();
  return std::make_shared<const grammar::Grammar>(std::move(g).value());
}

std::vector<float> RandomRow(size_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0, 3);
  std::vector<float> row(n);
  for (float& x : row) x = d(rng);
  return row;
}

// Seconds per token of the sampling chain alone (the unconstrained per-token cost).
double SamplerSecondsPerToken(const std::vector<float>& row) {
  SamplingParams p;
  p.temperature = 0.8;
  p.top_p = 0.95;
  const Sampler sampler(p);
  const std::vector<int32_t> history;
  const int n = 50;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t sink = 0;
  for (int i = 0; i < n; ++i) sink += sampler.Distribution(row, history).ids.size();
  benchmark::DoNotOptimize(sink);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
}

void BM_Constrained(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  state.SetLabel(c.name);
  const Setup& v = Vocab();
  const auto g = GrammarOf(c);
  const std::vector<TokenId> ids = v.tokenizer->Encode(c.text, false, false);
  const std::vector<float> row = RandomRow(static_cast<size_t>(v.tokenizer->vocab_size()));
  std::vector<float> masked(row.size());
  int64_t tokens = 0, walks = 0, nodes = 0;
  for (auto _ : state) {
    grammar::GrammarConstraint constraint(g, v.trie, c.name);
    for (TokenId t : ids) {
      const std::span<const uint8_t> allowed = constraint.Allowed();
      for (size_t i = 0; i < row.size(); ++i) {
        masked[i] = allowed[i] ? row[i] : -std::numeric_limits<float>::infinity();
      }
      benchmark::DoNotOptimize(masked.data());
      if (!constraint.Accept(t).ok()) {
        state.SkipWithError("a token of the text was refused");
        return;
      }
    }
    tokens += static_cast<int64_t>(ids.size());
    walks += constraint.walks();
    nodes += constraint.nodes_visited();
  }
  const double sampler_s = SamplerSecondsPerToken(row);
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.counters["us_per_token"] =
      benchmark::Counter(static_cast<double>(tokens) * 1e-6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["walks_per_token"] = static_cast<double>(walks) / static_cast<double>(tokens);
  state.counters["nodes_per_walk"] =
      walks > 0 ? static_cast<double>(nodes) / static_cast<double>(walks) : 0.0;
  state.counters["sampler_us"] = sampler_s * 1e6;
  state.SetItemsProcessed(tokens);
  // The run's time per token over the sampler's (a rate of tokens * sampler_s, inverted).
  state.counters["vs_sampler"] =
      benchmark::Counter(static_cast<double>(tokens) * sampler_s,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Constrained)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

void BM_VocabTrie(benchmark::State& state) {
  const Setup& v = Vocab();
  for (auto _ : state) {
    auto trie = grammar::VocabTrie::Build(*v.tokenizer);
    benchmark::DoNotOptimize(trie.get());
  }
  state.counters["nodes"] = static_cast<double>(v.trie->nodes.size());
}
BENCHMARK(BM_VocabTrie)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace unmask

BENCHMARK_MAIN();
