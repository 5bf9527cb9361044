#include "runtime/internal/names.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "runtime/internal/nfc_table.h"

namespace wrp {
namespace {

// The length of the well-formed UTF-8 sequence at s[i] (Unicode's table 3-7) and its code point, or 0.
size_t Utf8Sequence(const std::string& s, size_t i, uint32_t* code_point) {
  const uint8_t c = static_cast<uint8_t>(s[i]);
  size_t length = 0;
  uint32_t code = 0;
  uint8_t low = 0x80, high = 0xbf;  // the range of the second byte
  if (c < 0x80) {
    *code_point = c;
    return 1;
  } else if (c >= 0xc2 && c <= 0xdf) {
    code = c & 0x1f, length = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    code = c & 0x0f, length = 3;
    if (c == 0xe0) low = 0xa0;   // overlong
    if (c == 0xed) high = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    code = c & 0x07, length = 4;
    if (c == 0xf0) low = 0x90;   // overlong
    if (c == 0xf4) high = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (length > s.size() - i) return 0;
  for (size_t k = 1; k < length; ++k) {
    const uint8_t b = static_cast<uint8_t>(s[i + k]);
    if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xbf)) return 0;
    code = code << 6 | (b & 0x3f);
  }
  *code_point = code;
  return length;
}

bool IsControl(uint32_t code_point) {
  return code_point < 0x20 || (code_point >= 0x7f && code_point <= 0x9f);
}

// (canonical combining class, NFC_Quick_Check) of `code_point`: {0, 0} for a YES starter.
nfc::Range NfcValues(uint32_t code_point) {
  const auto after = std::upper_bound(std::begin(nfc::kRanges), std::end(nfc::kRanges), code_point,
                                      [](uint32_t cp, const nfc::Range& r) { return cp < r.first; });
  if (after != std::begin(nfc::kRanges) && code_point <= std::prev(after)->last) return *std::prev(after);
  return nfc::Range{code_point, code_point, 0, 0};
}

}  // namespace

std::string NameProblem(const std::string& name) {
  // wrpkg decodes the whole name before it looks at its characters: invalid UTF-8 is named first.
  bool control = false, backslash = false, not_nfc = false;
  uint8_t last = 0;
  for (size_t i = 0; i < name.size();) {
    uint32_t code_point = 0;
    const size_t length = Utf8Sequence(name, i, &code_point);
    if (length == 0) return "is not valid UTF-8";
    control = control || IsControl(code_point);
    backslash = backslash || code_point == '\\';
    const nfc::Range values = NfcValues(code_point);
    if (values.quick_check != 0 || (values.combining_class != 0 && last > values.combining_class)) {
      not_nfc = true;
    }
    last = values.combining_class;
    i += length;
  }
  if (control) return "holds a control character";
  if (backslash) return "holds a backslash";
  if (not_nfc) return "is not in Unicode NFC (precomposed, marks in canonical order)";
  return "";
}

std::string Shown(const std::string& name) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < name.size();) {
    uint32_t code_point = 0;
    size_t length = Utf8Sequence(name, i, &code_point);
    if (length != 0 && !IsControl(code_point) && code_point != '\\') {
      out.append(name, i, length);
    } else {
      length = std::max<size_t>(length, 1);
      for (size_t k = 0; k < length; ++k) {
        const uint8_t b = static_cast<uint8_t>(name[i + k]);
        out += "\\x";
        out += kHex[b >> 4];
        out += kHex[b & 15];
      }
    }
    i += length;
  }
  return out;
}

}  // namespace wrp
