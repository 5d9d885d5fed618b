// guard/transfer_guard.h: the per-client transfer guard.
//
// A `TransferGuard` decides, for each movement of bytes a client is about to make, whether to
// allow it, allow and log it, or refuse it, and counts what it decided. Each Client owns one
// (`client->transfer_guard()`); the runtime calls Enforce once per call and direction before any
// byte moves, traces the action it returns and fails the call with its status when that is not OK.
//
// The level that applies to a movement is, in order of precedence:
//   1. the innermost ScopedTransferGuard live on the calling thread that applies to this guard and
//      to the movement's direction;
//   2. this guard's Policy (SetPolicy; ClientOptions.transfer_guard);
//   3. allow (the default Policy).
// The level and the event's `is_explicit` flag then give the action by JAX's table
// (guard/level.h). Two movements are always allowed silently: a zero-byte event (no transfer at
// all: it is not counted) and one of fewer than `policy().allow_below_bytes` bytes (counted as
// allowed).
//
// Logged and refused movements go to the sinks: first the built-in LogTransferSink (enabled by
// default; it writes logged movements to stderr and leaves refusals to the returned error), then
// every added sink in the order they were added.
//
// Example:
//
//   TransferGuard guard(Policy::Uniform(Level::kDisallow));
//   TransferGuard::Decision decision = guard.Enforce(event);
//   // For an implicit `event`: decision.action == Action::kDisallow and decision.status is
//   // INVALID_ARGUMENT "Disallowed ... transfer: ...". Check(event) returns that status alone.
//
// Ownership: not copyable or movable (scopes refer to a guard by its id).
// Thread-safety: every method is thread-safe; Enforce and Check may run concurrently with
// themselves and with SetPolicy, AddSink and the rest. Each Enforce reads the policy once, so the
// action it returns, the status, the counters and the sinks always agree, even while another
// thread changes the policy.

#ifndef TESSERA_GUARD_TRANSFER_GUARD_H_
#define TESSERA_GUARD_TRANSFER_GUARD_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "guard/level.h"
#include "guard/log_transfer_sink.h"
#include "guard/policy.h"
#include "guard/scoped_transfer_guard.h"
#include "guard/transfer_event.h"
#include "guard/transfer_sink.h"

namespace tessera::guard {

class TransferGuard {
 public:
  // What the guard decided so far in one direction. `*_events` count Enforce calls (zero-byte
  // events excluded), `*_bytes` sum their TransferEvent::bytes.
  struct DirectionCounters {
    int64_t allowed_events = 0;
    int64_t logged_events = 0;
    int64_t refused_events = 0;
    int64_t allowed_bytes = 0;
    int64_t logged_bytes = 0;
    int64_t refused_bytes = 0;
    friend bool operator==(const DirectionCounters&, const DirectionCounters&) = default;
  };

  explicit TransferGuard(Policy policy = {});
  ~TransferGuard();
  TransferGuard(const TransferGuard&) = delete;
  TransferGuard& operator=(const TransferGuard&) = delete;

  // A process-unique id (never reused), by which guard-limited ScopedTransferGuards refer to it.
  uint64_t id() const { return id_; }

  // Replaces the policy; Enforce calls that start afterwards see it. A negative allow_below_bytes
  // is treated as 0.
  void SetPolicy(const Policy& policy);
  Policy policy() const;

  // The level in force for `direction` on the calling thread: the innermost applicable scope, else
  // the policy.
  Level EffectiveLevel(Direction direction) const;

  // What Enforce decided on one event. `status` is OK exactly when `action` is kAllow or kLog.
  struct Decision {
    Action action = Action::kAllow;
    absl::Status status;
  };

  // Decides on `event` once (reading the policy once), counts it and reports it to the sinks if
  // logged or refused, and returns the action together with the status:
  // - kAllow or kLog and OK for allowed and logged movements (a zero-byte event: kAllow and OK,
  //   neither counted nor reported);
  // - kDisallow and INVALID_ARGUMENT "Disallowed <direction name> transfer: <description>" for a
  //   refused one, e.g. "Disallowed host-to-device transfer: ...";
  // - kDisallow and INVALID_ARGUMENT "invalid transfer event: ..." for negative bytes or an
  //   out-of-range direction (not counted, not reported).
  Decision Enforce(const TransferEvent& event);

  // Enforce(event).status: for callers that need only the verdict.
  absl::Status Check(const TransferEvent& event);

  // What Enforce would decide on `event` on this thread now, without counting or reporting it.
  // INVALID_ARGUMENT for an invalid event, as Enforce. Only for callers that ask without moving
  // bytes: one that then moves them must call Enforce, which decides, counts and reports at once.
  absl::StatusOr<Action> Decide(const TransferEvent& event) const;

  // Registers `sink` and returns an id for RemoveSink (ids start at 1 and are never reused by this
  // guard); a null sink is ignored and gets -1. RemoveSink of an unknown id does nothing. A sink
  // removed while an Enforce on another thread is reporting to it may still receive that one event.
  int AddSink(std::shared_ptr<TransferSink> sink);
  void RemoveSink(int id);

  // Turns the built-in LogTransferSink (stderr warnings for logged movements) on or off.
  void SetDefaultLogSinkEnabled(bool enabled);
  bool default_log_sink_enabled() const;

  // A snapshot of the counters of `direction`. Each field is exact; under
  // concurrent Enforce calls the fields may be read at slightly different moments.
  DirectionCounters counters(Direction direction) const;
  // Sets every counter of every direction to zero.
  void ResetCounters();

 private:
  struct AtomicCounters {
    std::atomic<int64_t> allowed_events{0}, logged_events{0}, refused_events{0};
    std::atomic<int64_t> allowed_bytes{0}, logged_bytes{0}, refused_bytes{0};
  };

  static absl::Status Validate(const TransferEvent& event);
  Action DecideValid(const TransferEvent& event) const;
  void Count(const TransferEvent& event, Action action);
  void Report(const TransferEvent& event, Action action);

  const uint64_t id_;
  const std::shared_ptr<LogTransferSink> default_sink_;

  // The hot path's copy of the policy's levels and threshold, packed into one word (see Pack in
  // transfer_guard.cc) so that Enforce reads a consistent policy without taking mu_.
  std::atomic<uint64_t> packed_policy_;

  // A standard-library lock rather than absl::Mutex so that ThreadSanitizer sees it even when
  // Abseil itself is not built with -fsanitize=thread (as with a system Abseil).
  mutable std::shared_mutex mu_;
  // Guarded by mu_:
  Policy policy_;
  bool default_sink_enabled_ = true;
  std::vector<std::pair<int, std::shared_ptr<TransferSink>>> sinks_;
  int next_sink_id_ = 1;

  std::array<AtomicCounters, 3> counters_;
};

}  // namespace tessera::guard

#endif  // TESSERA_GUARD_TRANSFER_GUARD_H_
