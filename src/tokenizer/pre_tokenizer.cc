#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <utility>

#include "tokenizer/unicode_util.h"

namespace unmask {
namespace {

// llama.cpp's whitespace set (unicode_set_whitespace = the Unicode White_Space property):
// U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
// U+3000. Written as the body of a character class.
constexpr std::string_view kWhitespaceClass =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

// Pattern lists from llama.cpp src/llama-vocab.cpp (llm_tokenizer_bpe). `\s` is expanded by
// ExpandWhitespaceClasses before compiling.

// LLAMA_VOCAB_PRE_TYPE_GPT2 (llama.cpp runs it with a hand-written matcher,
// unicode_regex_split_custom_gpt2, which splits the same way).
constexpr std::string_view kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

// LLAMA_VOCAB_PRE_TYPE_LLAMA3 (custom matcher unicode_regex_split_custom_llama3).
constexpr std::string_view kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// LLAMA_VOCAB_PRE_TYPE_QWEN2: llama3 with single digits.
constexpr std::string_view kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// "[一-龥ࠀ-一가-퟿]+" (U+4E00-U+9FA5, U+0800-U+4E00, U+AC00-U+D7FF). llama.cpp matches it
// with std::wregex on text whose non-ASCII whitespace was replaced by U+000B, so whitespace inside
// the ranges (U+1680, U+2000..., U+3000) never matches: excluded by the lookahead.
constexpr std::string_view kCjkRun =
    "(?:(?![\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}])"
    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}])+";

// LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM. The letter class is the cased-letter list of the DeepSeek
// tokenizer.json, written as code points (U+1F7D, U+1FBE, U+1FD3, U+1FDB, U+2126, U+212A are the
// non-NFC originals). In the punctuation class U+3000 (whitespace) is left out, as above.
constexpr std::string_view kDeepseekLlmLetters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-"
    "\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}"
    "\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}"
    "\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}"
    "\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-"
    "\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}"
    "\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
    "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-"
    "\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"
    "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}"
    "\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-"
    "\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-"
    "\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}"
    "-"
    "\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
    "\\x{1E900}-\\x{1E943}]+";
constexpr std::string_view kDeepseekLlmPunct =
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3001}-\\x{3002}]+";

struct NamedSpec {
  std::array<std::string_view, 6> names;  // aliases; unused slots empty
  std::array<std::string_view, 6> patterns;
  bool clean_spaces;
  bool ignore_merges;
  bool add_bos;
};

// Names and flags from llama_vocab::impl::load; patterns from llm_tokenizer_bpe.
const NamedSpec kSpecs[] = {
    {{"default"},
     {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"},
     true,
     false,
     false},
    {{"gpt-2", "phi-2", "mpt", "olmo"}, {kGpt2}, true, false, false},
    {{"llama3", "llama-v3", "llama-bpe", "falcon3"}, {kLlama3}, true, true, true},
    {{"dbrx", "smaug-bpe"}, {kLlama3}, true, false, false},
    {{"qwen2", "deepseek-r1-qwen"}, {kQwen2}, false, false, false},
    {{"stablelm2"}, {kQwen2}, true, false, false},
    {{"deepseek-coder"},
     {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjkRun, "\\p{N}"},
     false,
     false,
     false},
    {{"deepseek-llm"},
     {"[\\r\\n]", kDeepseekLlmLetters, kDeepseekLlmPunct, "\\s+$", kCjkRun, "\\p{N}+"},
     false,
     false,
     false},
    {{"starcoder", "refact"}, {"\\p{N}", kGpt2}, true, false, false},
    {{"smollm"}, {"\\p{N}", kGpt2}, false, false, false},
};

}  // namespace

StatusOr<PreTokenizerSpec> FindPreTokenizerSpec(std::string_view pre) {
  const std::string_view name = pre.empty() ? std::string_view("default") : pre;
  for (const NamedSpec& spec : kSpecs) {
    for (std::string_view alias : spec.names) {
      if (alias.empty() || alias != name) continue;
      PreTokenizerSpec out;
      out.name = std::string(name);
      for (std::string_view p : spec.patterns) {
        if (!p.empty()) out.patterns.emplace_back(p);
      }
      out.clean_spaces = spec.clean_spaces;
      out.ignore_merges = spec.ignore_merges;
      out.add_bos = spec.add_bos;
      return out;
    }
  }
  return UnimplementedError("unsupported tokenizer.ggml.pre '" + std::string(pre) +
                            "' (known: default, gpt-2, phi-2, mpt, olmo, llama3, llama-v3, "
                            "llama-bpe, falcon3, dbrx, smaug-bpe, qwen2, deepseek-r1-qwen, "
                            "stablelm2, deepseek-coder, deepseek-llm, starcoder, refact, smollm)");
}

std::string ExpandWhitespaceClasses(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() * 2);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        if (in_class) {
          out.append(kWhitespaceClass);
        } else {
          out.append("[").append(kWhitespaceClass).append("]");
        }
      } else if (e == 'S' && !in_class) {
        out.append("[^").append(kWhitespaceClass).append("]");
      } else {
        out.push_back('\\');
        out.push_back(e);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

StatusOr<PreTokenizer> PreTokenizer::Compile(const std::vector<std::string>& patterns) {
  PreTokenizer pre;
  for (const std::string& pattern : patterns) {
    const std::string expanded = ExpandWhitespaceClasses(pattern);
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error_code,
                                     &error_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      return InvalidArgumentError("pre-tokenizer pattern '" + pattern +
                                  "' does not compile: " + reinterpret_cast<const char*>(message) +
                                  " at offset " + std::to_string(error_offset));
    }
    // JIT is an optimisation only; matching falls back to the interpreter when it is unavailable.
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    pre.codes_.push_back(code);
  }
  return pre;
}

PreTokenizer::PreTokenizer(PreTokenizer&& other) noexcept : codes_(std::move(other.codes_)) {
  other.codes_.clear();
}

PreTokenizer& PreTokenizer::operator=(PreTokenizer&& other) noexcept {
  if (this != &other) {
    for (pcre2_code* code : codes_) pcre2_code_free(code);
    codes_ = std::move(other.codes_);
    other.codes_.clear();
  }
  return *this;
}

PreTokenizer::~PreTokenizer() {
  for (pcre2_code* code : codes_) pcre2_code_free(code);
}

std::vector<std::string_view> PreTokenizer::Split(std::string_view text) const {
  // Fragments as (offset, length) into `text`.
  std::vector<std::pair<size_t, size_t>> fragments;
  if (!text.empty()) fragments.emplace_back(0, text.size());
  std::vector<std::pair<size_t, size_t>> next;
  for (pcre2_code* code : codes_) {
    pcre2_match_data* match = pcre2_match_data_create(1, nullptr);
    if (match == nullptr) break;  // out of memory: keep the fragments as they are
    next.clear();
    next.reserve(fragments.size() * 2);
    for (const auto& [frag_offset, frag_length] : fragments) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + frag_offset);
      size_t start = 0;     // where the next search begins
      size_t last_end = 0;  // end of the last match (start of the pending unmatched run)
      while (start <= frag_length) {
        const int rc =
            pcre2_match(code, subject, frag_length, start, PCRE2_NO_UTF_CHECK, match, nullptr);
        if (rc < 0) break;  // no match (or a matching error): the rest is one unmatched run
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
        const size_t match_begin = ovector[0];
        const size_t match_end = ovector[1];
        if (match_begin > last_end)
          next.emplace_back(frag_offset + last_end, match_begin - last_end);
        if (match_end > match_begin) {
          next.emplace_back(frag_offset + match_begin, match_end - match_begin);
          last_end = match_end;
          start = match_end;
        } else {
          // Empty match: no token; search again one code point further.
          last_end = match_begin;
          if (match_begin >= frag_length) break;
          start = match_begin +
                  unicode::SequenceLength(static_cast<uint8_t>(text[frag_offset + match_begin]));
        }
      }
      if (last_end < frag_length) next.emplace_back(frag_offset + last_end, frag_length - last_end);
    }
    pcre2_match_data_free(match);
    fragments.swap(next);
  }
  std::vector<std::string_view> words;
  words.reserve(fragments.size());
  for (const auto& [offset, length] : fragments) words.push_back(text.substr(offset, length));
  return words;
}

}  // namespace unmask
