// The engine's one step (engine/step.h StepBatch) on a stand-in model: plans of several decoders go
// into one forward, each decoder gets exactly its own logit rows, a decoder whose Plan or Update
// fails leaves the step with its error while the others go on, and a failing forward updates
// nothing.
#include "engine/step.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace unmask {
namespace {

constexpr int64_t kVocab = 4;

// Logit row r of sequence s holds {token at that row, s, r, 0}; counts forwards.
class EchoModel final : public Model {
 public:
  EchoModel() {
    config_.architecture = "echo";
    config_.vocab_size = kVocab;
    config_.context_length = 64;
  }
  const ModelConfig& config() const override { return config_; }
  const Backend& backend() const override { return *backend_; }
  Status Forward(const BatchPlan& plan, KvCache*, Workspace&, TensorView logits,
                 ForwardStats* stats) const override {
    ++forwards;
    if (fail) return InternalError("forward failed");
    float* out = logits.as<float>();
    for (size_t s = 0; s < plan.sequences.size(); ++s) {
      for (int32_t r : plan.sequences[s].logit_rows) {
        out[0] = static_cast<float>(plan.sequences[s].tokens[static_cast<size_t>(r)]);
        out[1] = static_cast<float>(s);
        out[2] = static_cast<float>(r);
        out[3] = 0;
        out += kVocab;
      }
    }
    if (stats != nullptr) stats->num_positions = plan.num_positions();
    return Status::Ok();
  }
  size_t weight_bytes() const override { return 0; }
  mutable int forwards = 0;
  bool fail = false;

 private:
  ModelConfig config_;
  std::shared_ptr<Backend> backend_ = DefaultBackend();
};

// Feeds `tokens`, asks for every row, records what Update saw; may fail Plan or Update.
class RecordingDecoder final : public Decoder {
 public:
  explicit RecordingDecoder(std::vector<int32_t> tokens) : tokens_(std::move(tokens)) {
    for (int32_t r = 0; r < static_cast<int32_t>(tokens_.size()); ++r) rows_.push_back(r);
  }
  DecoderKind kind() const override { return DecoderKind::kAr; }
  bool Done() const override { return stopped_ || steps_ >= 2; }
  DecodeFinish finish() const override {
    return Done() ? DecodeFinish::kLength : DecodeFinish::kNone;
  }
  StatusOr<const BatchPlan*> Plan() override {
    if (fail_plan) return InvalidArgumentError("bad plan");
    plan_.sequences.assign(1, SequenceInput{tokens_, 0, rows_});
    return &plan_;
  }
  Status Update(const TensorView& logits, DecodeStep* step) override {
    if (fail_update) return InvalidArgumentError("bad update");
    seen.clear();
    for (int64_t r = 0; r < logits.shape[0]; ++r) seen.push_back(logits.as<float>()[r * kVocab]);
    if (step != nullptr) {
      step->Reset();
      step->step = steps_;
    }
    ++steps_;
    return Status::Ok();
  }
  void Stop() override { stopped_ = true; }
  bool needs_kv_cache() const override { return false; }
  int32_t kv_seq() const override { return -1; }
  void set_kv_seq(int32_t) override {}
  int64_t prompt_length() const override { return 0; }
  std::span<const int32_t> generated() const override { return {}; }
  int64_t nfe() const override { return steps_; }
  int64_t step_positions() const override { return static_cast<int64_t>(tokens_.size()); }

  bool fail_plan = false;
  bool fail_update = false;
  std::vector<float> seen;

 private:
  std::vector<int32_t> tokens_, rows_;
  BatchPlan plan_;
  int64_t steps_ = 0;
  bool stopped_ = false;
};

std::vector<StepSlot> Slots(std::initializer_list<Decoder*> decoders) {
  std::vector<StepSlot> slots;
  for (Decoder* d : decoders) {
    slots.emplace_back();
    slots.back().decoder = d;
  }
  return slots;
}

TEST(StepBatchTest, OneForwardAndEachDecoderGetsItsRows) {
  EchoModel model;
  RecordingDecoder a({5, 6}), b({7}), c({8, 9, 10});
  std::vector<StepSlot> slots = Slots({&a, &b, &c});
  StepBuffers buffers;
  StepStats stats;
  ASSERT_TRUE(StepBatch(model, slots, nullptr, buffers, &stats).ok());
  EXPECT_EQ(model.forwards, 1);
  EXPECT_EQ(stats.stepped, 3);
  EXPECT_EQ(stats.forward.num_positions, 6);
  EXPECT_EQ(a.seen, (std::vector<float>{5, 6}));
  EXPECT_EQ(b.seen, (std::vector<float>{7}));
  EXPECT_EQ(c.seen, (std::vector<float>{8, 9, 10}));
  EXPECT_EQ(slots[2].positions, 3);
  EXPECT_TRUE(slots[0].stepped);
}

TEST(StepBatchTest, AFailingDecoderLeavesAloneTheOthersGoOn) {
  EchoModel model;
  RecordingDecoder a({1}), bad_plan({2}), bad_update({3}), d({4});
  bad_plan.fail_plan = true;
  bad_update.fail_update = true;
  std::vector<StepSlot> slots = Slots({&a, &bad_plan, &bad_update, &d});
  StepBuffers buffers;
  StepStats stats;
  ASSERT_TRUE(StepBatch(model, slots, nullptr, buffers, &stats).ok());
  EXPECT_EQ(stats.stepped, 2);
  EXPECT_EQ(slots[1].status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(slots[1].status.message().find("plan at step 0"), std::string::npos);
  EXPECT_EQ(slots[2].status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(slots[2].status.message().find("decode at step 0"), std::string::npos);
  EXPECT_EQ(a.seen, std::vector<float>{1});
  EXPECT_EQ(d.seen, std::vector<float>{4});  // rows after a failed decoder still route right
  // The next step skips the failed ones; done decoders are skipped too.
  ASSERT_TRUE(StepBatch(model, slots, nullptr, buffers, &stats).ok());
  EXPECT_EQ(stats.stepped, 2);
  ASSERT_TRUE(StepBatch(model, slots, nullptr, buffers, &stats).ok());
  EXPECT_EQ(stats.stepped, 0);  // every decoder is done or failed: no forward
  EXPECT_EQ(model.forwards, 2);
}

TEST(StepBatchTest, AFailingForwardUpdatesNothing) {
  EchoModel model;
  model.fail = true;
  RecordingDecoder a({1});
  std::vector<StepSlot> slots = Slots({&a});
  StepBuffers buffers;
  const Status st = StepBatch(model, slots, nullptr, buffers, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("forward at step 0"), std::string::npos);
  EXPECT_FALSE(slots[0].stepped);
  EXPECT_EQ(a.nfe(), 0);
  std::vector<StepSlot> null_slot(1);
  EXPECT_EQ(StepBatch(model, null_slot, nullptr, buffers, nullptr).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask
