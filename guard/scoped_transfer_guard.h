// guard/scoped_transfer_guard.h: a thread-local, RAII override of the transfer guard level.
//
// While a `ScopedTransferGuard` lives, movements checked *on the thread that created it* use its
// level instead of the guard's policy, like JAX's `with jax.transfer_guard("disallow"):`.
//
//   ScopedTransferGuard(level)                    every direction, every guard
//   ScopedTransferGuard(direction, level)         one direction, every guard
//   ScopedTransferGuard(guard, level)             every direction, only `guard`
//   ScopedTransferGuard(guard, direction, level)  one direction, only `guard`
//
// Precedence, per guard and direction: the innermost live scope on the calling thread that applies
// to that guard and that direction, else the guard's policy (TransferGuard::EffectiveLevel). Scopes
// nest; an all-direction scope entered inside a per-direction one overrides it for that direction,
// and vice versa; leaving a scope restores what was in force before. A new thread starts with no
// scope. A guard-limited scope remembers the guard by its id (TransferGuard::id()), never by
// pointer, so it is harmless if the guard is destroyed first.
//
// Example:
//   {
//     ScopedTransferGuard no_implicit(Level::kDisallow);
//     ScopedTransferGuard but_log_d2h(Direction::kDeviceToHost, Level::kLog);
//     ...  // implicit h2d/d2d refused, implicit d2h logged, explicit allowed
//   }      // back to each guard's policy
//
// Ownership and thread-safety: not copyable or movable. Must be destroyed on the thread that
// created it (an automatic variable always is); scopes should be destroyed in reverse order of
// creation, and one destroyed out of order removes only itself. Scopes on different threads are
// independent.

#ifndef TESSERA_GUARD_SCOPED_TRANSFER_GUARD_H_
#define TESSERA_GUARD_SCOPED_TRANSFER_GUARD_H_

#include <cstdint>
#include <optional>

#include "guard/level.h"

namespace tessera::guard {

class TransferGuard;

class ScopedTransferGuard {
 public:
  explicit ScopedTransferGuard(Level level);
  ScopedTransferGuard(Direction direction, Level level);
  ScopedTransferGuard(const TransferGuard& only, Level level);
  ScopedTransferGuard(const TransferGuard& only, Direction direction, Level level);
  ~ScopedTransferGuard();

  ScopedTransferGuard(const ScopedTransferGuard&) = delete;
  ScopedTransferGuard& operator=(const ScopedTransferGuard&) = delete;
  ScopedTransferGuard(ScopedTransferGuard&&) = delete;
  ScopedTransferGuard& operator=(ScopedTransferGuard&&) = delete;

 private:
  // `guard_id` 0: every guard; `direction` empty: every direction.
  ScopedTransferGuard(uint64_t guard_id, std::optional<Direction> direction, Level level);
};

namespace internal {
// The level of the innermost scope on this thread that applies to the guard with id `guard_id` and
// to `direction`; nullopt when none does.
std::optional<Level> InnermostScopedLevel(uint64_t guard_id, Direction direction);
}  // namespace internal

}  // namespace tessera::guard

#endif  // TESSERA_GUARD_SCOPED_TRANSFER_GUARD_H_
