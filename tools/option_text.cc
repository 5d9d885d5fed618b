// The option text of the `tessera` tool (tools/option_text.h).

#include "tools/option_text.h"

#include <charconv>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"

namespace tessera::tools {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Where `part` (a view into `whole`) starts in `whole`.
size_t OffsetIn(std::string_view whole, std::string_view part) {
  return static_cast<size_t>(part.data() - whole.data());
}

// Longest message Fail prints; the rest is cut (a last defence against huge lines).
constexpr size_t kMaxMessageBytes = 4096;

// A non-negative decimal, at most 18 digits.
bool ParseCount(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::string OptionError(std::string_view option, std::string_view text, size_t position,
                        std::string_view what) {
  return absl::StrCat("invalid ", Str(option), " ", base::QuoteExcerpt(text, position), ": ",
                      Str(what), " at position ", position);
}

std::string OneLine(std::string_view message) {
  std::string line = base::EscapeText(message, /*quote_safe=*/false);
  if (line.size() > kMaxMessageBytes) {
    const size_t cut = line.size() - kMaxMessageBytes;
    line.resize(kMaxMessageBytes);
    absl::StrAppend(&line, "... (", cut, " more bytes)");
  }
  return line;
}

std::string_view TrimBlanks(std::string_view s) { return Trim(s); }

absl::StatusOr<std::vector<DeviceRequest>> ParseDevices(std::string_view text) {
  std::vector<DeviceRequest> out;
  size_t pos = 0;
  auto error = [&](size_t at, std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(OptionError("--devices", text, at, what),
                                                   " (expected e.g. cpu:8 or vulkan:2,cpu:2)"));
  };
  if (Trim(text).empty()) return error(0, "empty device list");
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view entry = text.substr(pos, end - pos);
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos) return error(pos, "missing ':' after the platform");
    std::string_view platform = Trim(entry.substr(0, colon));
    std::string_view count_text = Trim(entry.substr(colon + 1));
    if (platform != "cpu" && platform != "vulkan") {
      return error(OffsetIn(text, platform), "unknown platform (expected cpu or vulkan)");
    }
    int64_t count = 0;
    if (!ParseCount(count_text, &count) || count < 1 || count > 4096) {
      return error(OffsetIn(text, count_text), "the device count is not an integer in 1..4096");
    }
    for (const DeviceRequest& r : out) {
      if (r.platform == platform) {
        return error(OffsetIn(text, platform),
                     absl::StrCat("platform ", r.platform, " given twice"));
      }
    }
    out.push_back({std::string(platform), static_cast<int>(count)});
    pos = end + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParseShape(std::string_view text) {
  std::string_view t = Trim(text);
  if (t.empty() || t == "scalar" || t == "[]") {
    return std::vector<int64_t>();
  }
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos <= t.size()) {
    size_t end = t.find_first_of("x,", pos);
    if (end == std::string_view::npos) end = t.size();
    int64_t dim = 0;
    std::string_view d = t.substr(pos, end - pos);
    if (!ParseCount(d, &dim)) {
      return absl::InvalidArgumentError(absl::StrCat(
          OptionError("--shape", text, OffsetIn(text, d),
                      absl::StrCat("dimension ", dims.size(),
                                   " is not a non-negative integer of at most 18 digits")),
          " (expected e.g. 8192x8192)"));
    }
    dims.push_back(dim);
    pos = end + 1;
  }
  if (dims.size() > 16) {
    return absl::InvalidArgumentError(absl::StrCat("invalid --shape ", base::QuoteExcerpt(text),
                                                   ": rank ", dims.size(), " is above 16"));
  }
  return dims;
}

absl::StatusOr<ShardingText> ParseSharding(std::string_view option, std::string_view text) {
  return sharding::ParseShardingText(text, option);
}

}  // namespace tessera::tools
