#include "guard/transfer_guard.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/string_view.h"
#include "guard/level.h"
#include "guard/log_transfer_sink.h"
#include "guard/policy.h"
#include "guard/scoped_transfer_guard.h"
#include "guard/transfer_event.h"
#include "guard/transfer_sink.h"

namespace tessera::guard {
namespace {

std::atomic<uint64_t> next_guard_id{1};

bool ValidDirection(Direction direction) {
  return direction == Direction::kHostToDevice || direction == Direction::kDeviceToDevice ||
         direction == Direction::kDeviceToHost;
}

Policy Sanitized(Policy policy) {
  policy.allow_below_bytes = std::max<int64_t>(policy.allow_below_bytes, 0);
  return policy;
}

// The hot path's view of a policy: three 3-bit levels, then allow_below_bytes in the upper bits
// (saturated at 2^55 - 1 bytes, far above any real movement).
constexpr int kThresholdShift = 9;
constexpr uint64_t kMaxPackedThreshold = (uint64_t{1} << (64 - kThresholdShift)) - 1;

uint64_t Pack(const Policy& policy) {
  uint64_t packed = 0;
  for (Direction d : kAllDirections) {
    packed |= static_cast<uint64_t>(policy.level(d)) << (3 * static_cast<int>(d));
  }
  const uint64_t below = std::min<uint64_t>(policy.allow_below_bytes, kMaxPackedThreshold);
  return packed | (below << kThresholdShift);
}

Level PackedLevel(uint64_t packed, Direction d) {
  return static_cast<Level>((packed >> (3 * static_cast<int>(d))) & 7);
}

int64_t PackedThreshold(uint64_t packed) { return static_cast<int64_t>(packed >> kThresholdShift); }

}  // namespace

TransferGuard::TransferGuard(Policy policy)
    : id_(next_guard_id.fetch_add(1, std::memory_order_relaxed)),
      default_sink_(std::make_shared<LogTransferSink>()),
      packed_policy_(Pack(Sanitized(policy))),
      policy_(Sanitized(policy)) {}

TransferGuard::~TransferGuard() = default;

void TransferGuard::SetPolicy(const Policy& policy) {
  std::unique_lock lock(mu_);
  policy_ = Sanitized(policy);
  packed_policy_.store(Pack(policy_), std::memory_order_relaxed);
}

Policy TransferGuard::policy() const {
  std::shared_lock lock(mu_);
  return policy_;
}

Level TransferGuard::EffectiveLevel(Direction direction) const {
  if (std::optional<Level> scoped = internal::InnermostScopedLevel(id_, direction)) {
    return *scoped;
  }
  return PackedLevel(packed_policy_.load(std::memory_order_relaxed), direction);
}

absl::Status TransferGuard::Validate(const TransferEvent& event) {
  if (!ValidDirection(event.direction)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid transfer event: direction ", static_cast<int>(event.direction)));
  }
  if (event.bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid transfer event: negative byte count ", event.bytes));
  }
  return absl::OkStatus();
}

Action TransferGuard::DecideValid(const TransferEvent& event) const {
  if (event.bytes == 0) return Action::kAllow;
  const uint64_t packed = packed_policy_.load(std::memory_order_relaxed);
  if (event.bytes < PackedThreshold(packed)) return Action::kAllow;
  Level level = PackedLevel(packed, event.direction);
  if (std::optional<Level> scoped = internal::InnermostScopedLevel(id_, event.direction)) {
    level = *scoped;
  }
  return ::tessera::guard::Decide(level, event.is_explicit);
}

absl::StatusOr<Action> TransferGuard::Decide(const TransferEvent& event) const {
  if (absl::Status status = Validate(event); !status.ok()) return status;
  return DecideValid(event);
}

TransferGuard::Decision TransferGuard::Enforce(const TransferEvent& event) {
  if (absl::Status status = Validate(event); !status.ok()) {
    return Decision{Action::kDisallow, std::move(status)};
  }
  if (event.bytes == 0) return Decision{Action::kAllow, absl::OkStatus()};  // not a transfer
  const Action action = DecideValid(event);
  Count(event, action);
  if (action == Action::kAllow) return Decision{action, absl::OkStatus()};
  Report(event, action);
  if (action == Action::kLog) return Decision{action, absl::OkStatus()};
  return Decision{action, absl::InvalidArgumentError(absl::StrCat(
                              "Disallowed ", base::AsAbsl(DirectionName(event.direction)),
                              " transfer: ", event.Description()))};
}

absl::Status TransferGuard::Check(const TransferEvent& event) { return Enforce(event).status; }

void TransferGuard::Count(const TransferEvent& event, Action action) {
  AtomicCounters& c = counters_[static_cast<int>(event.direction)];
  constexpr auto kRelaxed = std::memory_order_relaxed;
  switch (action) {
    case Action::kAllow:
      c.allowed_events.fetch_add(1, kRelaxed);
      c.allowed_bytes.fetch_add(event.bytes, kRelaxed);
      break;
    case Action::kLog:
      c.logged_events.fetch_add(1, kRelaxed);
      c.logged_bytes.fetch_add(event.bytes, kRelaxed);
      break;
    case Action::kDisallow:
      c.refused_events.fetch_add(1, kRelaxed);
      c.refused_bytes.fetch_add(event.bytes, kRelaxed);
      break;
  }
}

void TransferGuard::Report(const TransferEvent& event, Action action) {
  bool default_enabled;
  std::vector<std::pair<int, std::shared_ptr<TransferSink>>> sinks;
  {
    std::shared_lock lock(mu_);
    default_enabled = default_sink_enabled_;
    sinks = sinks_;
  }
  // Called without the lock, so that a sink may call back into this guard.
  if (default_enabled) default_sink_->OnTransfer(event, action);
  for (const auto& [id, sink] : sinks) sink->OnTransfer(event, action);
}

int TransferGuard::AddSink(std::shared_ptr<TransferSink> sink) {
  if (sink == nullptr) return -1;
  std::unique_lock lock(mu_);
  const int id = next_sink_id_++;
  sinks_.emplace_back(id, std::move(sink));
  return id;
}

void TransferGuard::RemoveSink(int id) {
  std::shared_ptr<TransferSink> removed;  // released after the lock
  std::unique_lock lock(mu_);
  for (auto it = sinks_.begin(); it != sinks_.end(); ++it) {
    if (it->first == id) {
      removed = std::move(it->second);
      sinks_.erase(it);
      return;
    }
  }
}

void TransferGuard::SetDefaultLogSinkEnabled(bool enabled) {
  std::unique_lock lock(mu_);
  default_sink_enabled_ = enabled;
}

bool TransferGuard::default_log_sink_enabled() const {
  std::shared_lock lock(mu_);
  return default_sink_enabled_;
}

TransferGuard::DirectionCounters TransferGuard::counters(Direction direction) const {
  DirectionCounters out;
  if (!ValidDirection(direction)) return out;
  const AtomicCounters& c = counters_[static_cast<int>(direction)];
  constexpr auto kRelaxed = std::memory_order_relaxed;
  out.allowed_events = c.allowed_events.load(kRelaxed);
  out.logged_events = c.logged_events.load(kRelaxed);
  out.refused_events = c.refused_events.load(kRelaxed);
  out.allowed_bytes = c.allowed_bytes.load(kRelaxed);
  out.logged_bytes = c.logged_bytes.load(kRelaxed);
  out.refused_bytes = c.refused_bytes.load(kRelaxed);
  return out;
}

void TransferGuard::ResetCounters() {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  for (AtomicCounters& c : counters_) {
    c.allowed_events.store(0, kRelaxed);
    c.logged_events.store(0, kRelaxed);
    c.refused_events.store(0, kRelaxed);
    c.allowed_bytes.store(0, kRelaxed);
    c.logged_bytes.store(0, kRelaxed);
    c.refused_bytes.store(0, kRelaxed);
  }
}

}  // namespace tessera::guard
