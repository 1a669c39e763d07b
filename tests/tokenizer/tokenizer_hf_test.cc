// ReadHfTokenizer / LoadHfTokenizer on the committed qwen-style fixture, on GPT-2's real
// vocabulary (written as a tokenizer.json from ../shared/data/vocab and checked against
// llama.cpp's test vectors, which were made with Hugging Face tokenizers), and on small folders
// written here for each rule of tokenizer_hf.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hf_folders.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_hf.h"

namespace unmask {
namespace {

using testing::AddedToken;
using testing::ByteLevel;
using testing::ByteLevelTokenizerJson;
using testing::Json;
using testing::WriteFolder;
using Ids = std::vector<TokenId>;

std::unique_ptr<Tokenizer> Load(const std::string& dir) {
  auto t = LoadHfTokenizer(dir);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

std::unique_ptr<Tokenizer> LoadJson(const std::string& name, const Json& tokenizer,
                                    const std::map<std::string, std::string>& files = {}) {
  return Load(WriteFolder(name, tokenizer, files));
}

// hello / world merges: "he", "ll", "hell", "hello", " w", " wo", " wor", " worl", " world".
Json HelloJson() {
  return ByteLevelTokenizerJson({{"h", "e"},
                                 {"l", "l"},
                                 {"he", "ll"},
                                 {"hell", "o"},
                                 {" ", "w"},
                                 {" w", "o"},
                                 {" wo", "r"},
                                 {" wor", "l"},
                                 {" worl", "d"}});
}

TEST(HfTokenizerTest, QwenStyleFixtureIdsAreTheContract) {
  auto vocab = ReadHfTokenizer(testing::QwenStyleDir());
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->model, "gpt2");
  EXPECT_EQ(vocab->pre, "qwen2");
  EXPECT_EQ(vocab->normalizer, "nfc");
  EXPECT_EQ(vocab->name, "qwen-style");
  ASSERT_EQ(vocab->tokens.size(), 1004u);
  EXPECT_EQ(vocab->merges.size(), 744u);
  const char* specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|MASK|>"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(vocab->tokens[1000 + i], specials[i]);
    EXPECT_EQ(vocab->token_types[1000 + i], static_cast<int32_t>(TokenType::kControl));
  }
  for (int id = 0; id < 1000; ++id) {
    EXPECT_EQ(vocab->token_types[id], static_cast<int32_t>(TokenType::kNormal)) << id;
  }
  EXPECT_EQ(vocab->eos, 1002);   // tokenizer_config eos_token
  EXPECT_EQ(vocab->pad, 1000);   // tokenizer_config pad_token
  EXPECT_EQ(vocab->bos, 1000);   // bos_token null: generation_config bos_token_id
  EXPECT_EQ(vocab->eot, 1000);   // generation_config eos_token_id [1002, 1000]
  EXPECT_EQ(vocab->mask, 1003);  // by content
  EXPECT_EQ(vocab->add_bos, false);
  EXPECT_EQ(vocab->add_eos, false);
  EXPECT_EQ(vocab->clean_spaces, false);
}

TEST(HfTokenizerTest, QwenStyleEncodesDecodesAndRendersChatML) {
  auto tok = Load(testing::QwenStyleDir());
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->vocab_size(), 1004);
  EXPECT_EQ(tok->pre_name(), "qwen2");
  EXPECT_TRUE(tok->IsEog(1002));
  EXPECT_TRUE(tok->IsEog(1000));
  EXPECT_TRUE(tok->IsControl(1003));
  EXPECT_EQ(tok->special().mask, 1003);
  EXPECT_FALSE(tok->special().add_bos);

  const std::string text = "<|im_start|>user\nOnce upon a time<|im_end|>\n<|MASK|><|MASK|>";
  const Ids ids = tok->Encode(text, /*add_special=*/true, /*parse_special=*/true);
  ASSERT_GE(ids.size(), 6u);
  EXPECT_EQ(ids.front(), 1001);
  EXPECT_EQ(ids[ids.size() - 2], 1003);
  EXPECT_EQ(ids.back(), 1003);
  EXPECT_EQ(tok->Decode(ids, /*skip_special=*/false), text);
  EXPECT_EQ(tok->Decode(ids, /*skip_special=*/true), "user\nOnce upon a time\n");
  // Without special-token parsing the marker is text.
  const Ids plain = tok->Encode("<|im_end|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  for (TokenId id : plain) EXPECT_LT(id, 1000);

  // NFC: a decomposed é encodes as the composed one.
  EXPECT_EQ(tok->Encode("cafe\xCC\x81", false, true), tok->Encode("caf\xC3\xA9", false, true));
  EXPECT_EQ(tok->Decode(tok->Encode("cafe\xCC\x81", false, true), true), "caf\xC3\xA9");

  const std::vector<ChatMessage> messages = {{"user", "Hi"}};
  auto chat = tok->ApplyChatTemplate(messages, /*add_generation_prompt=*/true);
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  EXPECT_EQ(*chat,
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

// llama.cpp's gpt-2 vectors (.inp/.out) hold the ids Hugging Face tokenizers gives.
std::vector<std::pair<std::string, Ids>> ReadVectors(const std::string& gguf) {
  const std::string raw = testing::ReadText(gguf + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0;;) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      inputs.push_back(raw.substr(pos));
      break;
    }
    inputs.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  if (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  std::istringstream out(testing::ReadText(gguf + ".out"));
  std::vector<std::pair<std::string, Ids>> cases;
  std::string line;
  for (const std::string& input : inputs) {
    if (!std::getline(out, line)) break;
    Ids ids;
    std::istringstream ls(line);
    for (TokenId id; ls >> id;) ids.push_back(id);
    cases.emplace_back(input, ids);
  }
  return cases;
}

TEST(HfTokenizerTest, Gpt2VocabularyWithLegacyMergesMatchesTheVectors) {
  UNMASK_REQUIRE_SHARED_DATA(vocab_path, "vocab/gpt2_vocab.json");
  UNMASK_REQUIRE_SHARED_DATA(merges_path, "vocab/gpt2_merges.txt");
  UNMASK_REQUIRE_SHARED_DATA(gguf_path, "vocab/ggml-vocab-gpt-2.gguf");
  Json j = ByteLevelTokenizerJson({});
  j["model"]["vocab"] = Json::parse(testing::ReadText(vocab_path));
  Json merges = Json::array();
  std::istringstream lines(testing::ReadText(merges_path));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) merges.push_back(line);  // legacy "a b" form
  }
  j["model"]["merges"] = merges;
  j["added_tokens"] = Json::array({AddedToken(50256, "<|endoftext|>", true, true)});
  auto tok = LoadJson("gpt2-style", j);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->vocab_size(), 50257);
  EXPECT_EQ(tok->pre_name(), "gpt-2");
  const auto cases = ReadVectors(gguf_path);
  ASSERT_GE(cases.size(), 40u);
  int failures = 0;
  for (const auto& [text, want] : cases) {
    const Ids got = tok->Encode(text, false, true);
    failures += got != want;
    EXPECT_EQ(got, want) << "'" << text << "'";
    // No clean_up_tokenization_spaces: decoding gives the text back.
    EXPECT_EQ(tok->Decode(got, true), text);
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(tok->Encode("a<|endoftext|>b", false, true), (Ids{64, 50256, 65}));
}

TEST(HfTokenizerTest, LegacyAndPairMergesReadAlike) {
  Json pairs = HelloJson();
  Json legacy = pairs;
  Json strings = Json::array();
  for (const Json& m : pairs["model"]["merges"]) {
    strings.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  strings.insert(strings.begin(), "#version: 0.2");  // skipped, as the crate does
  legacy["model"]["merges"] = strings;
  auto a = ReadHfTokenizer(WriteFolder("merges-pairs", pairs));
  auto b = ReadHfTokenizer(WriteFolder("merges-legacy", legacy));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
  EXPECT_EQ(a->merges, b->merges);
  EXPECT_EQ(a->merges[0], ByteLevel("h") + " " + ByteLevel("e"));
  auto tok = Load(WriteFolder("merges-legacy", legacy));
  ASSERT_TRUE(tok);
  const Ids ids = tok->Encode("hello world", false, false);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(tok->TokenText(ids[0]), "hello");
  EXPECT_EQ(tok->TokenText(ids[1]), ByteLevel(" world"));
}

TEST(HfTokenizerTest, RepeatedMergeKeepsItsLastRank) {
  // (b, c) first at rank 0, again after (a, b): the crate keeps rank 2, so "ab" forms first.
  Json j = ByteLevelTokenizerJson({{"b", "c"}, {"a", "b"}});
  j["model"]["merges"].push_back({"b", "c"});
  auto vocab = ReadHfTokenizer(WriteFolder("merge-twice", j));
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->merges, (std::vector<std::string>{"a b", "b c"}));
  auto tok = Load(WriteFolder("merge-twice", j));
  ASSERT_TRUE(tok);
  const Ids ids = tok->Encode("abc", false, false);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(tok->TokenText(ids[0]), "ab");
}

TEST(HfTokenizerTest, HolesBecomeUnusedPlaceholders) {
  Json j = HelloJson();
  j["model"]["vocab"][ByteLevel(" hello")] = 300;  // ids 265..299 are holes
  j["model"]["merges"].push_back({ByteLevel(" "), "hello"});
  auto vocab = ReadHfTokenizer(WriteFolder("holes", j));
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  ASSERT_EQ(vocab->tokens.size(), 301u);
  EXPECT_EQ(vocab->tokens[280], "[PAD280]");
  EXPECT_EQ(vocab->token_types[280], static_cast<int32_t>(TokenType::kUnused));
  auto tok = Load(WriteFolder("holes", j));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->Encode(" hello", false, false), (Ids{300}));
  EXPECT_EQ(tok->Decode(Ids{280, 300}, false), " hello");  // placeholders have no text
}

TEST(HfTokenizerTest, AddedTokensFollowHuggingFaceRules) {
  Json j = HelloJson();
  const int n = static_cast<int>(j["model"]["vocab"].size());  // 265
  j["added_tokens"] = Json::array({
      AddedToken(n, "<|end|>", /*special=*/true),
      AddedToken(n + 1, "ab", /*special=*/false, /*normalized=*/true),
      AddedToken(n + 2, "bcd", false, true),
      AddedToken(n + 3, "<L>", true, false, /*lstrip=*/true, /*rstrip=*/false),
      AddedToken(n + 4, "<R>", true, false, false, /*rstrip=*/true),
      AddedToken(n + 5, "caf\xC3\xA9", false, /*normalized=*/true),
  });
  j["normalizer"] = {{"type", "NFC"}};
  auto tok = LoadJson("added", j);
  ASSERT_TRUE(tok);
  EXPECT_TRUE(tok->IsControl(n));
  EXPECT_FALSE(tok->IsControl(n + 1));
  // Leftmost-longest: "ab" starts first, so "bcd" (longer) does not win over it.
  EXPECT_EQ(tok->Encode("abcd", false, false), (Ids{n + 1, 'c', 'd'}));
  // User-defined tokens are always split out; special ones only with parse_special.
  EXPECT_EQ(tok->Encode("x<|end|>", false, true), (Ids{'x', n}));
  const Ids plain = tok->Encode("x<|end|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), n), 0);
  // lstrip takes the (Unicode) whitespace on the left, rstrip on the right.
  EXPECT_EQ(tok->Encode("a \xE3\x80\x80<L>b", false, true), (Ids{'a', n + 3, 'b'}));
  EXPECT_EQ(tok->Encode("a<R> \n b", false, true), (Ids{'a', n + 4, 'b'}));
  // A normalized token matches the normalized text: decomposed "cafe\u0301" is "café".
  EXPECT_EQ(tok->Encode("cafe\xCC\x81!", false, false), (Ids{n + 5, '!'}));
}

TEST(HfTokenizerTest, NonNormalizedTokensAreMatchedBeforeNormalization) {
  Json j = HelloJson();
  const int n = static_cast<int>(j["model"]["vocab"].size());
  // A special token written decomposed: only the raw (decomposed) text matches it.
  j["added_tokens"] = Json::array({AddedToken(n, "<e\xCC\x81>", true, /*normalized=*/false)});
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", Json::array({{{"type", "NFC"}}})}};
  auto tok = LoadJson("raw-added", j);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->Encode("<e\xCC\x81>", false, true), (Ids{n}));
  const Ids composed = tok->Encode("<\xC3\xA9>", false, true);
  EXPECT_EQ(std::count(composed.begin(), composed.end(), n), 0);
}

TEST(HfTokenizerTest, PreTokenizerVariants) {
  // ByteLevel without its regex and nothing before it: the whole text is one word, so the merge
  // (o, space), ranked first, crosses the word boundary.
  Json whole = ByteLevelTokenizerJson(
      {{"o", " "}, {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}});
  whole["pre_tokenizer"]["use_regex"] = false;
  auto one_word = LoadJson("one-word", whole);
  ASSERT_TRUE(one_word);
  EXPECT_EQ(one_word->pre_name(), "custom");
  EXPECT_EQ(one_word->Encode("hello world", false, false),
            (Ids{259, 256, 'w', 'o', 'r', 'l', 'd'}));  // hell, "o ", w, o, r, l, d
  // add_prefix_space: " hello" for "hello".
  Json prefix = HelloJson();
  prefix["pre_tokenizer"]["add_prefix_space"] = true;
  auto spaced = LoadJson("prefix-space", prefix);
  ASSERT_TRUE(spaced);
  EXPECT_EQ(spaced->Encode("world", false, false).size(), 1u);
  // Digits + ByteLevel(use_regex) is llama.cpp's "smollm"; a Split with a String pattern.
  Json smollm = HelloJson();
  smollm["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       Json::array({{{"type", "Digits"}, {"individual_digits", true}}, HelloJson()["decoder"]})}};
  auto vocab = ReadHfTokenizer(WriteFolder("smollm", smollm));
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->pre, "smollm");
  Json split = HelloJson();
  split["pre_tokenizer"] = {{"type", "Sequence"},
                            {"pretokenizers", Json::array({{{"type", "Split"},
                                                            {"pattern", {{"String", "l"}}},
                                                            {"behavior", "Isolated"},
                                                            {"invert", false}},
                                                           HelloJson()["decoder"]})}};
  auto split_tok = LoadJson("split-string", split);
  ASSERT_TRUE(split_tok);
  EXPECT_EQ(split_tok->Encode("hello", false, false), (Ids{256, 'l', 'l', 'o'}));  // he l l o
}

TEST(HfTokenizerTest, PostProcessorTemplateAddsBos) {
  Json j = HelloJson();
  const int n = static_cast<int>(j["model"]["vocab"].size());
  j["added_tokens"] = Json::array({AddedToken(n, "<s>", true), AddedToken(n + 1, "</s>", true)});
  const Json special = {{"<s>", {{"id", "<s>"}, {"ids", {n}}, {"tokens", {"<s>"}}}},
                        {"</s>", {{"id", "</s>"}, {"ids", {n + 1}}, {"tokens", {"</s>"}}}}};
  const Json single = Json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                   {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}});
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       Json::array({{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}},
                    {{"type", "TemplateProcessing"},
                     {"single", single},
                     {"pair", single},
                     {"special_tokens", special}}})}};
  auto tok = LoadJson("template", j);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->special().bos, n);
  EXPECT_EQ(tok->special().eos, n + 1);
  EXPECT_EQ(tok->Encode("he", true, true), (Ids{n, 256, n + 1}));
  // tokenizer_config.json's add_eos_token overrides the post-processor.
  auto no_eos = LoadJson("template", j, {{"tokenizer_config.json", R"({"add_eos_token": false})"}});
  ASSERT_TRUE(no_eos);
  EXPECT_EQ(no_eos->Encode("he", true, true), (Ids{n, 256}));
}

TEST(HfTokenizerTest, ConfigurationFiles) {
  Json j = HelloJson();
  const int n = static_cast<int>(j["model"]["vocab"].size());
  j["added_tokens"] = Json::array({AddedToken(n, "<bos>", true), AddedToken(n + 1, "<eos>", true),
                                   AddedToken(n + 2, "<|mask|>", true)});
  const std::string config = R"({
    "bos_token": {"__type": "AddedToken", "content": "<bos>", "lstrip": false},
    "add_bos_token": true,
    "clean_up_tokenization_spaces": true,
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]
  })";
  const std::string generation = R"({"eos_token_id": [)" + std::to_string(n + 1) + ", " +
                                 std::to_string(n) + R"(], "pad_token_id": null})";
  auto tok = LoadJson("configs", j,
                      {{"tokenizer_config.json", config}, {"generation_config.json", generation}});
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->special().bos, n);
  EXPECT_EQ(tok->special().eos, n + 1);
  EXPECT_EQ(tok->special().eot, n);
  EXPECT_EQ(tok->special().mask, n + 2);
  EXPECT_EQ(tok->special().pad, kNoToken);
  EXPECT_TRUE(tok->special().add_bos);
  EXPECT_EQ(tok->chat_template(), "D");
  EXPECT_EQ(tok->Encode("he", true, true), (Ids{n, 256}));
  EXPECT_EQ(tok->Decode(Ids{'a', ' ', ','}, true), "a,");  // clean_up_tokenization_spaces

  // chat_template.jinja wins over both; chat_template.json over tokenizer_config.json.
  auto jinja = LoadJson("configs", j,
                        {{"tokenizer_config.json", config},
                         {"chat_template.json", R"({"chat_template": "J"})"},
                         {"chat_template.jinja", "{{ 'jinja' }}"}});
  ASSERT_TRUE(jinja);
  EXPECT_EQ(jinja->chat_template(), "{{ 'jinja' }}");
  auto json_template = LoadJson(
      "configs2", j,
      {{"tokenizer_config.json", config}, {"chat_template.json", R"({"chat_template": "J"})"}});
  ASSERT_TRUE(json_template);
  EXPECT_EQ(json_template->chat_template(), "J");
}

TEST(HfTokenizerTest, FolderNameAndTrailingSlash) {
  const std::string dir = WriteFolder("My-Model-1B", HelloJson());
  for (const std::string& d : {dir, dir + "/"}) {
    auto vocab = ReadHfTokenizer(d);
    ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
    EXPECT_EQ(vocab->name, "My-Model-1B");
  }
}

}  // namespace
}  // namespace unmask
