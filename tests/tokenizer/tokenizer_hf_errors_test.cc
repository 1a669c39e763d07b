// ReadHfTokenizer's refusals: each error path names the file and the JSON field, with the code of
// tokenizer_hf.h (NotFound, DataLoss, Unimplemented); truncated and mutated files never crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <map>
#include <random>
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

Json Base() { return ByteLevelTokenizerJson({{"h", "e"}, {"l", "l"}, {"he", "ll"}}); }

// ReadHfTokenizer on a folder holding `tokenizer` (and `files`) fails with `code` and a message
// that contains every needle.
void ExpectError(const std::string& name, const Json& tokenizer, StatusCode code,
                 std::initializer_list<std::string_view> needles,
                 const std::map<std::string, std::string>& files = {}) {
  const std::string dir = WriteFolder(name, tokenizer, files);
  auto vocab = ReadHfTokenizer(dir);
  ASSERT_FALSE(vocab.ok()) << name;
  EXPECT_EQ(vocab.status().code(), code) << name << ": " << vocab.status().ToString();
  for (std::string_view needle : needles) {
    EXPECT_NE(vocab.status().message().find(needle), std::string::npos)
        << name << ": '" << needle << "' not in " << vocab.status().ToString();
  }
  EXPECT_EQ(vocab.status().message().find('\n'), std::string::npos) << "one line";
}

// `base` with the JSON pointer `pointer` set to `value` (removed when value is discarded).
Json With(Json base, const std::string& pointer, const Json& value) {
  const Json::json_pointer p(pointer);
  if (value.is_discarded()) {
    Json& parent = base[p.parent_pointer()];
    if (parent.is_array()) {
      parent.erase(std::stoul(p.back()));
    } else {
      parent.erase(p.back());
    }
  } else {
    base[p] = value;
  }
  return base;
}
const Json kRemove = Json(Json::value_t::discarded);

constexpr StatusCode kDataLoss = StatusCode::kDataLoss;
constexpr StatusCode kUnimplemented = StatusCode::kUnimplemented;

TEST(HfTokenizerErrorsTest, MissingFolderOrFile) {
  auto missing = ReadHfTokenizer(testing::TempDir() + "/hf/no-such-folder");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no-such-folder/tokenizer.json"), std::string::npos);
  const std::string dir = WriteFolder("no-tokenizer-json", nullptr, {{"config.json", "{}"}});
  auto no_file = ReadHfTokenizer(dir);
  ASSERT_FALSE(no_file.ok());
  EXPECT_EQ(no_file.status().code(), StatusCode::kNotFound);
  auto load = LoadHfTokenizer(dir);
  EXPECT_EQ(load.status().code(), StatusCode::kNotFound);
}

TEST(HfTokenizerErrorsTest, NotJson) {
  const std::string dir = WriteFolder("not-json", nullptr, {{"tokenizer.json", "{\"model\": [1,"}});
  auto vocab = ReadHfTokenizer(dir);
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().code(), kDataLoss);
  EXPECT_NE(vocab.status().message().find("not-json/tokenizer.json: not valid JSON"),
            std::string::npos)
      << vocab.status().ToString();
  ExpectError("top-array", Json::array(), kDataLoss, {"tokenizer.json must be an object"});
  ExpectError("bad-config", Base(), kDataLoss, {"tokenizer_config.json: not valid JSON"},
              {{"tokenizer_config.json", "{,}"}});
  ExpectError("bad-generation", Base(), kDataLoss, {"generation_config.json must be an object"},
              {{"generation_config.json", "[1]"}});
}

TEST(HfTokenizerErrorsTest, TruncatedFixtureIsDataLoss) {
  const std::string text = testing::ReadText(testing::QwenStyleDir() + "/tokenizer.json");
  ASSERT_GT(text.size(), 1000u);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{100}, text.size() / 2, text.size() - 3}) {
    const std::string dir =
        WriteFolder("truncated", nullptr, {{"tokenizer.json", text.substr(0, cut)}});
    auto vocab = ReadHfTokenizer(dir);
    ASSERT_FALSE(vocab.ok()) << cut;
    EXPECT_EQ(vocab.status().code(), kDataLoss) << cut << ": " << vocab.status().ToString();
    EXPECT_NE(vocab.status().message().find("tokenizer.json"), std::string::npos);
  }
}

TEST(HfTokenizerErrorsTest, WrongTypesAreDataLoss) {
  const Json b = Base();
  ExpectError("no-model", With(b, "/model", kRemove), kDataLoss, {"model is missing"});
  ExpectError("model-string", With(b, "/model", "BPE"), kDataLoss, {"model must be an object"});
  ExpectError("model-type-number", With(b, "/model/type", 3), kDataLoss,
              {"model.type must be a string (it is an integer)"});
  ExpectError("vocab-array", With(b, "/model/vocab", Json::array()), kDataLoss,
              {"model.vocab must be an object"});
  ExpectError("vocab-id-string", With(b, "/model/vocab/a", "97"), kDataLoss,
              {"model.vocab.a must be an integer"});
  ExpectError("vocab-id-negative", With(b, "/model/vocab/a", -1), kDataLoss,
              {"model.vocab.a = -1 must be an integer in [0,"});
  ExpectError("vocab-id-float", With(b, "/model/vocab/a", 97.5), kDataLoss,
              {"model.vocab.a must be an integer"});
  ExpectError("vocab-dup-id", With(b, "/model/vocab/a", 98), kDataLoss, {"both", "id 98"});
  ExpectError("no-merges", With(b, "/model/merges", kRemove), kDataLoss,
              {"model.merges is missing"});
  ExpectError("merge-number", With(b, "/model/merges/1", 5), kDataLoss,
              {"model.merges[1] must be a pair"});
  ExpectError("merge-triple", With(b, "/model/merges/1", Json::array({"l", "l", "l"})), kDataLoss,
              {"model.merges[1] must be a pair"});
  Json legacy = With(b, "/model/merges", Json::array({"h e", "l l l"}));
  ExpectError("merge-legacy-three", legacy, kDataLoss,
              {"model.merges[1] = 'l l l' is not two tokens"});
  ExpectError("merge-legacy-mixed", With(b, "/model/merges", Json::array({"h e", {"l", "l"}})),
              kDataLoss, {"model.merges[1] must be a string"});
  ExpectError("merge-unknown", With(b, "/model/merges/1", Json::array({"l", "zz"})), kDataLoss,
              {"model.merges[1] names 'zz', which is not in model.vocab"});
  ExpectError("merge-result-unknown", With(b, "/model/merges/1", Json::array({"l", "e"})),
              kDataLoss, {"model.merges[1] makes 'le'"});
  ExpectError("added-not-array", With(b, "/added_tokens", Json::object()), kDataLoss,
              {"added_tokens must be an array"});
  ExpectError("added-id-string", With(b, "/added_tokens", Json::array({{{"id", "x"}}})), kDataLoss,
              {"added_tokens[0].id must be an integer"});
  Json added = With(b, "/added_tokens", Json::array({AddedToken(259, "<s>", true)}));
  ExpectError("added-special-string", With(added, "/added_tokens/0/special", "yes"), kDataLoss,
              {"added_tokens[0].special must be a boolean"});
  ExpectError("added-no-content", With(added, "/added_tokens/0/content", kRemove), kDataLoss,
              {"added_tokens[0].content is missing"});
  ExpectError("added-empty", With(added, "/added_tokens/0/content", ""), kDataLoss,
              {"added_tokens[0].content is empty"});
  ExpectError("added-wrong-id", With(added, "/added_tokens/0/id", 300), kDataLoss,
              {"added_tokens[0].id = 300, but the tokenizers crate gives '<s>' id 259"});
  Json twice = added;
  twice["added_tokens"].push_back(AddedToken(260, "<s>", true));
  ExpectError("added-twice", twice, kDataLoss, {"added_tokens[1].content = '<s>' repeats"});
  ExpectError("normalizer-string", With(b, "/normalizer", "NFC"), kDataLoss,
              {"normalizer must be an object"});
  ExpectError("byte-level-prefix-missing", With(b, "/pre_tokenizer/add_prefix_space", kRemove),
              kDataLoss, {"pre_tokenizer.add_prefix_space is missing"});
  ExpectError("use-regex-string", With(b, "/pre_tokenizer/use_regex", "true"), kDataLoss,
              {"pre_tokenizer.use_regex must be a boolean"});
  ExpectError("dropout-string", With(b, "/model/dropout", "0"), kDataLoss,
              {"model.dropout must be a number or null"});
  ExpectError("version-number", With(b, "/version", 1), kDataLoss, {"version must be a string"});
  ExpectError("unk-unknown", With(b, "/model/unk_token", "<unk>"), kDataLoss,
              {"model.unk_token = '<unk>' is not a token"});
  Json holes = With(b, "/model/vocab/" + ByteLevel(" ") + "x", 5000000);
  ExpectError("holes", holes, kDataLoss, {"token id 5000000", "too many holes"});
}

TEST(HfTokenizerErrorsTest, ConfigurationErrors) {
  const Json b = Base();
  ExpectError("config-bos-unknown", b, kDataLoss,
              {"tokenizer_config.json: bos_token = '<s>' is not a token of tokenizer.json"},
              {{"tokenizer_config.json", R"({"bos_token": "<s>"})"}});
  ExpectError("config-eos-number", b, kDataLoss,
              {"tokenizer_config.json: eos_token must be a string, null or an object"},
              {{"tokenizer_config.json", R"({"eos_token": 2})"}});
  ExpectError("config-dict-no-content", b, kDataLoss,
              {"tokenizer_config.json: pad_token.content is missing"},
              {{"tokenizer_config.json", R"({"pad_token": {"lstrip": false}})"}});
  ExpectError("config-add-bos-string", b, kDataLoss, {"add_bos_token must be a boolean"},
              {{"tokenizer_config.json", R"({"add_bos_token": "true"})"}});
  ExpectError("config-add-bos-no-bos", b, kDataLoss,
              {"add_bos_token is true but no BOS token is named"},
              {{"tokenizer_config.json", R"({"add_bos_token": true})"}});
  ExpectError("config-template-number", b, kDataLoss,
              {"tokenizer_config.json: chat_template must be a string or a list"},
              {{"tokenizer_config.json", R"({"chat_template": 1})"}});
  ExpectError("config-template-entry", b, kDataLoss, {"chat_template[0].template is missing"},
              {{"tokenizer_config.json", R"({"chat_template": [{"name": "default"}]})"}});
  ExpectError("generation-eos-range", b, kDataLoss,
              {"generation_config.json: eos_token_id[1] = 5000 is out of range (the tokenizer "
               "has 259 tokens)"},
              {{"generation_config.json", R"({"eos_token_id": [1, 5000]})"}});
  ExpectError("generation-pad-negative", b, kDataLoss,
              {"generation_config.json: pad_token_id = -5 is out of range"},
              {{"generation_config.json", R"({"pad_token_id": -5})"}});
  ExpectError("generation-bos-string", b, kDataLoss,
              {"generation_config.json: bos_token_id must be an integer"},
              {{"generation_config.json", R"({"bos_token_id": "1"})"}});
  ExpectError("template-json-array", b, kDataLoss, {"chat_template.json must be an object"},
              {{"chat_template.json", "[]"}});
}

TEST(HfTokenizerErrorsTest, UnsupportedFeaturesAreUnimplemented) {
  const Json b = Base();
  ExpectError("wordpiece", With(b, "/model/type", "WordPiece"), kUnimplemented,
              {"tokenizer.json: model.type 'WordPiece' is not supported (supported: BPE)"});
  ExpectError("unigram", With(b, "/model/type", "Unigram"), kUnimplemented,
              {"model.type 'Unigram'"});
  ExpectError("dropout", With(b, "/model/dropout", 0.1), kUnimplemented, {"model.dropout 0.1"});
  ExpectError("prefix", With(b, "/model/continuing_subword_prefix", "##"), kUnimplemented,
              {"model.continuing_subword_prefix '##' is not supported"});
  ExpectError("suffix", With(b, "/model/end_of_word_suffix", "</w>"), kUnimplemented,
              {"model.end_of_word_suffix '</w>'"});
  Json no_byte = b;
  no_byte["model"]["vocab"].erase("a");
  ExpectError("missing-byte", no_byte, kUnimplemented, {"model.vocab without the token 'a'"});
  ExpectError("merge-space", With(b, "/model/merges/0", Json::array({"h e", "l"})), kUnimplemented,
              {"model.merges[0] with a space"});
  ExpectError("version", With(b, "/version", "2.0"), kUnimplemented,
              {"version '2.0' is not supported"});
  ExpectError("single-word",
              With(b, "/added_tokens",
                   Json::array({With(AddedToken(259, "<s>", true), "/single_word", true)})),
              kUnimplemented, {"added_tokens[0].single_word true is not supported"});

  const Json byte_level = b["pre_tokenizer"];
  const auto seq = [](std::initializer_list<Json> steps) {
    Json list = Json::array();
    for (const Json& step : steps) list.push_back(step);
    return Json{{"type", "Sequence"}, {"pretokenizers", list}};
  };
  const auto split = [](const std::string& regex, const std::string& behavior, bool invert) {
    return Json{{"type", "Split"},
                {"pattern", {{"Regex", regex}}},
                {"behavior", behavior},
                {"invert", invert}};
  };
  ExpectError("whitespace", With(b, "/pre_tokenizer", seq({{{"type", "Whitespace"}}, byte_level})),
              kUnimplemented,
              {"tokenizer.json: pre_tokenizer.pretokenizers[0].type 'Whitespace' is not supported "
               "(supported: ByteLevel"});
  ExpectError("metaspace", With(b, "/pre_tokenizer", Json{{"type", "Metaspace"}}), kUnimplemented,
              {"pre_tokenizer.type 'Metaspace'"});
  ExpectError("pre-null", With(b, "/pre_tokenizer", nullptr), kUnimplemented,
              {"pre_tokenizer null is not supported"});
  ExpectError("no-byte-level", With(b, "/pre_tokenizer", seq({split("a", "Isolated", false)})),
              kUnimplemented, {"pre_tokenizer without a ByteLevel step"});
  ExpectError("byte-level-first",
              With(b, "/pre_tokenizer", seq({byte_level, split("a", "Isolated", false)})),
              kUnimplemented, {"pre_tokenizer.pretokenizers[0].type 'ByteLevel' followed by"});
  ExpectError("split-removed",
              With(b, "/pre_tokenizer", seq({split("a", "Removed", false), byte_level})),
              kUnimplemented, {"pre_tokenizer.pretokenizers[0].behavior 'Removed'"});
  ExpectError("split-invert",
              With(b, "/pre_tokenizer", seq({split("a", "Isolated", true), byte_level})),
              kUnimplemented, {"pretokenizers[0].invert true"});
  ExpectError("split-anchor",
              With(b, "/pre_tokenizer", seq({split("\\s+$", "Isolated", false), byte_level})),
              kUnimplemented, {"pretokenizers[0].pattern.Regex with ^/$"});
  ExpectError("split-flag",
              With(b, "/pre_tokenizer", seq({split("(?m:a.b)", "Isolated", false), byte_level})),
              kUnimplemented, {"the inline option 'm'"});
  ExpectError("split-bad-regex",
              With(b, "/pre_tokenizer", seq({split("(a", "Isolated", false), byte_level})),
              kUnimplemented, {"pretokenizers[0].pattern '(a'"});
  ExpectError(
      "split-no-pattern",
      With(b, "/pre_tokenizer",
           seq({With(split("a", "Isolated", false), "/pattern", Json::object()), byte_level})),
      kDataLoss, {"pretokenizers[0].pattern must have a 'Regex' or a 'String'"});
  ExpectError(
      "prefix-after-split",
      With(b, "/pre_tokenizer",
           seq({split("a", "Isolated", false), With(byte_level, "/add_prefix_space", true)})),
      kUnimplemented, {"pretokenizers[1].add_prefix_space true after other steps"});
  ExpectError("nfkc", With(b, "/normalizer", Json{{"type", "NFKC"}}), kUnimplemented,
              {"tokenizer.json: normalizer.type 'NFKC' is not supported (supported: null, NFC"});
  ExpectError(
      "lowercase-in-seq",
      With(b, "/normalizer",
           Json{{"type", "Sequence"},
                {"normalizers", Json::array({{{"type", "NFC"}}, {{"type", "Lowercase"}}})}}),
      kUnimplemented, {"normalizer.normalizers[1].type 'Lowercase'"});
  ExpectError("decoder-wordpiece", With(b, "/decoder", Json{{"type", "WordPiece"}}), kUnimplemented,
              {"decoder.type 'WordPiece' is not supported (supported: ByteLevel)"});
  ExpectError("decoder-null", With(b, "/decoder", nullptr), kUnimplemented,
              {"decoder null is not supported"});
  ExpectError("roberta", With(b, "/post_processor", Json{{"type", "RobertaProcessing"}}),
              kUnimplemented, {"post_processor.type 'RobertaProcessing'"});
  const Json two_before = {
      {"type", "TemplateProcessing"},
      {"single", Json::array({{{"SpecialToken", {{"id", "h"}, {"type_id", 0}}}},
                              {{"SpecialToken", {{"id", "h"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"special_tokens", {{"h", {{"id", "h"}, {"ids", {104}}, {"tokens", {"h"}}}}}}};
  ExpectError("template-two", With(b, "/post_processor", two_before), kUnimplemented,
              {"post_processor.single 2 tokens before and 0 after"});
  ExpectError("template-missing-special",
              With(b, "/post_processor", With(two_before, "/special_tokens", Json::object())),
              kDataLoss, {"post_processor.special_tokens has no entry 'h'"});
  const Json one_before = With(two_before, "/single/0", kRemove);
  ExpectError("template-id-range",
              With(b, "/post_processor", With(one_before, "/special_tokens/h/ids/0", 5000)),
              kDataLoss, {"post_processor adds id 5000, out of range (the tokenizer has 259"});
  ExpectError("template-bos-mismatch", With(b, "/post_processor", one_before), kUnimplemented,
              {"post_processor adds id 104 before the text, but the configuration names id 97"},
              {{"tokenizer_config.json", R"({"bos_token": "a"})"}});
}

// Random byte edits of the fixture and random type swaps of its fields: every outcome is a
// Status (or a working tokenizer), never a crash or a hang.
TEST(HfTokenizerErrorsTest, MutatedFilesNeverCrash) {
  const std::string text = testing::ReadText(testing::QwenStyleDir() + "/tokenizer.json");
  const Json original = Json::parse(text);
  std::mt19937 rng(20251201);
  const auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  std::map<StatusCode, int> outcomes;
  // Loads the mutated file; true when it gave a working tokenizer.
  const auto check = [&](const std::string& file_text, const std::string& what) {
    const std::string dir = WriteFolder("fuzz", nullptr, {{"tokenizer.json", file_text}});
    auto tok = LoadHfTokenizer(dir);
    ++outcomes[tok.status().code()];
    if (tok.ok()) {
      (*tok)->Decode((*tok)->Encode("Once upon a time<|im_end|> \xC3\xA9 123", true, true), false);
      return true;
    }
    const StatusCode code = tok.status().code();
    EXPECT_TRUE(code == kDataLoss || code == kUnimplemented)
        << what << ": " << tok.status().ToString();
    return false;
  };
  int ok_bytes = 0;
  for (int iter = 0; iter < 150; ++iter) {
    std::string mutated = text;
    const int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits; ++e) {
      const size_t at = pick(mutated.size());
      switch (pick(4)) {
        case 0:
          mutated[at] = static_cast<char>(pick(256));
          break;
        case 1:
          mutated.erase(at, 1 + pick(8));
          break;
        case 2:
          mutated.insert(at, 1, "{}[]\",:0-9ae\\"[pick(14)]);
          break;
        default:
          std::swap(mutated[at], mutated[pick(mutated.size())]);
      }
    }
    ok_bytes += check(mutated, "byte edit " + std::to_string(iter));
  }
  // Structural: replace one value (found by a random walk) with a value of another type.
  const Json replacements[] = {nullptr,       true, -1,    0,   1003,          99999999,
                               0.5,           "",   "BPE", "Ā", Json::array(), Json::array({1, 2}),
                               Json::object()};
  for (int iter = 0; iter < 300; ++iter) {
    Json mutated = original;
    Json* node = &mutated;
    for (int depth = 0; depth < 6 && (node->is_object() || node->is_array()) && !node->empty();
         ++depth) {
      const size_t k = pick(node->size());
      if (node->is_array()) {
        node = &(*node)[k];
      } else {
        auto it = node->begin();
        std::advance(it, static_cast<long>(k));
        node = &it.value();
      }
      if (pick(3) == 0) break;
    }
    *node = replacements[pick(std::size(replacements))];
    check(mutated.dump(), "structural edit " + std::to_string(iter));
  }
  EXPECT_LT(ok_bytes, 150);  // most byte edits break the file
  // The edits reach every kind of outcome: working files, malformed ones, unsupported ones.
  EXPECT_GT(outcomes[StatusCode::kOk], 0);
  EXPECT_GT(outcomes[kDataLoss], 0);
  EXPECT_GT(outcomes[kUnimplemented], 0);
  for (const auto& [code, count] : outcomes) {
    std::printf("  %s: %d\n", std::string(StatusCodeName(code)).c_str(), count);
  }
}

}  // namespace
}  // namespace unmask
