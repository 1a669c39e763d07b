// unicode::NormalizeNfc with ICU's C API (unicode/unorm2.h; Debian package libicu-dev), on UTF-16
// copies of the text.
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <climits>
#include <string>
#include <vector>

#include "tokenizer/unicode_util.h"

namespace unmask::unicode {

std::string NormalizeNfc(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii || text.size() > INT32_MAX / 4) return std::string(text);

  UErrorCode error = U_ZERO_ERROR;
  const UNormalizer2* nfc = unorm2_getNFCInstance(&error);
  if (U_FAILURE(error)) return std::string(text);  // ICU's data is linked in: does not happen
  const auto size = static_cast<int32_t>(text.size());

  // UTF-8 -> UTF-16 (at most one UTF-16 unit per byte).
  std::vector<UChar> utf16(text.size());
  int32_t utf16_length = 0;
  u_strFromUTF8(utf16.data(), size, &utf16_length, text.data(), size, &error);
  if (U_FAILURE(error)) return std::string(text);
  if (unorm2_isNormalized(nfc, utf16.data(), utf16_length, &error) && U_SUCCESS(error)) {
    return std::string(text);
  }

  // NFC can lengthen text (composition exclusions decompose): preflight when the guess is short.
  error = U_ZERO_ERROR;
  std::vector<UChar> normalized(static_cast<size_t>(utf16_length) * 2 + 16);
  int32_t normalized_length = unorm2_normalize(nfc, utf16.data(), utf16_length, normalized.data(),
                                               static_cast<int32_t>(normalized.size()), &error);
  if (error == U_BUFFER_OVERFLOW_ERROR) {
    error = U_ZERO_ERROR;
    normalized.resize(static_cast<size_t>(normalized_length));
    normalized_length = unorm2_normalize(nfc, utf16.data(), utf16_length, normalized.data(),
                                         normalized_length, &error);
  }
  if (U_FAILURE(error)) return std::string(text);

  // UTF-16 -> UTF-8 (at most three bytes per UTF-16 unit).
  std::string out(static_cast<size_t>(normalized_length) * 3, '\0');
  int32_t out_length = 0;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &out_length, normalized.data(),
              normalized_length, &error);
  if (U_FAILURE(error)) return std::string(text);
  out.resize(static_cast<size_t>(out_length));
  return out;
}

}  // namespace unmask::unicode
