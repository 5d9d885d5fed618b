// guard/level.h: the vocabulary of the transfer guard.
//
// Defines
//   Level      how strictly a guard treats a movement of bytes (as JAX's `jax_transfer_guard`),
//   Direction  which way the bytes move (h2d, d2d, d2h),
//   Action     what the guard does with one movement (allow, log, disallow),
// and the pure function `Decide(level, is_explicit)` that maps the first two to the third exactly
// as JAX does:
//
//   level               explicit transfer   implicit transfer
//   allow               allow               allow
//   log                 allow               log
//   disallow            allow               disallow
//   log_explicit        log                 log
//   disallow_explicit   disallow            disallow
//
// Example:
//   absl::StatusOr<Level> level = ParseLevel("disallow");
//   Action action = Decide(*level, /*is_explicit=*/false);  // kDisallow
//
// Everything here is a value or a pure function: thread-safe, no allocation.

#ifndef TESSERA_GUARD_LEVEL_H_
#define TESSERA_GUARD_LEVEL_H_

#include <array>
#include <string_view>

#include "absl/status/statusor.h"

namespace tessera::guard {

// How strictly movements are treated. `kLog`/`kDisallow` act on implicit movements only (those the
// user did not ask for); `kLogExplicit`/`kDisallowExplicit` act on every movement.
enum class Level { kAllow, kLog, kDisallow, kLogExplicit, kDisallowExplicit };

// Which way bytes move. A movement between two devices that is staged through host memory is
// device-to-device, never host-to-device plus device-to-host.
enum class Direction { kHostToDevice, kDeviceToDevice, kDeviceToHost };

// What the guard does with one movement.
enum class Action { kAllow, kLog, kDisallow };

// All levels and directions, in declaration order (for loops and parameterised tests).
inline constexpr std::array<Level, 5> kAllLevels = {Level::kAllow, Level::kLog, Level::kDisallow,
                                                    Level::kLogExplicit, Level::kDisallowExplicit};
inline constexpr std::array<Direction, 3> kAllDirections = {
    Direction::kHostToDevice, Direction::kDeviceToDevice, Direction::kDeviceToHost};

// JAX's table (see the header comment). An out-of-range `level` is treated as kAllow.
Action Decide(Level level, bool is_explicit);

// "allow", "log", "disallow", "log_explicit", "disallow_explicit" ("invalid" out of range).
std::string_view LevelName(Level level);

// The inverse of LevelName; ASCII case-insensitive, surrounding blanks ignored. INVALID_ARGUMENT
// naming the text and the accepted names otherwise.
absl::StatusOr<Level> ParseLevel(std::string_view text);

// "host-to-device", "device-to-device", "device-to-host" ("invalid" out of range).
std::string_view DirectionName(Direction direction);

// "h2d", "d2d", "d2h" ("invalid" out of range).
std::string_view DirectionShortName(Direction direction);

// "allow", "log", "disallow".
std::string_view ActionName(Action action);

}  // namespace tessera::guard

#endif  // TESSERA_GUARD_LEVEL_H_
