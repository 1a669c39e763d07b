// Special tokens and the chat template of a Hugging Face folder: tokenizer_config.json
// (transformers PreTrainedTokenizerBase keys), generation_config.json (transformers
// GenerationConfig keys), chat_template.jinja / chat_template.json, and tokenizer.json's
// post-processor (docs MODELS.md §1.5, §1.7).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer_hf_internal.h"

namespace unmask::hf {
namespace {

// Mask tokens looked up by text when tokenizer_config.json names none (LLaDA, SDAR, Dream, ...).
constexpr std::string_view kMaskTexts[] = {"<|mask|>", "<|MASK|>", "<mask>", "<|mdm_mask|>"};

// A parsed optional file: nullopt when it does not exist.
StatusOr<std::optional<Json>> ReadOptionalJson(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<Json>();
  UNMASK_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  return std::optional<Json>(std::move(j));
}

StatusOr<std::optional<std::string>> ReadOptionalText(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<std::string>();
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return DataLossError(path + ": read error");
  return std::optional<std::string>(text.str());
}

// A token named in tokenizer_config.json: a string, null, or an AddedToken dict {"content": ...}.
StatusOr<std::optional<std::string>> TokenContent(const JsonField& f) {
  if (f.null_or_absent()) return std::optional<std::string>();
  if (f.is_string()) return f.OptionalString();
  if (f.is_object()) {
    UNMASK_ASSIGN_OR_RETURN(std::string content, f["content"].String());
    return std::optional<std::string>(std::move(content));
  }
  return f.WrongType("a string, null or an object with 'content'");
}

// The id of the token named by `f`; kNoToken when it names none.
StatusOr<TokenId> NamedToken(const JsonField& f, const TokenLookup& lookup) {
  UNMASK_ASSIGN_OR_RETURN(const std::optional<std::string> content, TokenContent(f));
  if (!content) return kNoToken;
  const TokenId id = lookup(*content);
  if (id == kNoToken)
    return f.Bad("= " + QuoteValue(*content) + " is not a token of tokenizer.json");
  return id;
}

// generation_config.json ids: an integer, a list of integers, or null.
StatusOr<std::vector<TokenId>> GenerationIds(const JsonField& f, size_t num_tokens) {
  std::vector<JsonField> items;
  if (f.null_or_absent()) return std::vector<TokenId>();
  if (f.is_array()) {
    for (size_t i = 0; i < f.size(); ++i) items.push_back(f[i]);
  } else {
    items.push_back(f);
  }
  std::vector<TokenId> ids;
  for (const JsonField& item : items) {
    UNMASK_ASSIGN_OR_RETURN(const int64_t id, item.Int(INT32_MIN, INT32_MAX));
    if (id < 0 || static_cast<size_t>(id) >= num_tokens) {
      return item.Bad("= " + std::to_string(id) + " is out of range (the tokenizer has " +
                      std::to_string(num_tokens) + " tokens)");
    }
    ids.push_back(static_cast<TokenId>(id));
  }
  return ids;
}

// `chat_template` of tokenizer_config.json / chat_template.json: a string, or a list of
// {name, template} whose "default" entry is taken; "" when none.
StatusOr<std::string> ChatTemplateOf(const JsonField& f) {
  if (f.null_or_absent()) return std::string();
  if (f.is_string()) return f.String();
  if (!f.is_array()) return f.WrongType("a string or a list of {name, template}");
  for (size_t i = 0; i < f.size(); ++i) {
    UNMASK_RETURN_IF_ERROR(f[i].ExpectObject());
    UNMASK_ASSIGN_OR_RETURN(const std::string name, f[i]["name"].String());
    UNMASK_ASSIGN_OR_RETURN(std::string text, f[i]["template"].String());
    if (name == "default") return text;
  }
  return std::string();
}

// The post-processor's token before (or after) the text against the BOS (EOS) token named by the
// configuration files: it becomes that token when none is named; another one is refused.
Status MergePostProcessorToken(std::optional<int64_t> post_id, std::string_view which,
                               const std::string& tokenizer_json, size_t num_tokens, TokenId* id,
                               bool* add) {
  if (!post_id) return Status::Ok();
  const std::string where = tokenizer_json + ": post_processor";
  if (*post_id >= static_cast<int64_t>(num_tokens)) {
    return DataLossError(where + " adds id " + std::to_string(*post_id) +
                         ", out of range (the tokenizer has " + std::to_string(num_tokens) +
                         " tokens)");
  }
  if (*id == kNoToken) *id = static_cast<TokenId>(*post_id);
  if (*id != *post_id) {
    return UnimplementedError(where + " adds id " + std::to_string(*post_id) + " " +
                              std::string(which) + " the text, but the configuration names id " +
                              std::to_string(*id) +
                              " (supported: the named token, or no name at all)");
  }
  *add = true;
  return Status::Ok();
}

}  // namespace

Status ReadSpecialTokens(const std::string& dir, const Pipeline& pipeline,
                         const TokenLookup& lookup, Vocab* vocab) {
  const size_t n = vocab->tokens.size();
  const std::string config_path = JoinPath(dir, "tokenizer_config.json");
  UNMASK_ASSIGN_OR_RETURN(const std::optional<Json> config, ReadOptionalJson(config_path));
  const Json empty = Json::object();
  const JsonField c(config ? &*config : &empty, &config_path, "");
  UNMASK_RETURN_IF_ERROR(c.ExpectObject());

  UNMASK_ASSIGN_OR_RETURN(const TokenId bos, NamedToken(c["bos_token"], lookup));
  UNMASK_ASSIGN_OR_RETURN(const TokenId eos, NamedToken(c["eos_token"], lookup));
  UNMASK_ASSIGN_OR_RETURN(const TokenId pad, NamedToken(c["pad_token"], lookup));
  UNMASK_ASSIGN_OR_RETURN(const TokenId unk, NamedToken(c["unk_token"], lookup));
  UNMASK_ASSIGN_OR_RETURN(const TokenId mask, NamedToken(c["mask_token"], lookup));
  if (bos != kNoToken) vocab->bos = bos;
  if (eos != kNoToken) vocab->eos = eos;
  if (pad != kNoToken) vocab->pad = pad;
  if (unk != kNoToken) vocab->unk = unk;
  if (mask != kNoToken) vocab->mask = mask;

  const std::string generation_path = JoinPath(dir, "generation_config.json");
  UNMASK_ASSIGN_OR_RETURN(const std::optional<Json> generation, ReadOptionalJson(generation_path));
  if (generation) {
    const JsonField g(&*generation, &generation_path, "");
    UNMASK_RETURN_IF_ERROR(g.ExpectObject());
    UNMASK_ASSIGN_OR_RETURN(const std::vector<TokenId> g_bos, GenerationIds(g["bos_token_id"], n));
    UNMASK_ASSIGN_OR_RETURN(const std::vector<TokenId> g_eos, GenerationIds(g["eos_token_id"], n));
    UNMASK_ASSIGN_OR_RETURN(const std::vector<TokenId> g_pad, GenerationIds(g["pad_token_id"], n));
    if (vocab->bos == kNoToken && !g_bos.empty()) vocab->bos = g_bos[0];
    if (vocab->eos == kNoToken && !g_eos.empty()) vocab->eos = g_eos[0];
    if (vocab->pad == kNoToken && !g_pad.empty()) vocab->pad = g_pad[0];
    for (const TokenId id : g_eos) {  // a second end-of-generation id becomes eot
      if (vocab->eot == kNoToken && id != vocab->eos) vocab->eot = id;
    }
  }
  if (vocab->mask == kNoToken) {
    for (std::string_view text : kMaskTexts) {
      if (const TokenId id = lookup(text); id != kNoToken) {
        vocab->mask = id;
        break;
      }
    }
  }

  // add_bos / add_eos: the post-processor, overridden by tokenizer_config.json.
  const std::string tokenizer_json = JoinPath(dir, "tokenizer.json");
  bool add_bos = false;
  bool add_eos = false;
  UNMASK_RETURN_IF_ERROR(MergePostProcessorToken(pipeline.post_first_id, "before", tokenizer_json,
                                                 n, &vocab->bos, &add_bos));
  UNMASK_RETURN_IF_ERROR(MergePostProcessorToken(pipeline.post_last_id, "after", tokenizer_json, n,
                                                 &vocab->eos, &add_eos));
  UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> config_bos, c["add_bos_token"].OptionalBool());
  UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> config_eos, c["add_eos_token"].OptionalBool());
  if (config_bos) add_bos = *config_bos;
  if (config_eos) add_eos = *config_eos;
  if (add_bos && vocab->bos == kNoToken) {
    return c["add_bos_token"].Bad("is true but no BOS token is named (bos_token)");
  }
  if (add_eos && vocab->eos == kNoToken) {
    return c["add_eos_token"].Bad("is true but no EOS token is named (eos_token)");
  }
  vocab->add_bos = add_bos;
  vocab->add_eos = add_eos;
  UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> clean,
                          c["clean_up_tokenization_spaces"].OptionalBool());
  vocab->clean_spaces = clean.value_or(false);

  // The chat template: chat_template.jinja, else chat_template.json, else tokenizer_config.json.
  UNMASK_ASSIGN_OR_RETURN(std::optional<std::string> jinja,
                          ReadOptionalText(JoinPath(dir, "chat_template.jinja")));
  if (jinja) {
    vocab->chat_template = std::move(*jinja);
    return Status::Ok();
  }
  const std::string template_path = JoinPath(dir, "chat_template.json");
  UNMASK_ASSIGN_OR_RETURN(const std::optional<Json> template_json, ReadOptionalJson(template_path));
  if (template_json) {
    const JsonField t(&*template_json, &template_path, "");
    UNMASK_RETURN_IF_ERROR(t.ExpectObject());
    UNMASK_ASSIGN_OR_RETURN(vocab->chat_template, ChatTemplateOf(t["chat_template"]));
    return Status::Ok();
  }
  UNMASK_ASSIGN_OR_RETURN(vocab->chat_template, ChatTemplateOf(c["chat_template"]));
  return Status::Ok();
}

}  // namespace unmask::hf
