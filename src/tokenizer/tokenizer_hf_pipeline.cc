// tokenizer.json's normalizer, pre_tokenizer, decoder and post_processor (huggingface/tokenizers
// tokenizers/src/normalizers/mod.rs, pre_tokenizers/{byte_level,split,digits,sequence}.rs,
// decoders/byte_level.rs, processors/template.rs): what unmask can run, or an error naming the
// field of what it cannot.
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer_hf_internal.h"

namespace unmask::hf {
namespace {

constexpr std::string_view kNormalizers = "null, NFC, Sequence of NFC";
constexpr std::string_view kPreTokenizers =
    "ByteLevel, or a Sequence of Split/Digits steps ending in ByteLevel";
constexpr std::string_view kPostProcessors =
    "null, ByteLevel, TemplateProcessing, Sequence of ByteLevel and TemplateProcessing";

// Hugging Face Split regexes (Oniguruma syntax) equal to a llama.cpp pre-tokenizer
// (src/llama-vocab.cpp), by llama.cpp name. Qwen2 and Llama 3 write the contractions as (?i:...).
constexpr std::string_view kHfQwen2 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kHfLlama3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct KnownPre {
  std::string_view name;
  std::vector<std::string_view> patterns;
};

const std::vector<KnownPre>& KnownPres() {
  static const std::vector<KnownPre> known = {
      {"gpt-2", {kGpt2Regex}},
      {"qwen2", {kHfQwen2}},
      {"llama3", {kHfLlama3}},
      {"smollm", {"\\p{N}", kGpt2Regex}},  // Digits(individual_digits) + ByteLevel(use_regex)
  };
  return known;
}

// The `type` of a pipeline object: an object with a string `type`, else DataLoss.
StatusOr<std::string> TypeOf(const JsonField& f) {
  UNMASK_RETURN_IF_ERROR(f.ExpectObject());
  return f["type"].String();
}

// Why PCRE2 would not run `pattern` as Oniguruma does; "" when nothing is known to differ.
std::string OnigurumaDifference(std::string_view p) {
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 < p.size() && (p[i + 1] == 'h' || p[i + 1] == 'H')) {
        return "\\h/\\H (Oniguruma: hex digit; PCRE2: horizontal space)";
      }
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      if (c == '[' && !(i + 1 < p.size() && p[i + 1] == ':')) {
        return "a nested character class (Oniguruma: a set; PCRE2: a literal '[')";
      }
      if (c == '&' && i + 1 < p.size() && p[i + 1] == '&') {
        return "'&&' in a character class (Oniguruma: intersection; PCRE2: literal)";
      }
      continue;
    }
    if (c == '[') {
      in_class = true;
      if (i + 1 < p.size() && p[i + 1] == '^') ++i;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i;  // a leading ']' is literal
      continue;
    }
    if (c == '^' || c == '$') return "^/$ (Oniguruma: line anchors; PCRE2: subject anchors)";
    if (c == '(' && i + 2 < p.size() && p[i + 1] == '?' &&
        std::string_view("imsxWDSyaIL-").find(p[i + 2]) != std::string_view::npos) {
      for (size_t k = i + 2; k < p.size() && p[k] != ':' && p[k] != ')'; ++k) {
        if (p[k] != 'i' && p[k] != '-') {
          return std::string("the inline option '") + p[k] + "' (only 'i' means the same in both)";
        }
      }
    }
  }
  return "";
}

// A literal Split string as a PCRE2 pattern: ASCII punctuation and spaces escaped.
std::string EscapeLiteral(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (u < 0x80 && !alnum) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

Status ReadNormalizer(const JsonField& f, std::string* out) {
  if (f.null_or_absent()) return Status::Ok();
  UNMASK_ASSIGN_OR_RETURN(const std::string type, TypeOf(f));
  if (type == "NFC") {
    *out = "nfc";
    return Status::Ok();
  }
  if (type == "Sequence") {
    const JsonField list = f["normalizers"];
    UNMASK_RETURN_IF_ERROR(list.ExpectArray());
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].null_or_absent()) return list[i].WrongType("an object");
      UNMASK_RETURN_IF_ERROR(ReadNormalizer(list[i], out));
    }
    return Status::Ok();
  }
  return f["type"].Unsupported(QuoteValue(type), kNormalizers);
}

// Appends the steps of a pre-tokenizer, Sequences flattened.
Status FlattenPreTokenizer(const JsonField& f, std::vector<JsonField>* steps) {
  UNMASK_ASSIGN_OR_RETURN(const std::string type, TypeOf(f));
  if (type != "Sequence") {
    steps->push_back(f);
    return Status::Ok();
  }
  const JsonField list = f["pretokenizers"];
  UNMASK_RETURN_IF_ERROR(list.ExpectArray());
  for (size_t i = 0; i < list.size(); ++i) {
    UNMASK_RETURN_IF_ERROR(FlattenPreTokenizer(list[i], steps));
  }
  return Status::Ok();
}

// One Split step: its regex (checked) appended to the pipeline.
Status ReadSplit(const JsonField& step, Pipeline* pipeline) {
  const JsonField pattern = step["pattern"];
  UNMASK_RETURN_IF_ERROR(pattern.ExpectObject());
  std::string regex;
  if (!pattern["Regex"].absent()) {
    UNMASK_ASSIGN_OR_RETURN(regex, pattern["Regex"].String());
    if (const std::string diff = OnigurumaDifference(regex); !diff.empty()) {
      return pattern["Regex"].Unsupported("with " + diff,
                                          "the Oniguruma subset that PCRE2 runs alike");
    }
  } else if (!pattern["String"].absent()) {
    UNMASK_ASSIGN_OR_RETURN(const std::string literal, pattern["String"].String());
    regex = EscapeLiteral(literal);
  } else {
    return pattern.Bad("must have a 'Regex' or a 'String' member");
  }
  if (regex.empty()) return pattern.Bad("is empty");
  UNMASK_ASSIGN_OR_RETURN(const std::string behavior, step["behavior"].String());
  if (behavior != "Isolated") return step["behavior"].Unsupported(QuoteValue(behavior), "Isolated");
  UNMASK_ASSIGN_OR_RETURN(const bool invert, step["invert"].Bool());
  if (invert) return step["invert"].Unsupported("true", "false");
  if (StatusOr<PreTokenizer> compiled = PreTokenizer::Compile({regex}); !compiled.ok()) {
    return pattern.Unsupported(QuoteValue(regex) + " (" + compiled.status().message() + ")",
                               "patterns PCRE2 compiles");
  }
  pipeline->patterns.push_back(std::move(regex));
  return Status::Ok();
}

Status ReadPreTokenizer(const JsonField& f, Pipeline* pipeline) {
  if (f.null_or_absent()) return f.Unsupported("null", kPreTokenizers);
  std::vector<JsonField> steps;
  UNMASK_RETURN_IF_ERROR(FlattenPreTokenizer(f, &steps));
  for (size_t i = 0; i < steps.size(); ++i) {
    const JsonField& step = steps[i];
    UNMASK_ASSIGN_OR_RETURN(const std::string type, step["type"].String());
    if (type == "ByteLevel") {
      if (i + 1 != steps.size()) {
        return step["type"].Unsupported("'ByteLevel' followed by other steps", kPreTokenizers);
      }
      UNMASK_ASSIGN_OR_RETURN(pipeline->prefix_space, step["add_prefix_space"].Bool());
      if (pipeline->prefix_space && i != 0) {
        return step["add_prefix_space"].Unsupported(
            "true after other steps", "true only when ByteLevel is the only pre-tokenizer");
      }
      UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> use_regex,
                              step["use_regex"].OptionalBool());
      if (use_regex.value_or(true)) pipeline->patterns.emplace_back(kGpt2Regex);
      UNMASK_RETURN_IF_ERROR(step["trim_offsets"].OptionalBool().status());
      pipeline->byte_level = true;
    } else if (type == "Split") {
      UNMASK_RETURN_IF_ERROR(ReadSplit(step, pipeline));
    } else if (type == "Digits") {
      UNMASK_ASSIGN_OR_RETURN(const std::optional<bool> individual,
                              step["individual_digits"].OptionalBool());
      pipeline->patterns.emplace_back(individual.value_or(false) ? "\\p{N}" : "\\p{N}+");
    } else {
      return step["type"].Unsupported(QuoteValue(type), kPreTokenizers);
    }
  }
  if (!pipeline->byte_level) {
    return f.Unsupported("without a ByteLevel step (not byte-level BPE)", kPreTokenizers);
  }
  for (const KnownPre& known : KnownPres()) {
    if (known.patterns.size() != pipeline->patterns.size()) continue;
    bool same = true;
    for (size_t i = 0; i < known.patterns.size(); ++i) {
      same &= known.patterns[i] == pipeline->patterns[i];
    }
    if (same) {
      pipeline->pre_name = std::string(known.name);
      break;
    }
  }
  // ByteLevel without a regex and nothing before it: each piece of text is one word.
  if (pipeline->patterns.empty()) pipeline->patterns.emplace_back("(?s:.+)");
  return Status::Ok();
}

Status ReadDecoder(const JsonField& f) {
  if (f.null_or_absent()) return f.Unsupported("null", "ByteLevel");
  UNMASK_ASSIGN_OR_RETURN(const std::string type, TypeOf(f));
  if (type != "ByteLevel") return f["type"].Unsupported(QuoteValue(type), "ByteLevel");
  return Status::Ok();
}

// The single id that special_tokens[name] of a TemplateProcessing stands for.
StatusOr<int64_t> TemplateSpecialId(const JsonField& processor, const JsonField& piece) {
  UNMASK_RETURN_IF_ERROR(piece.ExpectObject());
  UNMASK_ASSIGN_OR_RETURN(const std::string name, piece["id"].String());
  const JsonField specials = processor["special_tokens"];
  UNMASK_RETURN_IF_ERROR(specials.ExpectObject());
  const JsonField special = specials[name];
  if (special.absent()) return specials.Bad("has no entry " + QuoteValue(name));
  const JsonField ids = special["ids"];
  UNMASK_RETURN_IF_ERROR(ids.ExpectArray());
  if (ids.size() != 1) {
    return ids.Unsupported("with " + std::to_string(ids.size()) + " ids", "exactly one id");
  }
  return ids[0].Int(0, INT32_MAX);
}

// TemplateProcessing.single = [SpecialToken]? Sequence(A) [SpecialToken]?.
Status ReadTemplate(const JsonField& f, Pipeline* pipeline) {
  const JsonField single = f["single"];
  UNMASK_RETURN_IF_ERROR(single.ExpectArray());
  constexpr std::string_view kShape = "[special]? A [special]? (one token before/after the text)";
  std::optional<size_t> text_index;
  std::vector<int64_t> before, after;
  for (size_t i = 0; i < single.size(); ++i) {
    const JsonField piece = single[i];
    UNMASK_RETURN_IF_ERROR(piece.ExpectObject());
    if (!piece["Sequence"].absent()) {
      UNMASK_RETURN_IF_ERROR(piece["Sequence"].ExpectObject());
      UNMASK_ASSIGN_OR_RETURN(const std::string id, piece["Sequence"]["id"].String());
      if (id != "A" || text_index) return piece.Unsupported("Sequence " + QuoteValue(id), kShape);
      text_index = i;
    } else if (!piece["SpecialToken"].absent()) {
      UNMASK_ASSIGN_OR_RETURN(const int64_t id, TemplateSpecialId(f, piece["SpecialToken"]));
      (text_index ? after : before).push_back(id);
    } else {
      return piece.Bad("must have a 'Sequence' or a 'SpecialToken' member");
    }
  }
  if (!text_index) return single.Unsupported("without Sequence A", kShape);
  if (before.size() > 1 || after.size() > 1) {
    return single.Unsupported(std::to_string(before.size()) + " tokens before and " +
                                  std::to_string(after.size()) + " after the text",
                              kShape);
  }
  if (!before.empty()) pipeline->post_first_id = before[0];
  if (!after.empty()) pipeline->post_last_id = after[0];
  return Status::Ok();
}

Status ReadPostProcessor(const JsonField& f, Pipeline* pipeline) {
  if (f.null_or_absent()) return Status::Ok();
  UNMASK_ASSIGN_OR_RETURN(const std::string type, TypeOf(f));
  if (type == "ByteLevel") return Status::Ok();
  if (type == "TemplateProcessing") return ReadTemplate(f, pipeline);
  if (type == "Sequence") {
    const JsonField list = f["processors"];
    UNMASK_RETURN_IF_ERROR(list.ExpectArray());
    bool have_template = false;
    for (size_t i = 0; i < list.size(); ++i) {
      UNMASK_ASSIGN_OR_RETURN(const std::string t, TypeOf(list[i]));
      if (t == "ByteLevel") continue;
      if (t != "TemplateProcessing" || have_template) {
        return list[i]["type"].Unsupported(QuoteValue(t), kPostProcessors);
      }
      have_template = true;
      UNMASK_RETURN_IF_ERROR(ReadTemplate(list[i], pipeline));
    }
    return Status::Ok();
  }
  return f["type"].Unsupported(QuoteValue(type), kPostProcessors);
}

}  // namespace

StatusOr<Pipeline> ReadPipeline(const JsonField& root) {
  Pipeline pipeline;
  UNMASK_RETURN_IF_ERROR(ReadNormalizer(root["normalizer"], &pipeline.normalizer));
  UNMASK_RETURN_IF_ERROR(ReadPreTokenizer(root["pre_tokenizer"], &pipeline));
  UNMASK_RETURN_IF_ERROR(ReadDecoder(root["decoder"]));
  UNMASK_RETURN_IF_ERROR(ReadPostProcessor(root["post_processor"], &pipeline));
  return pipeline;
}

std::string JoinPath(const std::string& dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return dir + std::string(name);
  return dir + "/" + std::string(name);
}

}  // namespace unmask::hf
