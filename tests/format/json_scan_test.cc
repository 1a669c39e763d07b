// The bracket scan of JSON text (format/json_scan.h): strings and escapes skipped.
#include "format/json_scan.h"

#include <gtest/gtest.h>

namespace unmask::format {
namespace {

TEST(JsonScanTest, DepthAndTheEndOfTheFirstValue) {
  EXPECT_EQ(ScanJsonBrackets("{}").deepest, 1);
  EXPECT_EQ(ScanJsonBrackets("{}").first_value_end, 2u);
  EXPECT_EQ(ScanJsonBrackets(R"({"a": [[1], {"b": 2}]} tail)").deepest, 3);
  EXPECT_EQ(ScanJsonBrackets(R"({"a": [[1], {"b": 2}]} tail)").first_value_end, 22u);
  // Brackets and escaped quotes inside strings do not count.
  const std::string_view s = R"({"k": "}]{[\"}"} x)";
  EXPECT_EQ(ScanJsonBrackets(s).deepest, 1);
  EXPECT_EQ(ScanJsonBrackets(s).first_value_end, s.find(" x"));
  // From an offset; unclosed; no brackets.
  EXPECT_EQ(ScanJsonBrackets("ab{}", 2).first_value_end, 4u);
  EXPECT_EQ(ScanJsonBrackets(R"({"a": [1)").first_value_end, std::string_view::npos);
  EXPECT_EQ(ScanJsonBrackets("plain").deepest, 0);
  EXPECT_EQ(ScanJsonBrackets("\"\\").deepest, 0);  // a string cut inside an escape
}

}  // namespace
}  // namespace unmask::format
