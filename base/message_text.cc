#include "base/message_text.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace tessera::base {
namespace {

constexpr char kParseLocationUrl[] = "type.tessera/base.ParseLocation";

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length (2..4) of the valid UTF-8 sequence of a non-ASCII character at text[i], and its code
// point; 0 when the bytes there are not one (overlong, surrogate, above U+10FFFF, cut short).
int DecodeUtf8(std::string_view text, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  int length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size() || byte(1) < low || byte(1) > high) return 0;
  uint32_t cp = lead & (0x7F >> length);
  for (int k = 1; k < length; ++k) {
    if (!IsContinuation(byte(k))) return 0;
    cp = (cp << 6) | (byte(k) & 0x3F);
  }
  *code_point = cp;
  return length;
}

// Unicode controls that a terminal shows as nothing or that reorder or break the line.
bool IsInvisibleControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F || cp == 0x2028 ||
         cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void AppendHex(std::string& out, std::string_view bytes) {
  for (unsigned char c : bytes) absl::StrAppendFormat(&out, "\\x%02X", c);
}

// Moves `pos` back (or forward) off UTF-8 continuation bytes, at most 3 bytes.
size_t AlignBack(std::string_view text, size_t pos) {
  for (int k = 0; k < 3 && pos > 0 && pos < text.size() && IsContinuation(text[pos]); ++k) --pos;
  return pos;
}
size_t AlignForward(std::string_view text, size_t pos) {
  for (int k = 0; k < 3 && pos < text.size() && IsContinuation(text[pos]); ++k) ++pos;
  return pos;
}

}  // namespace

std::string EscapeText(std::string_view text, bool quote_safe) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      uint32_t cp = 0;
      const int length = DecodeUtf8(text, i, &cp);
      if (length == 0) {
        AppendHex(out, text.substr(i, 1));
        ++i;
        continue;
      }
      if (IsInvisibleControl(cp)) {
        AppendHex(out, text.substr(i, length));
      } else {
        out.append(text.substr(i, length));
      }
      i += length;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
      case '"':
        if (quote_safe) out += '\\';
        out += static_cast<char>(c);
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          AppendHex(out, text.substr(i, 1));
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out;
}

std::string QuoteExcerpt(std::string_view text, size_t position) {
  if (text.size() <= kExcerptLimit) return absl::StrCat("\"", EscapeText(text), "\"");
  position = std::min(position, text.size());
  size_t begin = position > kExcerptBytes / 2 ? position - kExcerptBytes / 2 : 0;
  begin = std::min(begin, text.size() - kExcerptBytes);
  size_t end = begin + kExcerptBytes;
  begin = AlignForward(text, begin);
  end = AlignBack(text, end);
  return absl::StrCat("\"", begin > 0 ? "..." : "", EscapeText(text.substr(begin, end - begin)),
                      end < text.size() ? "..." : "", "\"");
}

void AttachParseLocation(absl::Status& status, const ParseLocation& location) {
  if (status.ok()) return;
  status.SetPayload(kParseLocationUrl,
                    absl::Cord(absl::StrCat(location.offset, ":", location.expected)));
}

std::optional<ParseLocation> GetParseLocation(const absl::Status& status) {
  const auto payload = status.GetPayload(kParseLocationUrl);
  if (!payload.has_value()) return std::nullopt;
  const std::string text(*payload);
  const size_t colon = text.find(':');
  ParseLocation location;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(text.data(), colon), &location.offset)) {
    return std::nullopt;
  }
  location.expected = text.substr(colon + 1);
  return location;
}

}  // namespace tessera::base
