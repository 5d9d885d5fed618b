// sharding/parse_util.h: internal cursor over text for the sharding parsers. Not part of the public
// API.
#ifndef TESSERA_SHARDING_PARSE_UTIL_H_
#define TESSERA_SHARDING_PARSE_UTIL_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tessera::sharding::internal {

// Cursor over `text` (borrowed; must outlive the cursor). Every Consume* skips leading white space
// and leaves the position unchanged on failure.
class TextCursor {
 public:
  TextCursor(std::string_view what, std::string_view text) : what_(what), text_(text) {}

  bool Consume(std::string_view token);
  // A decimal of at most 18 digits; a leading '-' only if `allow_negative`.
  bool ConsumeInteger(int64_t* out, bool allow_negative = false);
  // [A-Za-z_][A-Za-z0-9_]*
  bool ConsumeIdentifier(std::string_view* out);
  bool AtEnd();
  // INVALID_ARGUMENT "Cannot parse <what> "<text>": expected <x> at offset N", the text quoted
  // by base::QuoteExcerpt (escaped, shortened around N) and the location attached
  // (base::GetParseLocation).
  absl::Status Error(std::string_view expected) const;

 private:
  void SkipSpaces();
  std::string_view what_;
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace tessera::sharding::internal

#endif  // TESSERA_SHARDING_PARSE_UTIL_H_
