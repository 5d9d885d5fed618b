// base/message_text.h: user text inside one-line error messages, and where a parse failed.
//
// An error message that echoes what a user typed must stay one line, unambiguous and short,
// whatever the text holds (line breaks, terminal escape sequences, invalid UTF-8, 100 KB):
//
//   QuoteExcerpt("mesh{x=2}\nP(x)");  // "mesh{x=2}\nP(x)" with the quotes, the \n escaped
//   QuoteExcerpt(std::string(100000, 'a'), 50000);  // quotes around: ..., 60 a's, ...
//
// A parser that fails at a position attaches it to its status (AttachParseLocation), so that a
// caller who parsed a part of a larger text (the CLI parsing the PartitionSpec after a mesh) can
// report the position in the whole text instead of echoing the part's message:
//
//   absl::Status s = PartitionSpec::Parse(rest).status();
//   if (auto where = GetParseLocation(s)) offset_in_option = rest_start + where->offset;
//
// Free functions; no state, thread-safe.
#ifndef TESSERA_BASE_MESSAGE_TEXT_H_
#define TESSERA_BASE_MESSAGE_TEXT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tessera::base {

// How many bytes of a long text QuoteExcerpt keeps (texts up to kExcerptLimit bytes are whole).
inline constexpr size_t kExcerptBytes = 60;
inline constexpr size_t kExcerptLimit = 80;

// `text` made printable on one line: '\n', '\r', '\t' as \n, \r, \t; other control characters
// (C0, DEL, C1), bytes that are not valid UTF-8, and the invisible Unicode controls that reorder or
// break lines (U+200E, U+200F, U+2028, U+2029, U+202A..U+202E, U+2066..U+2069) as \xNN per byte;
// with `quote_safe`, also '\\' as \\ and '"' as \" (for text put between double quotes). Valid
// UTF-8 otherwise passes unchanged.
std::string EscapeText(std::string_view text, bool quote_safe = true);

// `text` escaped (EscapeText) between double quotes. A text longer than kExcerptLimit bytes keeps
// kExcerptBytes bytes around `position` (a byte offset, clamped to the text; never splitting a
// UTF-8 character), with "..." inside the quotes where it was cut.
std::string QuoteExcerpt(std::string_view text, size_t position = 0);

// Where a parser stopped: a byte offset into the text it was given and what it expected there.
struct ParseLocation {
  size_t offset = 0;
  std::string expected;
};
// Attaches `location` to `status` (a payload; no-op for OK).
void AttachParseLocation(absl::Status& status, const ParseLocation& location);
// The location attached to `status`, if any.
std::optional<ParseLocation> GetParseLocation(const absl::Status& status);

}  // namespace tessera::base

#endif  // TESSERA_BASE_MESSAGE_TEXT_H_
