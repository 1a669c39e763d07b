// ReadHfTokenizer: tokenizer.json's model and added tokens (huggingface/tokenizers
// tokenizers/src/models/bpe/serialization.rs, models/bpe/model.rs BpeBuilder::build,
// tokenizer/serialization.rs, tokenizer/added_vocabulary.rs AddedVocabulary::add_tokens) into a
// Vocab; the pipeline and the configuration files are read by tokenizer_hf_pipeline.cc and
// tokenizer_hf_config.cc.
#include "tokenizer/tokenizer_hf.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer_hf_internal.h"
#include "tokenizer/unicode_util.h"

namespace unmask {
namespace {

using hf::Json;
using hf::JsonField;
using hf::QuoteValue;

constexpr int64_t kMaxTokenId = INT32_MAX - 1;
// Ids may leave holes (filled with unused placeholders), but not more than this many beyond twice
// the tokens the file defines: a wild id is a damaged file, not a reason to allocate gigabytes.
constexpr int64_t kMaxHoleSlack = 65536;

struct ModelData {
  std::unordered_map<std::string, TokenId> ids;  // model.vocab
  int64_t max_id = -1;
  std::vector<std::string> merges;  // "left right", rank = index
  std::optional<std::string> unk_token;
  std::optional<bool> ignore_merges;
};

struct AddedToken {
  TokenId id = kNoToken;
  std::string content;
  bool special = false;
  AddedTokenOptions options;
};

Status ReadVocabMap(const JsonField& vocab, ModelData* m) {
  UNMASK_RETURN_IF_ERROR(vocab.ExpectObject());
  std::unordered_map<TokenId, const std::string*> by_id;
  m->ids.reserve(vocab.size());
  by_id.reserve(vocab.size());
  for (auto it = vocab.json().begin(); it != vocab.json().end(); ++it) {
    const JsonField entry = vocab.Member(it.key(), &it.value());
    UNMASK_ASSIGN_OR_RETURN(const int64_t id, entry.Int(0, kMaxTokenId));
    const auto [slot, inserted] = m->ids.emplace(it.key(), static_cast<TokenId>(id));
    const auto [other, fresh] = by_id.emplace(static_cast<TokenId>(id), &slot->first);
    if (!fresh) {
      return vocab.Bad("gives id " + std::to_string(id) + " to both " + QuoteValue(*other->second) +
                       " and " + QuoteValue(it.key()));
    }
    m->max_id = std::max(m->max_id, id);
  }
  return Status::Ok();
}

// model.merges: [["a", "b"], ...] or the legacy ["a b", ...] ("#version" lines skipped, as
// convert_merges_to_hashmap does). Each side and their concatenation must be tokens. A pair listed
// twice keeps its last rank (the crate collects the merges into a map).
Status ReadMerges(const JsonField& merges, ModelData* m) {
  UNMASK_RETURN_IF_ERROR(merges.ExpectArray());
  const bool legacy = merges.size() > 0 && merges[0].is_string();
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const JsonField item = merges[i];
    std::string left, right;
    if (legacy) {
      if (!item.is_string()) return item.WrongType("a string \"a b\" (like model.merges[0])");
      UNMASK_ASSIGN_OR_RETURN(const std::string line, item.String());
      if (line.rfind("#version", 0) == 0) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        return item.Bad("= " + QuoteValue(line) + " is not two tokens separated by one space");
      }
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else {
      if (!item.is_array() || item.size() != 2) {
        return item.WrongType("a pair [\"a\", \"b\"] (like model.merges[0])");
      }
      UNMASK_ASSIGN_OR_RETURN(left, item[0].String());
      UNMASK_ASSIGN_OR_RETURN(right, item[1].String());
      if (left.find(' ') != std::string::npos || right.find(' ') != std::string::npos) {
        return item.Unsupported("with a space inside a token",
                                "byte-level tokens, which have no space");
      }
    }
    for (const std::string* part : {&left, &right}) {
      if (m->ids.find(*part) == m->ids.end()) {
        return item.Bad("names " + QuoteValue(*part) + ", which is not in model.vocab");
      }
    }
    if (m->ids.find(left + right) == m->ids.end()) {
      return item.Bad("makes " + QuoteValue(left + right) + ", which is not in model.vocab");
    }
    pairs.emplace_back(std::move(left), std::move(right));
  }
  std::set<std::pair<std::string_view, std::string_view>> seen;
  std::vector<std::string> kept;  // from the last rank backwards
  for (auto it = pairs.rbegin(); it != pairs.rend(); ++it) {
    if (seen.emplace(it->first, it->second).second) kept.push_back(it->first + " " + it->second);
  }
  m->merges.assign(kept.rbegin(), kept.rend());
  return Status::Ok();
}

Status ReadModel(const JsonField& model, ModelData* m) {
  UNMASK_RETURN_IF_ERROR(model.ExpectObject());
  const JsonField type = model["type"];
  if (!type.absent() || model["merges"].absent()) {  // files without a type are BPE if merged
    UNMASK_ASSIGN_OR_RETURN(const std::string t, type.String());
    if (t != "BPE") return type.Unsupported(QuoteValue(t), "BPE");
  }
  const JsonField dropout = model["dropout"];
  if (!dropout.null_or_absent()) {
    if (!dropout.json().is_number()) return dropout.WrongType("a number or null");
    if (dropout.json().get<double>() != 0.0) {
      return dropout.Unsupported(dropout.json().dump(), "null or 0 (no BPE dropout)");
    }
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    UNMASK_ASSIGN_OR_RETURN(const std::optional<std::string> affix, model[key].OptionalString());
    if (affix && !affix->empty()) return model[key].Unsupported(QuoteValue(*affix), "null or ''");
  }
  UNMASK_ASSIGN_OR_RETURN(m->unk_token, model["unk_token"].OptionalString());
  UNMASK_ASSIGN_OR_RETURN(m->ignore_merges, model["ignore_merges"].OptionalBool());
  UNMASK_RETURN_IF_ERROR(model["fuse_unk"].OptionalBool().status());
  UNMASK_RETURN_IF_ERROR(model["byte_fallback"].OptionalBool().status());
  UNMASK_RETURN_IF_ERROR(ReadVocabMap(model["vocab"], m));
  UNMASK_RETURN_IF_ERROR(ReadMerges(model["merges"], m));
  // Byte-level BPE needs every byte's stand-in: the crate drops a character that is not a token
  // (and merges its neighbours across it), which unmask's BPE does not reproduce.
  for (int b = 0; b < 256; ++b) {
    const std::string& stand_in = unicode::ByteToUnicode(static_cast<uint8_t>(b));
    if (m->ids.find(stand_in) == m->ids.end()) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", b);
      return model["vocab"].Unsupported(
          "without the token " + QuoteValue(stand_in) + " of byte " + hex,
          "byte-level vocabularies with all 256 byte tokens");
    }
  }
  return Status::Ok();
}

// added_tokens[]: flags with the crate's defaults (normalized = !special), and the id the crate
// assigns on loading (AddedVocabulary::add_tokens), which must be the id written in the file.
Status ReadAddedTokens(const JsonField& list, const ModelData& m, std::vector<AddedToken>* out) {
  if (list.null_or_absent()) return Status::Ok();
  UNMASK_RETURN_IF_ERROR(list.ExpectArray());
  std::unordered_map<std::string, size_t> index_of;  // content -> index in *out
  const auto model_size = static_cast<int64_t>(m.ids.size());
  int64_t max_added = -1;
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonField f = list[i];
    UNMASK_RETURN_IF_ERROR(f.ExpectObject());
    AddedToken t;
    UNMASK_ASSIGN_OR_RETURN(const int64_t id, f["id"].Int(0, kMaxTokenId));
    UNMASK_ASSIGN_OR_RETURN(t.content, f["content"].String());
    if (t.content.empty()) return f["content"].Bad("is empty (the tokenizers crate skips it)");
    UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> special, f["special"].OptionalBool());
    t.special = special.value_or(false);
    UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> normalized, f["normalized"].OptionalBool());
    t.options.normalized = normalized.value_or(!t.special);
    UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> lstrip, f["lstrip"].OptionalBool());
    UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> rstrip, f["rstrip"].OptionalBool());
    t.options.lstrip = lstrip.value_or(false);
    t.options.rstrip = rstrip.value_or(false);
    UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> single_word, f["single_word"].OptionalBool());
    if (single_word.value_or(false)) return f["single_word"].Unsupported("true", "false");
    if (const auto dup = index_of.find(t.content); dup != index_of.end()) {
      return f["content"].Bad("= " + QuoteValue(t.content) + " repeats added_tokens[" +
                              std::to_string(dup->second) + "]");
    }

    int64_t expected = 0;
    const auto in_model = m.ids.find(t.content);
    if (in_model != m.ids.end()) {
      expected = in_model->second;
    } else if (max_added < 0) {
      expected = model_size;
    } else {
      expected = (max_added >= model_size || model_size == 0) ? max_added + 1 : model_size;
    }
    if (id != expected) {
      return f["id"].Bad(
          "= " + std::to_string(id) + ", but the tokenizers crate gives " + QuoteValue(t.content) +
          " id " + std::to_string(expected) +
          " when it loads this file (model tokens first, then added tokens in order)");
    }
    if (in_model == m.ids.end() && expected <= m.max_id) {
      for (const auto& [text, model_id] : m.ids) {
        if (model_id == expected) {
          return f["id"].Bad("= " + std::to_string(id) + " is already model token " +
                             QuoteValue(text) + " (model.vocab has holes below its largest id)");
        }
      }
    }
    max_added = std::max(max_added, expected);
    t.id = static_cast<TokenId>(id);
    t.options.id = t.id;
    index_of.emplace(t.content, out->size());
    out->push_back(std::move(t));
  }
  return Status::Ok();
}

// The folder's name ("qwen-style" for "tests/data/hf/tokenizers/qwen-style/").
std::string FolderName(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  if (p.filename() == "." || p.filename() == ".." || p.empty()) {
    std::error_code ec;
    p = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec), ec);
  }
  return p.filename().string();
}

}  // namespace

StatusOr<Vocab> ReadHfTokenizer(const std::string& dir) {
  const std::string path = hf::JoinPath(dir, "tokenizer.json");
  UNMASK_ASSIGN_OR_RETURN(const Json document, hf::ReadJsonFile(path));
  const JsonField root(&document, &path, "");
  UNMASK_RETURN_IF_ERROR(root.ExpectObject());
  UNMASK_ASSIGN_OR_RETURN(const std::optional<std::string> version,
                          root["version"].OptionalString());
  if (version && *version != "1.0") return root["version"].Unsupported(QuoteValue(*version), "1.0");

  ModelData model;
  UNMASK_RETURN_IF_ERROR(ReadModel(root["model"], &model));
  UNMASK_ASSIGN_OR_RETURN(const hf::Pipeline pipeline, hf::ReadPipeline(root));
  std::vector<AddedToken> added;
  UNMASK_RETURN_IF_ERROR(ReadAddedTokens(root["added_tokens"], model, &added));

  int64_t max_id = model.max_id;
  for (const AddedToken& t : added) max_id = std::max<int64_t>(max_id, t.id);
  if (max_id < 0) return root["model"]["vocab"].Bad("is empty");
  const int64_t defined = static_cast<int64_t>(model.ids.size() + added.size());
  if (max_id + 1 > 2 * defined + kMaxHoleSlack) {
    return root.Bad("has token id " + std::to_string(max_id) + " but defines only " +
                    std::to_string(defined) + " tokens (too many holes)");
  }

  Vocab vocab;
  vocab.model = "gpt2";
  vocab.name = FolderName(dir);
  const auto n = static_cast<size_t>(max_id + 1);
  vocab.tokens.assign(n, std::string());
  vocab.token_types.assign(n, static_cast<int32_t>(TokenType::kUnused));
  std::vector<bool> filled(n, false);
  std::unordered_map<std::string, TokenId> lookup = model.ids;
  for (const auto& [text, id] : model.ids) {
    vocab.tokens[id] = text;
    vocab.token_types[id] = static_cast<int32_t>(TokenType::kNormal);
    filled[id] = true;
  }
  std::vector<AddedTokenOptions> options;
  for (const AddedToken& t : added) {
    vocab.tokens[t.id] = t.content;
    vocab.token_types[t.id] =
        static_cast<int32_t>(t.special ? TokenType::kControl : TokenType::kUserDefined);
    filled[t.id] = true;
    lookup[t.content] = t.id;
    options.push_back(t.options);
  }
  for (size_t id = 0; id < n; ++id) {  // holes: unused placeholders, as convert_hf_to_gguf does
    if (filled[id]) continue;
    std::string pad = "[PAD" + std::to_string(id) + "]";
    while (lookup.count(pad) != 0) pad += "#";
    vocab.tokens[id] = pad;
  }
  vocab.merges = std::move(model.merges);
  vocab.ignore_merges = model.ignore_merges.value_or(false);
  vocab.normalizer = pipeline.normalizer;
  vocab.pre = pipeline.pre_name;
  vocab.pre_patterns = pipeline.patterns;
  vocab.byte_level_prefix_space = pipeline.prefix_space;
  vocab.added_tokens = std::move(options);
  if (model.unk_token) {
    const auto it = lookup.find(*model.unk_token);
    if (it == lookup.end()) {
      return root["model"]["unk_token"].Bad("= " + QuoteValue(*model.unk_token) +
                                            " is not a token");
    }
    vocab.unk = it->second;
  }
  const hf::TokenLookup find = [&lookup](std::string_view text) {
    const auto it = lookup.find(std::string(text));
    return it == lookup.end() ? kNoToken : it->second;
  };
  UNMASK_RETURN_IF_ERROR(hf::ReadSpecialTokens(dir, pipeline, find, &vocab));
  return vocab;
}

StatusOr<std::unique_ptr<Tokenizer>> LoadHfTokenizer(const std::string& dir) {
  UNMASK_ASSIGN_OR_RETURN(Vocab vocab, ReadHfTokenizer(dir));
  StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::FromVocab(std::move(vocab));
  if (!tokenizer.ok()) return tokenizer.status().WithContext(dir);
  return tokenizer;
}

}  // namespace unmask
