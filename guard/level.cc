#include "guard/level.h"

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/string_view.h"

namespace tessera::guard {

Action Decide(Level level, bool is_explicit) {
  switch (level) {
    case Level::kAllow:
      return Action::kAllow;
    case Level::kLog:
      return is_explicit ? Action::kAllow : Action::kLog;
    case Level::kDisallow:
      return is_explicit ? Action::kAllow : Action::kDisallow;
    case Level::kLogExplicit:
      return Action::kLog;
    case Level::kDisallowExplicit:
      return Action::kDisallow;
  }
  return Action::kAllow;
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kAllow:
      return "allow";
    case Level::kLog:
      return "log";
    case Level::kDisallow:
      return "disallow";
    case Level::kLogExplicit:
      return "log_explicit";
    case Level::kDisallowExplicit:
      return "disallow_explicit";
  }
  return "invalid";
}

absl::StatusOr<Level> ParseLevel(std::string_view text) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(base::AsAbsl(text));
  for (Level level : kAllLevels) {
    const std::string_view name = LevelName(level);
    if (absl::EqualsIgnoreCase(stripped, base::AsAbsl(name))) {
      return level;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown transfer guard level '", stripped,
                   "' (expected one of allow, log, disallow, log_explicit, "
                   "disallow_explicit)"));
}

std::string_view DirectionName(Direction direction) {
  switch (direction) {
    case Direction::kHostToDevice:
      return "host-to-device";
    case Direction::kDeviceToDevice:
      return "device-to-device";
    case Direction::kDeviceToHost:
      return "device-to-host";
  }
  return "invalid";
}

std::string_view DirectionShortName(Direction direction) {
  switch (direction) {
    case Direction::kHostToDevice:
      return "h2d";
    case Direction::kDeviceToDevice:
      return "d2d";
    case Direction::kDeviceToHost:
      return "d2h";
  }
  return "invalid";
}

std::string_view ActionName(Action action) {
  switch (action) {
    case Action::kAllow:
      return "allow";
    case Action::kLog:
      return "log";
    case Action::kDisallow:
      return "disallow";
  }
  return "invalid";
}

}  // namespace tessera::guard
