#include "guard/policy.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "base/string_view.h"
#include "guard/level.h"

namespace tessera::guard {
namespace {

// A piece of the policy text and where it starts in it.
struct Token {
  absl::string_view text;
  size_t position;
};

// Strips blanks from both ends of `token`, keeping its position right.
Token Strip(Token token) {
  const absl::string_view left = absl::StripLeadingAsciiWhitespace(token.text);
  token.position += token.text.size() - left.size();
  token.text = absl::StripTrailingAsciiWhitespace(left);
  return token;
}

absl::Status Error(std::string_view text, absl::string_view what, const Token& token) {
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid transfer guard policy ", base::QuoteExcerpt(text, token.position), ": ", what, " ",
      base::QuoteExcerpt(base::AsStd(token.text)), " at position ", token.position));
}

absl::StatusOr<Level> ParseLevelToken(std::string_view text, const Token& token) {
  absl::StatusOr<Level> level = ParseLevel(base::AsStd(token.text));
  if (!level.ok()) {
    return Error(text,
                 "unknown level (expected allow, log, disallow, log_explicit or "
                 "disallow_explicit)",
                 token);
  }
  return *level;
}

enum class Key { kAll, kHostToDevice, kDeviceToDevice, kDeviceToHost, kAllowBelowBytes, kUnknown };

Key ParseKey(absl::string_view key) {
  struct Name {
    absl::string_view name;
    Key key;
  };
  static constexpr Name kNames[] = {
      {"all", Key::kAll},
      {"h2d", Key::kHostToDevice},
      {"host_to_device", Key::kHostToDevice},
      {"host-to-device", Key::kHostToDevice},
      {"d2d", Key::kDeviceToDevice},
      {"device_to_device", Key::kDeviceToDevice},
      {"device-to-device", Key::kDeviceToDevice},
      {"d2h", Key::kDeviceToHost},
      {"device_to_host", Key::kDeviceToHost},
      {"device-to-host", Key::kDeviceToHost},
      {"allow_below_bytes", Key::kAllowBelowBytes},
      {"below", Key::kAllowBelowBytes},
  };
  for (const Name& name : kNames) {
    if (absl::EqualsIgnoreCase(key, name.name)) return name.key;
  }
  return Key::kUnknown;
}

absl::Status ParseEntry(std::string_view text, Token entry, Policy& policy) {
  const size_t eq = entry.text.find('=');
  if (eq == absl::string_view::npos) {
    // A bare level applies to every direction.
    absl::StatusOr<Level> level = ParseLevelToken(text, entry);
    if (!level.ok()) {
      if (ParseKey(entry.text) != Key::kUnknown) {
        return Error(text, "missing '=<value>' after key", entry);
      }
      return level.status();
    }
    policy.host_to_device = policy.device_to_device = policy.device_to_host = *level;
    return absl::OkStatus();
  }
  const Token key = Strip({entry.text.substr(0, eq), entry.position});
  const Token value = Strip({entry.text.substr(eq + 1), entry.position + eq + 1});
  const Key parsed_key = ParseKey(key.text);
  if (parsed_key == Key::kUnknown) {
    return Error(text,
                 "unknown key (expected h2d, d2d, d2h, host_to_device, "
                 "device_to_device, "
                 "device_to_host, all, allow_below_bytes or below)",
                 key);
  }
  if (value.text.empty()) return Error(text, "missing value after key", key);
  if (parsed_key == Key::kAllowBelowBytes) {
    int64_t bytes = 0;
    const bool digits_only = !value.text.empty() &&
                             value.text.find_first_not_of("0123456789") == absl::string_view::npos;
    if (!digits_only || !absl::SimpleAtoi(value.text, &bytes) || bytes < 0) {
      return Error(text, "byte count is not a non-negative decimal integer", value);
    }
    policy.allow_below_bytes = bytes;
    return absl::OkStatus();
  }
  absl::StatusOr<Level> level = ParseLevelToken(text, value);
  if (!level.ok()) return level.status();
  switch (parsed_key) {
    case Key::kAll:
      policy.host_to_device = policy.device_to_device = policy.device_to_host = *level;
      break;
    case Key::kHostToDevice:
      policy.host_to_device = *level;
      break;
    case Key::kDeviceToDevice:
      policy.device_to_device = *level;
      break;
    case Key::kDeviceToHost:
      policy.device_to_host = *level;
      break;
    case Key::kAllowBelowBytes:
    case Key::kUnknown:
      break;
  }
  return absl::OkStatus();
}

}  // namespace

Policy Policy::Uniform(Level level) {
  return Policy{.host_to_device = level, .device_to_device = level, .device_to_host = level};
}

Level Policy::level(Direction direction) const {
  switch (direction) {
    case Direction::kHostToDevice:
      return host_to_device;
    case Direction::kDeviceToDevice:
      return device_to_device;
    case Direction::kDeviceToHost:
      return device_to_host;
  }
  return Level::kAllow;
}

void Policy::set_level(Direction direction, Level level) {
  switch (direction) {
    case Direction::kHostToDevice:
      host_to_device = level;
      break;
    case Direction::kDeviceToDevice:
      device_to_device = level;
      break;
    case Direction::kDeviceToHost:
      device_to_host = level;
      break;
  }
}

absl::StatusOr<Policy> Policy::Parse(std::string_view text) {
  Policy policy;
  const absl::string_view all = base::AsAbsl(text);
  if (absl::StripAsciiWhitespace(all).empty()) return policy;
  size_t start = 0;
  while (true) {
    const size_t comma = all.find(',', start);
    const size_t end = comma == absl::string_view::npos ? all.size() : comma;
    const Token entry = Strip({all.substr(start, end - start), start});
    if (entry.text.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid transfer guard policy ",
                                                     base::QuoteExcerpt(text, start),
                                                     ": empty entry at position ", start));
    }
    if (absl::Status status = ParseEntry(text, entry, policy); !status.ok()) return status;
    if (comma == absl::string_view::npos) break;
    start = comma + 1;
  }
  return policy;
}

std::string Policy::ToString() const {
  std::string out;
  if (host_to_device == device_to_device && device_to_device == device_to_host) {
    out = std::string(LevelName(host_to_device));
  } else {
    for (Direction direction : kAllDirections) {
      if (!out.empty()) out += ',';
      out += DirectionShortName(direction);
      out += '=';
      out += LevelName(level(direction));
    }
  }
  if (allow_below_bytes > 0) absl::StrAppend(&out, ",allow_below_bytes=", allow_below_bytes);
  return out;
}

absl::StatusOr<Policy> Policy::FromEnvironment() {
  const char* value = std::getenv(kTransferGuardEnvVar);
  if (value == nullptr) return Policy{};
  absl::StatusOr<Policy> policy = Parse(value);
  if (!policy.ok()) {
    return absl::Status(policy.status().code(),
                        absl::StrCat(kTransferGuardEnvVar, ": ", policy.status().message()));
  }
  return policy;
}

}  // namespace tessera::guard
