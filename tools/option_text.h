#ifndef TESSERA_TOOLS_OPTION_TEXT_H_
#define TESSERA_TOOLS_OPTION_TEXT_H_

// The text of the `tessera` tool's options: the parsers of --devices, --shape and the sharding
// options, and the one-line error messages they and the tool print. Pure text over sharding/ and
// Abseil (no client, no devices), so that tests/fuzz can fuzz every parser on its own. Not part of
// the library's API. Stateless; every function may be called from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sharding/sharding_text.h"

namespace tessera::tools {

// Debian's Abseil has its own string_view: these convert either kind (pass views only).
inline std::string Str(std::string_view s) { return std::string(s); }
inline std::string Str(absl::string_view s) { return std::string(s); }

// `message` made one printable line: control characters, invalid UTF-8 and invisible Unicode
// controls escaped (base::EscapeText without quote escaping), cut after 4096 bytes.
std::string OneLine(std::string_view message);

// "invalid <option> "<text>": <what> at position <position>": the option's text quoted once
// (base::QuoteExcerpt: escaped, cut to about 60 characters around `position` when long), and
// `position` a byte offset into `text` as the user typed it.
std::string OptionError(std::string_view option, std::string_view text, size_t position,
                        std::string_view what);

// `s` without leading and trailing blanks (spaces and tabs).
std::string_view TrimBlanks(std::string_view s);

// ---- Option parsers (INVALID_ARGUMENT naming the option, the text and the position) ----
//
// Each message quotes the option's text once (escaped and shortened, see OptionError) and gives
// positions as byte offsets into that text, also for a failure inside one part of it (the
// PartitionSpec after a mesh).

// One entry of --devices: "cpu:8" -> {"cpu", 8}.
struct DeviceRequest {
  std::string platform;  // "cpu" or "vulkan"
  int count = 0;
};
// "cpu:8", "vulkan:2,cpu:2": platforms in the order the devices are used, each at most once.
absl::StatusOr<std::vector<DeviceRequest>> ParseDevices(std::string_view text);

// "8192x8192", "8x8x2", "1024", "" or "scalar" (rank 0). Dimensions >= 0. (A vector, not a
// Shape: GCC 12 warns on StatusOr<Shape> with -O3.)
absl::StatusOr<std::vector<int64_t>> ParseShape(std::string_view text);

// A sharding option ("--from"): either notation, parsed by the library's one parser
// (sharding::ParseShardingText), its messages naming the option.
using sharding::ShardingText;
absl::StatusOr<ShardingText> ParseSharding(std::string_view option, std::string_view text);

}  // namespace tessera::tools

#endif  // TESSERA_TOOLS_OPTION_TEXT_H_
