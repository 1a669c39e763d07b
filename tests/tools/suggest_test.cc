// "Did you mean" suggestions (tools/common/suggest.h): the distance, the threshold, ties.
#include "common/suggest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace unmask::tools {
namespace {

TEST(SuggestTest, DistanceFoldsCaseAndDashes) {
  EXPECT_EQ(NameDistance("", ""), 0u);
  EXPECT_EQ(NameDistance("abc", ""), 3u);
  EXPECT_EQ(NameDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(NameDistance("--ctx_size", "--ctx-size"), 0u);
  EXPECT_EQ(NameDistance("Top_K", "top-k"), 0u);
}

TEST(SuggestTest, ClosestNameWithinAThirdOfTheWord) {
  const std::vector<std::string> names = {"--temperature", "--temp", "--top-k", "--top-p"};
  EXPECT_EQ(ClosestName("--tmp", names), "--temp");
  EXPECT_EQ(ClosestName("--temprature", names), "--temperature");
  EXPECT_EQ(ClosestName("--top_k", names), "--top-k");
  EXPECT_EQ(ClosestName("--mirostat", names), "");  // nothing close: no noise
  // Ties go to the earlier name.
  EXPECT_EQ(ClosestName("--top-x", names), "--top-k");
  EXPECT_EQ(ClosestName("x", std::vector<std::string>{}), "");
}

TEST(SuggestTest, NamesTooFarInLengthAreNotCompared) {
  // A name within the threshold must be within it in length too; a huge word (an unknown field of
  // a hostile request) is answered without comparing it, and near-length names still are.
  const std::vector<std::string> names = {"max_tokens", "temperature"};
  EXPECT_EQ(ClosestName(std::string(1 << 24, 'q'), names), "");
  EXPECT_EQ(ClosestName("max_tokenz", names), "max_tokens");
  EXPECT_EQ(ClosestName("temperatures", names), "temperature");
}

}  // namespace
}  // namespace unmask::tools
