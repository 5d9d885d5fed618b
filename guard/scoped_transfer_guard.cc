#include "guard/scoped_transfer_guard.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "guard/level.h"
#include "guard/transfer_guard.h"

namespace tessera::guard {
namespace {

struct ScopeEntry {
  const ScopedTransferGuard* owner;  // identity only, never dereferenced
  uint64_t guard_id;                 // 0: every guard
  std::optional<Direction> direction;
  Level level;
};

// This thread's live scopes, outermost first.
std::vector<ScopeEntry>& ThreadScopes() {
  thread_local std::vector<ScopeEntry> scopes;
  return scopes;
}

}  // namespace

ScopedTransferGuard::ScopedTransferGuard(Level level)
    : ScopedTransferGuard(0, std::nullopt, level) {}

ScopedTransferGuard::ScopedTransferGuard(Direction direction, Level level)
    : ScopedTransferGuard(0, direction, level) {}

ScopedTransferGuard::ScopedTransferGuard(const TransferGuard& only, Level level)
    : ScopedTransferGuard(only.id(), std::nullopt, level) {}

ScopedTransferGuard::ScopedTransferGuard(const TransferGuard& only, Direction direction,
                                         Level level)
    : ScopedTransferGuard(only.id(), direction, level) {}

ScopedTransferGuard::ScopedTransferGuard(uint64_t guard_id, std::optional<Direction> direction,
                                         Level level) {
  ThreadScopes().push_back({this, guard_id, direction, level});
}

ScopedTransferGuard::~ScopedTransferGuard() {
  std::vector<ScopeEntry>& scopes = ThreadScopes();
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    if (it->owner == this) {
      scopes.erase(std::next(it).base());
      return;
    }
  }
}

namespace internal {

std::optional<Level> InnermostScopedLevel(uint64_t guard_id, Direction direction) {
  const std::vector<ScopeEntry>& scopes = ThreadScopes();
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    if (it->guard_id != 0 && it->guard_id != guard_id) continue;
    if (it->direction.has_value() && *it->direction != direction) continue;
    return it->level;
  }
  return std::nullopt;
}

}  // namespace internal

}  // namespace tessera::guard
