#include "grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "grammar_test_util.h"

namespace unmask::grammar {
namespace {

using testing::Check;
using testing::MustParse;

std::string ErrorOf(std::string_view gbnf) {
  auto g = ParseGbnf(gbnf);
  return g.ok() ? std::string("(parsed)") : g.status().message();
}

TEST(GbnfParserTest, LiteralsClassesAndAlternatives) {
  auto g = MustParse(R"(root ::= "ab" [0-9] | "x" [^a-c] # comment
)");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "ab7").sentence);
  EXPECT_TRUE(Check(g, "ab").prefix);
  EXPECT_FALSE(Check(g, "ab").sentence);
  EXPECT_FALSE(Check(g, "abx").prefix);
  EXPECT_TRUE(Check(g, "xd").sentence);
  EXPECT_FALSE(Check(g, "xb").prefix);
  EXPECT_TRUE(Check(g, "x\xC3\xA9").sentence);  // é is outside [a-c]
}

TEST(GbnfParserTest, RepetitionOperators) {
  auto g = MustParse("root ::= \"a\"* \"b\"+ \"c\"? \"d\"{2} \"e\"{1,3} \"f\"{2,}\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g,
                    "bdde"
                    "ff")
                  .sentence);
  EXPECT_TRUE(Check(g, "aaabbbcddeeefff").sentence);
  EXPECT_FALSE(Check(g, "bddeeeef").prefix);  // four e
  EXPECT_FALSE(Check(g,
                     "bdde"
                     "f")
                   .sentence);  // one f
  EXPECT_FALSE(Check(g, "bcc").prefix);
  EXPECT_FALSE(Check(g,
                     "bd"
                     "e")
                   .prefix);  // needs two d
}

TEST(GbnfParserTest, PostfixAppliesToTheWholeLiteralAndGroups) {
  auto g = MustParse("root ::= \"ab\"{2} (\"x\" | \"yz\")*\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "abab").sentence);
  EXPECT_TRUE(Check(g, "ababxyzx").sentence);
  EXPECT_FALSE(Check(g, "abb").prefix);
  EXPECT_FALSE(Check(g, "ababy").sentence);
}

TEST(GbnfParserTest, RulesAcrossLinesAndForwardReferences) {
  auto g = MustParse(
      "root ::= item (\",\" item)*\n"
      "item ::= [a-z]+\n"
      "  | num\n"
      "num ::= [0-9]\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "ab,7,c").sentence);
  EXPECT_FALSE(Check(g, "ab,,").prefix);
}

TEST(GbnfParserTest, Escapes) {
  auto g = MustParse(R"(root ::= "\"\\\n\t\x41\u00e9\U0001F600" [\]\-\[]
)");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "\"\\\n\tA\xC3\xA9\xF0\x9F\x98\x80]").sentence);
  EXPECT_TRUE(Check(g, "\"\\\n\tA\xC3\xA9\xF0\x9F\x98\x80-").sentence);
  // A partial UTF-8 sequence is a prefix only when it can still complete to an accepted code point.
  EXPECT_TRUE(Check(g, "\"\\\n\tA\xC3").prefix);
  EXPECT_FALSE(Check(g, "\"\\\n\tA\xC4").prefix);
}

TEST(GbnfParserTest, AnyCharacterAndNestedGroups) {
  auto g = MustParse("root ::= . ((\"a\" | \"b\") \"c\")+\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g,
                    "\xE4\xB8\xAD"
                    "acbc")
                  .sentence);
  EXPECT_FALSE(Check(g, "zab").prefix);
}

TEST(GbnfParserTest, ErrorsNameLineAndColumn) {
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nitem = \"b\"\n"),
            "grammar: line 2, column 5: expected '::=' after rule name 'item'");
  EXPECT_NE(ErrorOf("root ::= \"abc\n").find("line 1"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= [a-\n").find("unterminated character class"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= (\"a\"\n").find("expected ')'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\\q\"\n").find("unknown escape"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{3,2}\n").find("n < m"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{5000}\n").find("over 4096"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= [z-a]\n").find("end before its start"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\" )\n").find("unexpected ')'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"\nroot ::= \"b\"\n").find("defined twice"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("no rule 'root'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\xC3\"\n").find("UTF-8"), std::string::npos);
}

TEST(GbnfParserTest, ExpandedSizeIsBounded) {
  // A long literal repeated: copies multiply its length; refused with a message, not built.
  const std::string literal = "\"" + std::string(600, 'a') + "\"";
  EXPECT_NE(ErrorOf("root ::= " + literal + "{4000}").find("too large once its repetitions"),
            std::string::npos);
  EXPECT_NE(ErrorOf("root ::= " + literal + "{0,4000}").find("too large"), std::string::npos);
  // Over a budget, not malformed: ResourceExhausted (the JSON schema compiler tells them apart).
  EXPECT_EQ(ParseGbnf("root ::= " + literal + "{4000}").status().code(),
            StatusCode::kResourceExhausted);
  // Groups are rules, so nested counts add up instead of multiplying: accepted.
  MustParse(R"(root ::= ("ab"{4000}){4000})");
  // Thousands of auxiliary rules (fuzz/regressions/grammar_fuzz/nested-repetitions-timeout took
  // seconds: the rule index was a linear search, quadratic over the auxiliary rules).
  MustParse(R"(root ::= ("a"{0,4000} "b"{0,4000} "c"{0,4000}){0,20})");
}

TEST(GbnfParserTest, DeeplyNestedGroupsAreAnErrorNotAStackOverflow) {
  // fuzz/openai_request_fuzz.cc: a request's grammar of thousands of '(' crashed the server.
  EXPECT_NE(ErrorOf("root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')'))
                .find("nested deeper than 256"),
            std::string::npos);
  MustParse("root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')'));
}

TEST(GbnfParserTest, UndefinedAndLeftRecursiveRulesAreRefused) {
  EXPECT_EQ(ErrorOf("root ::= item\n"), "grammar: rule 'item' is used but never defined");
  EXPECT_NE(ErrorOf("root ::= root \"a\" | \"b\"\n").find("'root' is left-recursive"),
            std::string::npos);
  // Through a nullable prefix, and through an empty repetition.
  EXPECT_NE(ErrorOf("root ::= e x\nx ::= e root | \"a\"\ne ::= \"b\"?\n").find("left-recursive"),
            std::string::npos);
  EXPECT_NE(ErrorOf("root ::= (\"a\"?)*\n").find("left-recursive"), std::string::npos);
  // Right recursion is fine.
  auto g = MustParse("root ::= \"a\" root | \"b\"\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Check(g, "aaab").sentence);
}

// A rule the root reaches that no finite text completes would let a constrained generation run
// to its token limit; an unreachable one is harmless.
TEST(GbnfParserTest, RulesThatCanNeverEndAreRefused) {
  EXPECT_NE(ErrorOf("root ::= \"[\" root \"]\"\n").find("rule 'root' can never end"),
            std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\" | x\nx ::= \"(\" x y\ny ::= \")\"\n").find("'x' can never end"),
            std::string::npos);
  EXPECT_TRUE(MustParse("root ::= \"a\"\nx ::= \"(\" x \")\"\n"));
  EXPECT_TRUE(MustParse("root ::= \"[\" root \"]\" | \"0\"\n"));
}

// A chain of 300,000 rules (5.8 MB of text) overflowed the stack in the left-recursion search
// (found 2026-12-07), and a fixpoint over passes would be quadratic on it.
TEST(GbnfParserTest, LongRuleChainsParseWithoutRecursion) {
  for (const char* last : {"\"x\"", "\"x\"?"}) {
    std::string text = "root ::= a0\n";
    constexpr int kRules = 300000;
    for (int i = 0; i < kRules; ++i) {
      text += "a" + std::to_string(i) + " ::= a" + std::to_string(i + 1) + "\n";
    }
    text += "a" + std::to_string(kRules) + " ::= " + last + "\n";
    auto g = ParseGbnf(text);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_GE(g->num_rules(), kRules);
    // The matcher expands the chain at its first character (it recursed per rule, too).
    auto shared = std::make_shared<const Grammar>(*std::move(g));
    EXPECT_TRUE(Check(shared, "x").sentence);
    EXPECT_FALSE(Check(shared, "y").prefix);
  }
}

TEST(MatcherTest, AmbiguousAlternativesKeepEveryStack) {
  auto g = MustParse("root ::= \"ab\" \"c\" | \"a\" \"bd\" | [a-z]+\n");
  ASSERT_TRUE(g);
  for (const char* t : {"abc", "abd", "abz", "a"}) EXPECT_TRUE(Check(g, t).sentence) << t;
  EXPECT_FALSE(Check(g, "ab1").prefix);
}

// fuzz/grammar_fuzz.cc found this shape: `ws ::= .+ [ ]*` inside a recursive expression may end
// before any character, so the parse stacks multiply with every character (2 million after 100
// characters, 20 s). Past Matcher::kMaxStacks the state is refused and the matcher says why.
TEST(MatcherTest, AnExplodingAmbiguityIsRefusedNotFollowedForever) {
  auto g = MustParse(R"g(root ::= (expr "=" ws term "\n")+
expr ::= term ([-+*/] term)*
term ::= ident | num | "(" ?ws expr ")" ws
ident ::= [a-z] [a-z0-9_]{0,10} ws
num ::= [0-9]+ ws
ws ::=.+ [ ]*)g");
  ASSERT_TRUE(g);
  Matcher m(g);
  StateId s = m.initial();
  size_t most = 0;
  int steps = 0;
  const std::string text = R"t(c| "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]{0,10} ws
num ::= [0-9]+ ws
ws ::"maxpr "=" ws term )t";
  for (char c : text) {
    s = m.Advance(s, static_cast<uint32_t>(static_cast<unsigned char>(c)));
    if (s == kDead) break;
    most = std::max(most, m.StackCount(s));
    ++steps;
  }
  EXPECT_EQ(s, kDead);
  EXPECT_TRUE(m.overflowed());
  EXPECT_LE(most, Matcher::kMaxStacks);
  EXPECT_LT(steps, static_cast<int>(text.size()));
  // An ordinary grammar never comes near the bound.
  auto plain = MustParse("root ::= \"(\" root \")\" | [a-z]+\n");
  ASSERT_TRUE(plain);
  Matcher p(plain);
  StateId t = p.initial();
  for (char c : std::string(150, '(')) t = p.Advance(t, static_cast<uint32_t>(c));
  EXPECT_NE(t, kDead);
  EXPECT_FALSE(p.overflowed());
}

TEST(MatcherTest, CompleteWhenNothingMayFollow) {
  auto g = MustParse("root ::= \"a\" \"b\"?\n");
  ASSERT_TRUE(g);
  Matcher m(g);
  const StateId a = m.Advance(m.initial(), 'a');
  EXPECT_TRUE(m.CanEnd(a));
  EXPECT_FALSE(m.Complete(a));
  const StateId ab = m.Advance(a, 'b');
  EXPECT_TRUE(m.Complete(ab));
  EXPECT_EQ(m.Advance(ab, 'b'), kDead);
  // Transitions are interned: the same state comes back.
  EXPECT_EQ(m.Advance(m.initial(), 'a'), a);
}

TEST(MatcherTest, CompactKeepsTheState) {
  auto g = MustParse("root ::= (\"x\" [0-9])+ \"!\"\n");
  ASSERT_TRUE(g);
  Matcher m(g);
  Utf8Partial u;
  StateId s = m.AdvanceBytes(m.initial(), "x1x2", &u);
  ASSERT_NE(s, kDead);
  s = m.Compact(s);
  Utf8Partial u2;
  const StateId t = m.AdvanceBytes(s, "x3!", &u2);
  EXPECT_TRUE(m.Complete(t));
  EXPECT_EQ(m.AdvanceBytes(s, "3", &u2), kDead);
}

TEST(MatcherTest, Utf8StepRejectsInvalidBytes) {
  Utf8Partial u;
  uint32_t cp = 0;
  bool complete = false;
  EXPECT_FALSE(Utf8Step(&u, 0x80, &cp, &complete));  // a continuation without a lead
  EXPECT_FALSE(Utf8Step(&u, 0xC0, &cp, &complete));  // overlong lead
  EXPECT_FALSE(Utf8Step(&u, 0xF8, &cp, &complete));
  ASSERT_TRUE(Utf8Step(&u, 0xE2, &cp, &complete));
  EXPECT_FALSE(complete);
  EXPECT_FALSE(Utf8Step(&u, 0x41, &cp, &complete));  // ASCII inside a sequence
}

TEST(CharClassTest, IntersectsForNegatedClasses) {
  CharClass c;
  c.ranges = {{'a', 'c'}, {0x100, 0x1FF}};
  c.negated = true;
  c.Finish();
  EXPECT_FALSE(c.Intersects('a', 'c'));
  EXPECT_TRUE(c.Intersects('a', 'd'));
  EXPECT_FALSE(c.Intersects(0x100, 0x1FF));
  EXPECT_TRUE(c.Intersects(0x180, 0x200));
  EXPECT_FALSE(c.Matches('b'));
  EXPECT_TRUE(c.Matches(0x200));
}

}  // namespace
}  // namespace unmask::grammar
