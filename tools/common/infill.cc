#include "common/infill.h"

#include <array>
#include <string_view>

namespace unmask::tools {

FimTokens FindFimTokens(const Tokenizer& tok) {
  // {prefix, suffix, middle} spellings, in llama.cpp's order of preference.
  // DeepSeek Coder's use full-width bars and U+2581.
  static constexpr std::array<std::array<std::string_view, 3>, 6> kSpellings = {{
      {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
      {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
      {"<fim-prefix>", "<fim-suffix>", "<fim-middle>"},
      {"<PRE>", "<SUF>", "<MID>"},
      {"<\xef\xbd\x9c"
       "fim\xe2\x96\x81"
       "begin\xef\xbd\x9c>",
       "<\xef\xbd\x9c"
       "fim\xe2\x96\x81"
       "hole\xef\xbd\x9c>",
       "<\xef\xbd\x9c"
       "fim\xe2\x96\x81"
       "end\xef\xbd\x9c>"},
      {"<|code_prefix|>", "<|code_suffix|>", "<|code_middle|>"},
  }};
  for (const auto& s : kSpellings) {
    FimTokens f{tok.FindToken(s[0]), tok.FindToken(s[1]), tok.FindToken(s[2])};
    if (f.ok()) return f;
  }
  return FimTokens{};
}

std::vector<int32_t> FimPrompt(const FimTokens& fim, std::span<const int32_t> prefix,
                               std::span<const int32_t> suffix, int32_t bos) {
  std::vector<int32_t> out;
  out.reserve(prefix.size() + suffix.size() + 4);
  if (bos >= 0) out.push_back(bos);
  out.push_back(fim.prefix);
  out.insert(out.end(), prefix.begin(), prefix.end());
  out.push_back(fim.suffix);
  out.insert(out.end(), suffix.begin(), suffix.end());
  out.push_back(fim.middle);
  return out;
}

}  // namespace unmask::tools
