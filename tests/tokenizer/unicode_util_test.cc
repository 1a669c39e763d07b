#include "tokenizer/unicode_util.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace unmask::unicode {
namespace {

TEST(UnicodeUtilTest, SequenceLengthFollowsLeadNibble) {
  EXPECT_EQ(SequenceLength('a'), 1u);
  EXPECT_EQ(SequenceLength(0x80), 1u);  // continuation byte counts as one
  EXPECT_EQ(SequenceLength(0xC3), 2u);
  EXPECT_EQ(SequenceLength(0xE2), 3u);
  EXPECT_EQ(SequenceLength(0xF0), 4u);
  EXPECT_EQ(SequenceLength(0xFF), 4u);
}

TEST(UnicodeUtilTest, DecodeValidSequences) {
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99";  // a é € 🦙
  size_t pos = 0;
  EXPECT_EQ(DecodeOne(text, &pos), 0x61u);
  EXPECT_EQ(pos, 1u);
  EXPECT_EQ(DecodeOne(text, &pos), 0xE9u);
  EXPECT_EQ(pos, 3u);
  EXPECT_EQ(DecodeOne(text, &pos), 0x20ACu);
  EXPECT_EQ(pos, 6u);
  EXPECT_EQ(DecodeOne(text, &pos), 0x1F999u);
  EXPECT_EQ(pos, 10u);
}

TEST(UnicodeUtilTest, InvalidBytesDecodeToReplacementOneByteAtATime) {
  const std::string cases[] = {
      "\x80",              // stray continuation
      "\xC3",              // truncated
      "\xE2\x82",          // truncated
      "\xC0\xAF",          // overlong
      "\xED\xA0\x80",      // surrogate
      "\xF4\x90\x80\x80",  // > U+10FFFF
      "\xFF",
  };
  for (const std::string& c : cases) {
    size_t pos = 0;
    EXPECT_EQ(DecodeOne(c, &pos), kReplacementChar) << c.size();
    EXPECT_EQ(pos, 1u);
  }
}

TEST(UnicodeUtilTest, SanitizeReplacesOnlyInvalidBytes) {
  EXPECT_EQ(Sanitize("plain \xC3\xA9"), "plain \xC3\xA9");
  EXPECT_EQ(Sanitize("a\xFF"
                     "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(Sanitize("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(Sanitize("\xEF\xBF\xBD"), "\xEF\xBF\xBD");  // a real U+FFFD stays one character
  EXPECT_EQ(Sanitize(""), "");
}

TEST(UnicodeUtilTest, AppendUtf8EncodesAllLengths) {
  std::string out;
  AppendUtf8(0x24, &out);
  AppendUtf8(0xA2, &out);
  AppendUtf8(0x20AC, &out);
  AppendUtf8(0x10348, &out);
  EXPECT_EQ(out, "$\xC2\xA2\xE2\x82\xAC\xF0\x90\x8D\x88");
}

TEST(UnicodeUtilTest, ByteMappingIsGpt2AndInvertible) {
  // openai/gpt-2 encoder.py bytes_to_unicode: printable bytes map to themselves, space (0x20) is
  // the 33rd non-printable byte -> U+0120 'Ġ', newline -> U+010A 'Ċ'.
  EXPECT_EQ(ByteToUnicode('A'), "A");
  EXPECT_EQ(ByteToUnicode(' '), "\xC4\xA0");
  EXPECT_EQ(ByteToUnicode('\n'), "\xC4\x8A");
  EXPECT_EQ(ByteToUnicode(0x00), "\xC4\x80");
  EXPECT_EQ(ByteToUnicode(0xAD), "\xC5\x83");  // the last non-printable byte -> U+0143
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& s = ByteToUnicode(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(s).second) << b;
    size_t pos = 0;
    const uint32_t cp = DecodeOne(s, &pos);
    EXPECT_EQ(pos, s.size());
    EXPECT_EQ(UnicodeToByte(cp), b);
  }
  EXPECT_EQ(UnicodeToByte(0x20), -1);   // raw space is not a stand-in
  EXPECT_EQ(UnicodeToByte(0x144), -1);  // one past the last stand-in
  EXPECT_EQ(UnicodeToByte(0x1F999), -1);
}

}  // namespace
}  // namespace unmask::unicode
