// guard/policy.h: a transfer guard's per-client policy.
//
// A `Policy` is a plain value: one `Level` per `Direction` plus a size threshold below which
// movements pass silently. It has a compact text form used by TESSERA_TRANSFER_GUARD and the CLI:
//
//   ""                                every direction allows (the default)
//   "disallow"                        a bare level: every direction
//   "h2d=disallow,d2d=log,d2h=allow"  one direction each (short names)
//   "host_to_device=log_explicit"     long names ("host-to-device" too)
//   "all=log"                         every direction
//   "disallow,d2h=allow"              left to right, later entries win
//   "disallow,allow_below_bytes=64"   fewer than 64 bytes pass ("below=64")
//
// Entries are separated by commas; blanks around entries, keys and values are ignored; names are
// ASCII case-insensitive. `ToString()` produces the canonical form, which `Parse` reads back equal.
//
// Example:
//   absl::StatusOr<Policy> policy =
//       Policy::Parse("h2d=disallow,allow_below_bytes=4096");
//   if (!policy.ok()) return policy.status();
//   policy->level(Direction::kHostToDevice);  // Level::kDisallow
//
// Thread-safety: a value type; concurrent const use is safe, mutation needs external
// synchronisation.

#ifndef TESSERA_GUARD_POLICY_H_
#define TESSERA_GUARD_POLICY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "guard/level.h"

namespace tessera::guard {

// The environment variable read by Policy::FromEnvironment().
inline constexpr char kTransferGuardEnvVar[] = "TESSERA_TRANSFER_GUARD";

struct Policy {
  Level host_to_device = Level::kAllow;
  Level device_to_device = Level::kAllow;
  Level device_to_host = Level::kAllow;
  // Movements of fewer bytes than this pass silently (and are counted as allowed), whatever the
  // level, including a level set by a ScopedTransferGuard. 0: no threshold. Never negative.
  int64_t allow_below_bytes = 0;

  // The same level for every direction.
  static Policy Uniform(Level level);

  Level level(Direction direction) const;
  void set_level(Direction direction, Level level);

  // Parses the text form above. INVALID_ARGUMENT naming the offending token and its position (a
  // 0-based character offset into `text`) for an unknown level or key, a missing '=', an empty
  // entry, or a byte count that is not a non-negative decimal integer. The message stays one line:
  // the text and the token are C-escaped, and a text longer than 80 bytes is cut to 60 bytes around
  // the position, with "..." where it was cut.
  static absl::StatusOr<Policy> Parse(std::string_view text);

  // The canonical text form: "allow" / "disallow" ... when every direction has one level, else
  // "h2d=...,d2d=...,d2h=...", followed by ",allow_below_bytes=N" when N > 0.
  std::string ToString() const;

  // Parses $TESSERA_TRANSFER_GUARD. Unset or empty (blanks only): the default Policy (all allow).
  // INVALID_ARGUMENT, prefixed with the variable's name, when it does not parse.
  static absl::StatusOr<Policy> FromEnvironment();

  friend bool operator==(const Policy&, const Policy&) = default;
};

}  // namespace tessera::guard

#endif  // TESSERA_GUARD_POLICY_H_
