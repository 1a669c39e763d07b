// The server's engine loop (engine/scheduler.h) on the twins: requests submitted together run as
// one batch per step and each gets exactly the tokens of running it alone at temperature 0 (AR:
// continuous batching; diffusion: batched denoising, mixed modes); cancellation and deadlines end
// a request within a step and free its slot; a full queue refuses; invalid requests are refused by
// Build; the metrics count what happened.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "drain_util.h"
#include "engine/engine.h"
#include "engine/scheduler.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

using namespace std::chrono_literals;

const LoadedModel& Twin(const std::string& which) {
  static std::map<std::string, LoadedModel> cache;
  auto it = cache.find(which);
  if (it == cache.end()) {
    auto lm = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-" + which + ".gguf",
                        LoadOptions{});
    EXPECT_TRUE(lm.ok()) << lm.status().ToString();
    it = cache.emplace(which, std::move(lm).value()).first;
  }
  return it->second;
}

EngineModel Engine(const std::string& which) {
  const LoadedModel& lm = Twin(which);
  return {which, lm.model.get(), lm.tokenizer.get()};
}

using testing::Drain;
using testing::Outcome;

GenerationRequest ArRequest(const std::string& prompt, int64_t max_tokens) {
  GenerationRequest g;
  g.prompt = Twin("ar").tokenizer->Encode(prompt, true, false);
  g.max_tokens = max_tokens;
  g.ar.sampling.temperature = 0;
  return g;
}

GenerationRequest DiffusionRequest(const std::string& prompt, int64_t max_tokens) {
  GenerationRequest g;
  g.prompt = Twin("llada").tokenizer->Encode(prompt, true, false);
  g.max_tokens = max_tokens;
  g.diffusion.block_length = 16;
  g.diffusion.steps = 0;  // one per token
  return g;
}

// The text of running `g` alone with the in-process loops (no scheduler).
std::string SoloAr(const GenerationRequest& g) {
  const LoadedModel& lm = Twin("ar");
  ArParams p = g.ar;
  p.n_predict = g.max_tokens;
  auto d =
      ArDecoder::Create(p, {lm.tokenizer->special().eos, lm.tokenizer->special().eot}, g.prompt,
                        lm.model->config().context_length, lm.model->config().vocab_size);
  EXPECT_TRUE(d.ok());
  Decoder* const one[1] = {&*d};
  EXPECT_TRUE(RunToCompletion(*lm.model, one, nullptr).ok());
  std::vector<int32_t> out(d->generated().begin(), d->generated().end());
  const auto eos =
      std::find_if(out.begin(), out.end(), [&](int32_t t) { return lm.tokenizer->IsEog(t); });
  out.erase(eos, out.end());
  return lm.tokenizer->Decode(out, true);
}

std::string SoloDiffusion(const GenerationRequest& g) {
  const LoadedModel& lm = Twin("llada");
  DiffusionParams p = g.diffusion;
  // The served canvas: max_tokens rounded up to whole blocks, one step per token.
  p.gen_length = (g.max_tokens + p.block_length - 1) / p.block_length * p.block_length;
  p.steps = p.steps > 0 ? p.steps : p.gen_length;
  const auto& sp = lm.tokenizer->special();
  auto d =
      DiffusionDecoder::Create(p, {sp.mask, sp.eos, sp.eot}, g.prompt,
                               lm.model->config().context_length, lm.model->config().vocab_size);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  Decoder* const one[1] = {&*d};
  EXPECT_TRUE(RunToCompletion(*lm.model, one, nullptr).ok());
  std::vector<int32_t> out(d->generated().begin(), d->generated().end());
  out.resize(static_cast<size_t>(g.max_tokens));
  const auto eos =
      std::find_if(out.begin(), out.end(), [&](int32_t t) { return lm.tokenizer->IsEog(t); });
  out.erase(eos, out.end());
  return lm.tokenizer->Decode(out, true);
}

const std::vector<std::string> kPrompts = {
    "Once upon a time", "Tom had a red ball. He liked to throw it high in the sky and",
    "The cat sat", "Lily and her mom went to the park"};

TEST(SchedulerTest, ArContinuousBatchingMatchesSoloRuns) {
  MetricsRegistry metrics;
  Scheduler s({/*max_batch=*/4, /*max_queue=*/16, /*max_batched_tokens=*/4096}, &metrics);
  auto index = s.AddModel(Engine("ar"));
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  // Different lengths: requests leave the batch at different steps while others continue.
  std::vector<GenerationRequest> reqs;
  for (size_t i = 0; i < kPrompts.size(); ++i) reqs.push_back(ArRequest(kPrompts[i], 8 + 9 * i));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) {
    ASSERT_TRUE(s.Build(*index, r).ok());
    auto st = s.Submit(*index, r);
    ASSERT_TRUE(st.ok());
    streams.push_back(*st);
  }
  s.Start();
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Outcome o = Drain(*streams[i]);
    EXPECT_EQ(o.text, SoloAr(reqs[i])) << "request " << i;
    EXPECT_TRUE(o.done.finish == FinishReason::kLength || o.done.finish == FinishReason::kStop);
    EXPECT_GT(o.done.stats.nfe, 0);
    EXPECT_LE(o.done.stats.completion_tokens, reqs[i].max_tokens);
    // The returned tokens come with the last event, and decode to the text.
    EXPECT_EQ(static_cast<int64_t>(o.done.output_ids.size()), o.done.stats.completion_tokens);
    EXPECT_EQ(Twin("ar").tokenizer->Decode(o.done.output_ids, true), o.text);
    EXPECT_TRUE(streams[i]->WaitFinished(0ms));
  }
  // The four requests shared forwards: fewer forwards than the sum of their own.
  const double forwards = metrics.Value("forward_passes_total", {"ar", "ar"});
  EXPECT_LT(forwards, 8 + 17 + 26 + 35);
  // The load's totals count the same forwards (not the two timing forwards of AddModel).
  const EngineLoad load = s.Load(*index);
  EXPECT_EQ(load.totals.forwards, static_cast<int64_t>(forwards));
  EXPECT_EQ(static_cast<double>(load.totals.positions),
            metrics.Value("forward_positions_total", {"ar", "ar"}));
  EXPECT_GT(load.totals.flops, 0);
  EXPECT_GT(load.totals.bytes, 0);
  EXPECT_GT(load.totals.forward_ms, 0);
  EXPECT_EQ(metrics.Value("requests_total", {"ar", "ar", "length"}) +
                metrics.Value("requests_total", {"ar", "ar", "stop"}),
            4);
}

TEST(SchedulerTest, DiffusionBatchedDenoisingMatchesSoloRuns) {
  Scheduler s({4, 16, 4096}, nullptr);
  auto index = s.AddModel(Engine("llada"));
  ASSERT_TRUE(index.ok());
  std::vector<GenerationRequest> reqs;
  for (size_t i = 0; i < 3; ++i) reqs.push_back(DiffusionRequest(kPrompts[i], 20 + 6 * i));
  reqs[1].diffusion.cache = CacheMode::kDual;
  reqs[1].diffusion.commit = CommitRule::kThreshold;
  reqs[1].diffusion.threshold = 0.5;
  reqs[2].stream_canvas = true;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) {
    ASSERT_TRUE(s.Build(*index, r).ok());
    streams.push_back(*s.Submit(*index, r));
  }
  s.Start();
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Outcome o = Drain(*streams[i]);
    EXPECT_EQ(o.text, SoloDiffusion(reqs[i])) << "request " << i;
    EXPECT_EQ(o.canvases > 0, i == 2) << "canvas events only when asked";
  }
}

TEST(SchedulerTest, CancelEndsARunningRequestAndFreesItsSlot) {
  MetricsRegistry metrics;
  Scheduler s({1, 4, 4096}, &metrics);
  auto index = s.AddModel(Engine("llada"));
  ASSERT_TRUE(index.ok());
  s.Start();
  GenerationRequest long_req = DiffusionRequest("Once upon a time", 128);
  long_req.stream_canvas = true;
  auto first = *s.Submit(*index, long_req);
  StreamEvent e;
  ASSERT_TRUE(first->Pop(&e, 10s));  // it runs
  first->Cancel();
  const Outcome o = Drain(*first, 10s);
  EXPECT_EQ(o.done.finish, FinishReason::kAbort);
  EXPECT_LT(o.done.stats.nfe, 128) << "stopped early";
  // The single slot is free again: the next request runs to the end.
  auto second = *s.Submit(*index, DiffusionRequest("The cat sat", 16));
  EXPECT_EQ(Drain(*second).done.finish, FinishReason::kLength);
  EXPECT_EQ(metrics.Value("requests_total", {"llada", "diffusion", "abort"}), 1);
  // The load is updated after the step that sent the last event.
  const auto until = SteadyClock::now() + 5s;
  while (s.Load(*index).running != 0 && SteadyClock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(s.Load(*index).running, 0);
}

TEST(SchedulerTest, CancelledRequestsLeaveTheQueueFromAnyPlace) {
  Scheduler s({1, 4, 4096}, nullptr);
  auto index = s.AddModel(Engine("llada"));
  ASSERT_TRUE(index.ok());
  s.Start();
  GenerationRequest slow = DiffusionRequest("Once upon a time", 128);
  slow.stream_canvas = true;
  auto running = *s.Submit(*index, slow);
  StreamEvent e;
  ASSERT_TRUE(running->Pop(&e, 10s));  // it holds the only slot
  auto second = *s.Submit(*index, DiffusionRequest("The cat sat", 16));
  auto third = *s.Submit(*index, DiffusionRequest("The dog ran", 16));
  third->Cancel();  // behind `second` in the queue
  const Outcome o = Drain(*third, 10s);
  EXPECT_EQ(o.done.finish, FinishReason::kAbort);
  EXPECT_EQ(o.done.stats.nfe, 0);
  EXPECT_FALSE(running->finished()) << "the slow request is still running";
  EXPECT_EQ(s.Load(*index).waiting, 1);
  running->Cancel();
  EXPECT_EQ(Drain(*second).done.finish, FinishReason::kLength);
}

TEST(SchedulerTest, DeadlinesEndWaitingAndRunningRequests) {
  Scheduler s({1, 4, 4096}, nullptr);
  auto index = s.AddModel(Engine("llada"));
  ASSERT_TRUE(index.ok());
  GenerationRequest expired = DiffusionRequest("Once upon a time", 16);
  expired.deadline = SteadyClock::now();
  auto a = *s.Submit(*index, expired);
  GenerationRequest soon = DiffusionRequest("Once upon a time", 128);
  soon.deadline = SteadyClock::now() + 150ms;
  auto b = *s.Submit(*index, soon);
  s.Start();
  const Outcome oa = Drain(*a, 10s);
  EXPECT_EQ(oa.done.finish, FinishReason::kDeadline);
  EXPECT_EQ(oa.done.stats.nfe, 0);
  const Outcome ob = Drain(*b, 10s);
  EXPECT_EQ(ob.done.finish, FinishReason::kDeadline);
  EXPECT_LT(ob.done.stats.total_ms, 5000);
}

TEST(SchedulerTest, FullQueueRefusesAndShutdownAbortsEverything) {
  Scheduler s({1, 2, 4096}, nullptr);
  auto index = s.AddModel(Engine("ar"));
  ASSERT_TRUE(index.ok());
  // Not started: requests wait.
  auto a = s.Submit(*index, ArRequest("Once upon a time", 8));
  auto b = s.Submit(*index, ArRequest("Once upon a time", 8));
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = s.Submit(*index, ArRequest("Once upon a time", 8));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.Submit(7, ArRequest("x", 1)).status().code(), StatusCode::kOutOfRange);
  s.Shutdown();
  EXPECT_EQ(Drain(**a, 5s).done.finish, FinishReason::kAbort);
  EXPECT_EQ(Drain(**b, 5s).done.finish, FinishReason::kAbort);
  EXPECT_EQ(s.Submit(*index, ArRequest("x", 1)).status().code(), StatusCode::kFailedPrecondition);
}

TEST(SchedulerTest, BuildRefusesWhatCannotRun) {
  Scheduler s({2, 4, 4096}, nullptr);
  const size_t ar = *s.AddModel(Engine("ar"));
  const size_t dl = *s.AddModel(Engine("llada"));
  GenerationRequest too_long = ArRequest("Once upon a time", 300);  // context 256
  EXPECT_EQ(s.Build(ar, too_long).status().code(), StatusCode::kOutOfRange);
  GenerationRequest d = DiffusionRequest("Once upon a time", 300);
  EXPECT_EQ(s.Build(dl, d).status().code(), StatusCode::kOutOfRange);
  GenerationRequest bad_id = ArRequest("Once", 4);
  bad_id.prompt.push_back(1 << 20);
  EXPECT_EQ(s.Build(ar, bad_id).status().code(), StatusCode::kInvalidArgument);
  GenerationRequest bad_steps = DiffusionRequest("Once", 32);
  bad_steps.diffusion.steps = 3;  // not a multiple of the 2 blocks
  EXPECT_EQ(s.Build(dl, bad_steps).status().code(), StatusCode::kInvalidArgument);
  // More steps than tokens runs as the reference does, but no more forwards than the context.
  GenerationRequest many_steps = DiffusionRequest("Once", 32);
  many_steps.diffusion.steps = 64;
  EXPECT_TRUE(s.Build(dl, many_steps).ok());
  const int64_t context = Twin("llada").model->config().context_length;
  many_steps.diffusion.steps = 2 * context;  // 2 blocks: divisible
  EXPECT_EQ(s.Build(dl, many_steps).status().code(), StatusCode::kInvalidArgument);
  GenerationRequest zero = ArRequest("Once", 4);
  zero.max_tokens = 0;
  EXPECT_EQ(s.Build(ar, zero).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Build(9, zero).status().code(), StatusCode::kOutOfRange);
  // The cost model was measured.
  EXPECT_GT(s.Load(ar).cost.ms_per_position + s.Load(ar).cost.overhead_ms, 0);
  EXPECT_TRUE(s.Load(dl).diffusion);
}

TEST(SchedulerTest, StopStringsEndTheTextAndAreNotReturned) {
  Scheduler s({2, 4, 4096}, nullptr);
  const size_t ar = *s.AddModel(Engine("ar"));
  s.Start();
  GenerationRequest g = ArRequest("Once upon a time", 40);
  const std::string full = SoloAr(g);
  const size_t cut = full.find(" girl");
  ASSERT_NE(cut, std::string::npos) << full;
  g.stop = {" girl"};
  const Outcome o = Drain(**s.Submit(ar, g));
  EXPECT_EQ(o.text, full.substr(0, cut));
  EXPECT_EQ(o.done.finish, FinishReason::kStop);
  EXPECT_LT(o.done.stats.completion_tokens, 40);
}

}  // namespace
}  // namespace unmask
