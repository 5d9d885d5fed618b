// The transfer guard through the C API: the client's policy, thread-local scopes, counters.
//
// Scopes: TSR_Guard_PushScope creates a ScopedTransferGuard on the heap and keeps it on a
// thread-local stack; TSR_Guard_PopScope destroys the top one. Both run on the calling thread,
// as ScopedTransferGuard requires.

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings/c/internal.h"

namespace tessera::c_api {
namespace {

thread_local std::vector<std::unique_ptr<guard::ScopedTransferGuard>> scopes;

absl::StatusOr<guard::Level> ToLevel(TSR_GuardLevel level) {
  switch (level) {
    case TSR_GUARD_ALLOW:
      return guard::Level::kAllow;
    case TSR_GUARD_LOG:
      return guard::Level::kLog;
    case TSR_GUARD_DISALLOW:
      return guard::Level::kDisallow;
    case TSR_GUARD_LOG_EXPLICIT:
      return guard::Level::kLogExplicit;
    case TSR_GUARD_DISALLOW_EXPLICIT:
      return guard::Level::kDisallowExplicit;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown guard level ", static_cast<int>(level)));
}

// nullopt for TSR_DIRECTION_ALL.
absl::StatusOr<std::optional<guard::Direction>> ToDirection(TSR_Direction direction,
                                                            bool all_allowed) {
  switch (direction) {
    case TSR_DIRECTION_ALL:
      if (all_allowed) return std::nullopt;
      break;
    case TSR_DIRECTION_HOST_TO_DEVICE:
      return guard::Direction::kHostToDevice;
    case TSR_DIRECTION_DEVICE_TO_DEVICE:
      return guard::Direction::kDeviceToDevice;
    case TSR_DIRECTION_DEVICE_TO_HOST:
      return guard::Direction::kDeviceToHost;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("invalid direction ", static_cast<int>(direction)));
}

absl::Status PushScope(const TSR_Guard_PushScope_Args& a) {
  absl::StatusOr<guard::Level> level = ToLevel(a.level);
  if (!level.ok()) return level.status();
  absl::StatusOr<std::optional<guard::Direction>> direction = ToDirection(a.direction, true);
  if (!direction.ok()) return direction.status();
  std::unique_ptr<guard::ScopedTransferGuard> scope;
  if (a.client == nullptr) {
    scope = direction->has_value()
                ? std::make_unique<guard::ScopedTransferGuard>(**direction, *level)
                : std::make_unique<guard::ScopedTransferGuard>(*level);
  } else {
    const guard::TransferGuard& g = a.client->client->transfer_guard();
    scope = direction->has_value()
                ? std::make_unique<guard::ScopedTransferGuard>(g, **direction, *level)
                : std::make_unique<guard::ScopedTransferGuard>(g, *level);
  }
  scopes.push_back(std::move(scope));
  return absl::OkStatus();
}

}  // namespace

TSR_Error* GuardSetPolicy(TSR_Guard_SetPolicy_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Guard_SetPolicy_Args, policy_size);
  if (args->client == nullptr) return MakeError(CheckNotNull(nullptr, "client"));
  if (args->policy == nullptr) return MakeError(CheckNotNull(nullptr, "policy"));
  absl::StatusOr<guard::Policy> policy =
      guard::Policy::Parse(TextOf(args->policy, args->policy_size));
  if (!policy.ok()) return MakeError(policy.status());
  args->client->client->transfer_guard().SetPolicy(*policy);
  return nullptr;
}

TSR_Error* GuardPushScope(TSR_Guard_PushScope_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Guard_PushScope_Args, level);
  return MakeError(PushScope(*args));
}

TSR_Error* GuardPopScope(TSR_Guard_PopScope_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Guard_PopScope_Args, struct_size);
  if (scopes.empty()) {
    return MakeError(absl::FailedPreconditionError(
        "TSR_Guard_PopScope: this thread has no transfer guard scope to leave"));
  }
  scopes.pop_back();
  return nullptr;
}

TSR_Error* GuardCounters(TSR_Guard_Counters_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Guard_Counters_Args, refused_bytes);
  if (args->client == nullptr) return MakeError(CheckNotNull(nullptr, "client"));
  absl::StatusOr<std::optional<guard::Direction>> direction = ToDirection(args->direction, false);
  if (!direction.ok()) return MakeError(direction.status());
  guard::TransferGuard::DirectionCounters c =
      args->client->client->transfer_guard().counters(**direction);
  args->allowed_events = c.allowed_events;
  args->logged_events = c.logged_events;
  args->refused_events = c.refused_events;
  args->allowed_bytes = c.allowed_bytes;
  args->logged_bytes = c.logged_bytes;
  args->refused_bytes = c.refused_bytes;
  return nullptr;
}

}  // namespace tessera::c_api
