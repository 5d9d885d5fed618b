// base/string_view.h: views between std::string_view and absl::string_view.
//
// Debian 12's Abseil is built without aliasing absl::string_view to std::string_view, so the two
// are distinct types; the public API speaks std::string_view and Abseil's string functions take
// absl::string_view. These convert without copying (the result views the same bytes and must not
// outlive them):
//
//   absl::StrSplit(base::AsAbsl(text), ',');
//   std::string_view token = base::AsStd(absl::StripAsciiWhitespace(base::AsAbsl(text)));
//
// Free functions; no state, thread-safe. Header-only.
#ifndef TESSERA_BASE_STRING_VIEW_H_
#define TESSERA_BASE_STRING_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace tessera::base {

// `s` as an absl::string_view over the same bytes.
constexpr absl::string_view AsAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// `s` as a std::string_view over the same bytes.
constexpr std::string_view AsStd(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

}  // namespace tessera::base

#endif  // TESSERA_BASE_STRING_VIEW_H_
