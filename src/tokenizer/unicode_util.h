// UTF-8 and GPT-2 byte-level helpers shared by the tokenizers (and by streaming text output).
#ifndef UNMASK_TOKENIZER_UNICODE_UTIL_H_
#define UNMASK_TOKENIZER_UNICODE_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace unmask::unicode {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence announced by lead byte `c`, from its high nibble alone
// (llama.cpp unicode_len_utf8): 0x00-0xBF -> 1, 0xC0-0xDF -> 2, 0xE0-0xEF -> 3, 0xF0-0xFF -> 4.
// Continuation bytes count as 1. Callers clamp to the bytes left.
inline size_t SequenceLength(uint8_t c) {
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[c >> 4];
}

// Decodes one code point at text[*pos] and advances *pos. A byte that does not start a valid
// sequence (bad lead or continuation byte, truncation, overlong form, surrogate, > U+10FFFF) yields
// U+FFFD and advances by one byte, like llama.cpp unicode_cpts_from_utf8 (which additionally
// accepts overlong forms and surrogates; PCRE2 rejects those, so they become U+FFFD here).
uint32_t DecodeOne(std::string_view text, size_t* pos);

// Appends the UTF-8 encoding of `cp` (must be <= 0x10FFFF and not a surrogate).
void AppendUtf8(uint32_t cp, std::string* out);

// `text` with every invalid byte replaced by U+FFFD (EF BF BD); valid input is returned unchanged.
std::string Sanitize(std::string_view text);

// GPT-2 bytes_to_unicode (openai/gpt-2 encoder.py): the UTF-8 text of the printable stand-in for
// byte `b` (printable Latin-1 bytes map to themselves; the rest to U+0100 + n in byte order).
const std::string& ByteToUnicode(uint8_t b);
// Inverse of ByteToUnicode on code points: the byte, or -1 when `cp` is not a stand-in.
int UnicodeToByte(uint32_t cp);

// The Unicode White_Space property: U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (pre_tokenizer.cc's `\s`, Rust's
// char::is_whitespace and regex `\s`).
bool IsWhitespace(uint32_t cp);

// `text` (valid UTF-8: see Sanitize) in Unicode Normalization Form C, computed by ICU's unorm2
// with the Unicode version of the system's ICU (Debian 12: ICU 72, Unicode 15). ASCII and text
// that is already NFC come back unchanged. Thread-safe.
std::string NormalizeNfc(std::string_view text);

// Bytes at the end of `text` that form an incomplete UTF-8 sequence (0-3): what a streaming writer
// holds back until the next token completes the character.
size_t IncompleteUtf8Tail(std::string_view text);

}  // namespace unmask::unicode

#endif  // UNMASK_TOKENIZER_UNICODE_UTIL_H_
