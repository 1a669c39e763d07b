// Fill-in-the-middle for AR models (tools/common/infill.h): the FIM tokens found by their text in
// real vocabularies (llama.cpp's shared test vocabularies), and the PSM prompt layout.
#include "common/infill.h"

#include <gtest/gtest.h>

#include <vector>

#include "test_util.h"
#include "vocab_util.h"

namespace unmask::tools {
namespace {

TEST(InfillTest, DeepSeekCoderHasFimTokensAndGpt2HasNone) {
  UNMASK_REQUIRE_VOCAB(deepseek, "deepseek-coder");
  const FimTokens fim = FindFimTokens(*deepseek);
  ASSERT_TRUE(fim.ok());
  EXPECT_EQ(deepseek->TokenText(fim.prefix),
            "<\xef\xbd\x9c"
            "fim\xe2\x96\x81"
            "begin\xef\xbd\x9c>");
  EXPECT_EQ(deepseek->TokenText(fim.suffix),
            "<\xef\xbd\x9c"
            "fim\xe2\x96\x81"
            "hole\xef\xbd\x9c>");
  EXPECT_EQ(deepseek->TokenText(fim.middle),
            "<\xef\xbd\x9c"
            "fim\xe2\x96\x81"
            "end\xef\xbd\x9c>");
  UNMASK_REQUIRE_VOCAB(gpt2, "gpt-2");
  EXPECT_FALSE(FindFimTokens(*gpt2).ok());
}

TEST(InfillTest, PsmLayoutAfterBos) {
  const FimTokens fim{100, 101, 102};
  const std::vector<int32_t> prefix = {1, 2}, suffix = {3};
  EXPECT_EQ(FimPrompt(fim, prefix, suffix, 7), (std::vector<int32_t>{7, 100, 1, 2, 101, 3, 102}));
  EXPECT_EQ(FimPrompt(fim, prefix, {}, -1), (std::vector<int32_t>{100, 1, 2, 101, 102}));
}

}  // namespace
}  // namespace unmask::tools
