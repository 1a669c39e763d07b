// Dream served: every Dream golden case (tests/data/golden/dream, the Python reference's output;
// see tests/decode/dream_golden_test.cc) submitted to the server's engine thread (Scheduler) as the
// server builds it (tools/server/generation.cc: the request fields as `given`, unused parameters
// listed rather than refused) runs Dream's reference sampler by default and returns the golden
// canvas cut the way a served text is cut (engine/text_stream.h): the committed prefix (positions
// before the first mask), up to and including the first EOS/EOT, at most max_tokens; its streamed
// text is that prefix (EOS/EOT excluded) decoded as the prompt's continuation. Each case is also
// run batched (both admitted before the first step, one forward per step) with the next case of
// the same model and with a copy of itself: batching must change neither.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drain_util.h"
#include "engine/scheduler.h"
#include "golden_util.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::CachedModel;
using testing::Drain;
using testing::Outcome;

std::vector<std::string> GoldenFiles() { return testing::GoldenFiles("dream"); }

nlohmann::json Golden(const std::string& file) {
  return testing::ReadJson(testing::TestDataPath("golden/dream/" + file));
}

// The golden case as `unmask serve` turns a /v1/completions body with prompt = the ids and
// max_tokens, temperature, seed, steps, alg, eps, alg_temp, top_k and top_p into a request.
GenerationRequest ServedRequest(const nlohmann::json& g) {
  GenerationRequest r;
  r.prompt = g.at("prompt_ids").get<std::vector<int32_t>>();
  if (g.contains("suffix_ids")) {  // infilling: the server's suffix, tokenized
    r.suffix = g.at("suffix_ids").get<std::vector<int32_t>>();
    r.given.push_back({"suffix", "suffix"});
  }
  r.max_tokens = g.at("gen_length");
  r.refuse_unused = false;
  for (const char* name : {"top_p", "top_k", "steps", "alg", "eps", "alg_temp"}) {
    r.given.push_back({name, name});
  }
  const double temperature = g.at("temperature");
  const uint64_t seed = g.at("seed");
  r.ar.sampling.temperature = temperature;
  r.ar.sampling.seed = seed;
  r.ar.sampling.top_k = g.at("top_k");
  r.ar.sampling.top_p = g.at("top_p");
  r.diffusion.temperature = temperature;
  r.diffusion.seed = seed;
  r.diffusion.steps = g.at("steps");
  r.dream.alg = *DreamAlgFromName(g.at("alg").get<std::string>());
  r.dream.eps = g.at("eps");
  r.dream.alg_temp = g.at("alg_temp");
  return r;
}

// The golden canvas as the server returns it: the prefix before the first mask id, then up to and
// including the first EOS/EOT, at most max_tokens.
struct ExpectedOutput {
  std::vector<int32_t> ids;
  std::string text;
};
ExpectedOutput Expected(const nlohmann::json& g, const Tokenizer& tok) {
  const std::vector<int32_t> canvas = g.at("output_ids");
  const std::vector<int32_t> prompt = g.at("prompt_ids");
  const int64_t max_tokens = g.at("gen_length");
  const int32_t mask = tok.special().mask;
  const int32_t eos = tok.special().eos;
  const int32_t eot = tok.special().eot;
  EXPECT_GE(mask, 0);
  EXPECT_GE(eos, 0);
  ExpectedOutput out;
  bool ended = false;
  for (int32_t t : canvas) {
    if (t == mask || static_cast<int64_t>(out.ids.size()) >= max_tokens) break;
    out.ids.push_back(t);
    if (t == eos || t == eot) {
      ended = true;
      break;
    }
  }
  const std::vector<int32_t> text_ids(out.ids.begin(), out.ids.end() - (ended ? 1 : 0));
  out.text = tok.DecodeContinuation(prompt.back(), text_ids, /*skip_special=*/true);
  return out;
}

void ExpectServedGolden(const std::string& file, const nlohmann::json& g, const Tokenizer& tok,
                        const Outcome& o, const std::string& how) {
  ASSERT_EQ(o.done.type, StreamEvent::Type::kDone) << file << " " << how;
  ASSERT_TRUE(o.done.status.ok()) << file << " " << how << ": " << o.done.status.ToString();
  const ExpectedOutput want = Expected(g, tok);
  EXPECT_EQ(o.done.output_ids, want.ids) << file << " " << how;
  EXPECT_EQ(o.text, want.text) << file << " " << how;
  EXPECT_EQ(o.done.stats.completion_tokens, static_cast<int64_t>(want.ids.size()))
      << file << " " << how;
  EXPECT_EQ(o.done.stats.prompt_tokens, static_cast<int64_t>(g.at("prompt_ids").size()));
  const bool ended = !want.ids.empty() && tok.IsEog(want.ids.back());
  EXPECT_EQ(o.done.finish, ended ? FinishReason::kStop : FinishReason::kLength)
      << file << " " << how;
  // The sampler stops once the text is decided (an EOS/EOT in the committed prefix): never more
  // forwards than the reference took.
  EXPECT_GE(o.done.stats.nfe, 1) << file << " " << how;
  EXPECT_LE(o.done.stats.nfe, g.at("nfe").get<int64_t>()) << file << " " << how;
}

EngineModel Served(const nlohmann::json& g) {
  const std::string name = g.at("model");
  const LoadedModel& lm = CachedModel(name);
  return {name, lm.model.get(), lm.tokenizer.get()};
}

class DreamServedGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DreamServedGoldenTest, SchedulerReturnsTheGoldenCut) {
  const nlohmann::json g = Golden(GetParam());
  const EngineModel m = Served(g);
  Scheduler sched(SchedulerOptions{}, nullptr);
  auto index = sched.AddModel(m);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  sched.Start();
  const GenerationRequest req = ServedRequest(g);
  // The server's settling: Dream's reference sampler with the case's parameters.
  auto built = sched.Build(*index, req);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(built->kind, DecoderKind::kDream);
  EXPECT_TRUE(built->unused.empty());
  EXPECT_EQ(built->dream.gen_length, g.at("gen_length").get<int64_t>());
  EXPECT_EQ(built->dream.steps, g.at("steps").get<int64_t>());
  EXPECT_EQ(built->dream.top_k, g.at("top_k").get<int64_t>());
  EXPECT_EQ(built->dream.top_p, g.at("top_p").get<double>());
  auto stream = sched.Submit(*index, req);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  ExpectServedGolden(GetParam(), g, *m.tokenizer, Drain(**stream), "served alone");
  sched.Shutdown();
}

// The next case of the same model (cyclically), to batch with `file`.
std::string PartnerOf(const std::string& file) {
  const std::vector<std::string> files = GoldenFiles();
  const std::string model = Golden(file).at("model");
  const auto at = std::find(files.begin(), files.end(), file);
  for (size_t k = 1; k <= files.size(); ++k) {
    const std::string& f = files[(static_cast<size_t>(at - files.begin()) + k) % files.size()];
    if (Golden(f).at("model").get<std::string>() == model) return f;
  }
  return file;
}

TEST_P(DreamServedGoldenTest, BatchedWithAnotherCaseReturnsTheGoldenCuts) {
  const std::string partner = PartnerOf(GetParam());
  for (const std::string& second : {partner, GetParam()}) {
    const nlohmann::json ga = Golden(GetParam());
    const nlohmann::json gb = Golden(second);
    const EngineModel m = Served(ga);
    SchedulerOptions options;
    options.max_batch = 2;
    Scheduler sched(options, nullptr);
    auto index = sched.AddModel(m);
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    // Both queued before the engine thread starts: its first step admits both into one batch.
    auto a = sched.Submit(*index, ServedRequest(ga));
    auto b = sched.Submit(*index, ServedRequest(gb));
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    sched.Start();
    const Outcome oa = Drain(**a);
    const Outcome ob = Drain(**b);
    const std::string how = "batched with " + second;
    ExpectServedGolden(GetParam(), ga, *m.tokenizer, oa, how);
    ExpectServedGolden(second, gb, *m.tokenizer, ob, "batched with " + GetParam());
    // One forward per step for both: the requests really shared their forwards.
    EXPECT_EQ(sched.Load(*index).totals.forwards, std::max(oa.done.stats.nfe, ob.done.stats.nfe))
        << how;
    sched.Shutdown();
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, DreamServedGoldenTest, ::testing::ValuesIn(GoldenFiles()),
                         testing::GoldenCaseName);

TEST(DreamServedGoldenSetTest, HasCases) { EXPECT_GE(GoldenFiles().size(), 10u); }

}  // namespace
}  // namespace unmask
