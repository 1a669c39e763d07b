#include "tokenizer/unicode_util.h"

#include <array>

namespace unmask::unicode {

uint32_t DecodeOne(std::string_view text, size_t* pos) {
  const size_t i = *pos;
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const uint8_t c0 = byte(0);
  if (c0 < 0x80) {
    *pos = i + 1;
    return c0;
  }
  size_t len = 0;
  uint32_t cp = 0;
  uint32_t min_cp = 0;
  if ((c0 & 0xE0) == 0xC0) {
    len = 2;
    cp = c0 & 0x1F;
    min_cp = 0x80;
  } else if ((c0 & 0xF0) == 0xE0) {
    len = 3;
    cp = c0 & 0x0F;
    min_cp = 0x800;
  } else if ((c0 & 0xF8) == 0xF0) {
    len = 4;
    cp = c0 & 0x07;
    min_cp = 0x10000;
  } else {
    *pos = i + 1;
    return kReplacementChar;
  }
  if (i + len > text.size()) {
    *pos = i + 1;
    return kReplacementChar;
  }
  for (size_t k = 1; k < len; ++k) {
    if ((byte(k) & 0xC0) != 0x80) {
      *pos = i + 1;
      return kReplacementChar;
    }
    cp = (cp << 6) | (byte(k) & 0x3F);
  }
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    *pos = i + 1;
    return kReplacementChar;
  }
  *pos = i + len;
  return cp;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const uint32_t cp = DecodeOne(text, &pos);
    if (cp == kReplacementChar && !(pos - start == 3 && text.substr(start, 3) == "\xEF\xBF\xBD")) {
      AppendUtf8(kReplacementChar, &out);
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  return out;
}

namespace {

// Byte b -> code point of its printable stand-in (GPT-2 bytes_to_unicode).
struct ByteTables {
  std::array<std::string, 256> utf8;
  std::array<int16_t, 256 + 68> byte_of;  // code point -> byte, -1 when not a stand-in
  ByteTables() {
    byte_of.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cp = printable ? b : next++;
      byte_of[cp] = static_cast<int16_t>(b);
      AppendUtf8(cp, &utf8[b]);
    }
  }
};

const ByteTables& Tables() {
  static const ByteTables tables;  // immutable after construction (thread-safe init)
  return tables;
}

}  // namespace

const std::string& ByteToUnicode(uint8_t b) { return Tables().utf8[b]; }

int UnicodeToByte(uint32_t cp) {
  // The 68 non-printable bytes map to U+0100..U+0143, so every stand-in is below 256 + 68.
  const auto& byte_of = Tables().byte_of;
  return cp < byte_of.size() ? byte_of[cp] : -1;
}

bool IsWhitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

size_t IncompleteUtf8Tail(std::string_view text) {
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead byte
    const size_t need = (c & 0xE0) == 0xC0   ? 2
                        : (c & 0xF0) == 0xE0 ? 3
                        : (c & 0xF8) == 0xF0 ? 4
                                             : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace unmask::unicode
