// Incremental output text (engine/text_stream.h): EOS ends it, stop strings cut it and are not
// returned, max_tokens caps it, possible stop-string prefixes and incomplete UTF-8 are held back
// until decided, and the deltas add up to the final text.
#include "engine/text_stream.h"

#include <gtest/gtest.h>

#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

const Tokenizer& Tok() {
  static LoadedModel lm = [] {
    auto m = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf", LoadOptions{});
    EXPECT_TRUE(m.ok());
    return std::move(m).value();
  }();
  return *lm.tokenizer;
}

// Feeds `ids` one token at a time; returns the concatenated deltas.
std::string FeedAll(TextStream& ts, const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t n = 1; n <= ids.size() && !ts.complete(); ++n) {
    out += ts.Update(std::span<const int32_t>(ids.data(), n), n == ids.size());
  }
  return out;
}

TEST(TextStreamTest, DeltasAddUpToTheText) {
  const auto ids = Tok().Encode(" there was a little girl named Lily.", false, false);
  TextStream ts(Tok(), {}, 100);
  EXPECT_EQ(FeedAll(ts, ids), Tok().Decode(ids, true));
  EXPECT_FALSE(ts.complete());
  EXPECT_EQ(ts.kept_tokens(), static_cast<int64_t>(ids.size()));
}

TEST(TextStreamTest, EosEndsTheTextAndCounts) {
  auto ids = Tok().Encode(" the end", false, false);
  const size_t words = ids.size();
  ids.push_back(Tok().special().eos);
  ids.push_back(ids[0]);  // after EOS: ignored
  TextStream ts(Tok(), {}, 100);
  EXPECT_EQ(FeedAll(ts, ids), " the end");
  EXPECT_TRUE(ts.complete());
  EXPECT_EQ(ts.finish(), FinishReason::kStop);
  EXPECT_EQ(ts.kept_tokens(), static_cast<int64_t>(words + 1));
}

TEST(TextStreamTest, StopStringIsCutAndHeldBackUntilDecided) {
  const auto ids = Tok().Encode(" there was a little girl named Lily.", false, false);
  TextStream ts(Tok(), {" girl"}, 100);
  std::string sent;
  for (size_t n = 1; n <= ids.size() && !ts.complete(); ++n) {
    sent += ts.Update(std::span<const int32_t>(ids.data(), n), false);
    // Nothing past the stop string is ever sent.
    EXPECT_EQ(sent.find("girl"), std::string::npos);
  }
  EXPECT_EQ(sent, " there was a little");
  EXPECT_EQ(ts.finish(), FinishReason::kStop);
  EXPECT_LT(ts.kept_tokens(), static_cast<int64_t>(ids.size()));
}

TEST(TextStreamTest, MaxTokensCaps) {
  const auto ids = Tok().Encode(" there was a little girl named Lily.", false, false);
  TextStream ts(Tok(), {}, 3);
  const std::string text = ts.Update(ids, false);
  EXPECT_TRUE(ts.complete());
  EXPECT_EQ(ts.finish(), FinishReason::kLength);
  EXPECT_EQ(ts.kept_tokens(), 3);
  EXPECT_EQ(text, Tok().Decode(std::span<const int32_t>(ids.data(), 3), true));
  EXPECT_EQ(ts.Update(ids, true), "");  // complete: nothing more
}

}  // namespace
}  // namespace unmask
