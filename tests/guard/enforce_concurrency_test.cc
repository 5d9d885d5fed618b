// TransferGuard::Enforce decides once: while one thread flips the policy between allow, disallow
// and log, every Decision that other threads get back has an action that agrees with its status,
// and the counters and the sinks agree with the decisions, event by event. (Asking Decide for the
// action and then Check for the status, as the runtime once did, reads the policy twice and fails
// this test.) Meant to run clean under ThreadSanitizer (-DTESSERA_SANITIZE=thread).

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/level.h"
#include "guard/policy.h"
#include "guard/recording_transfer_sink.h"
#include "guard/transfer_event.h"
#include "guard/transfer_guard.h"
#include "tests/guard/test_events.h"

namespace tessera::guard {
namespace {

using testing::MakeEvent;

constexpr int kEnforcers = 4;
constexpr int kMinEnforcesPerThread = 20000;
// Each enforcer keeps going until it has itself seen every action, so that the flips overlap its
// enforcement however the threads are scheduled; it gives up after this long (and the test fails).
constexpr absl::Duration kPatience = absl::Seconds(60);
constexpr int64_t kBytes = 8;

// One Enforce call as its thread saw it.
struct Seen {
  std::string operation;  // unique per call
  Direction direction;
  Action action;
  absl::Status status;
};

int ActionIndex(Action action) { return static_cast<int>(action); }

TEST(TransferGuardEnforceConcurrencyTest, DecisionsAgreeWithStatusCountersAndSinks) {
  TransferGuard guard;
  guard.SetDefaultLogSinkEnabled(false);
  auto recorder = std::make_shared<RecordingTransferSink>();
  guard.AddSink(recorder);

  std::atomic<bool> stop{false};
  std::thread flipper([&] {
    const std::array<Policy, 3> policies = {Policy::Uniform(Level::kAllow),
                                            Policy::Uniform(Level::kDisallow),
                                            Policy::Uniform(Level::kLog)};
    for (int64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      guard.SetPolicy(policies[i % policies.size()]);
    }
  });

  std::vector<std::vector<Seen>> seen(kEnforcers);
  std::vector<std::thread> enforcers;
  for (int t = 0; t < kEnforcers; ++t) {
    enforcers.emplace_back([&, t] {
      const absl::Time deadline = absl::Now() + kPatience;
      std::array<bool, 3> actions_seen = {};
      auto seen_all = [&] { return actions_seen[0] && actions_seen[1] && actions_seen[2]; };
      for (int i = 0; i < kMinEnforcesPerThread || (!seen_all() && absl::Now() < deadline); ++i) {
        // Implicit events: `disallow` refuses them and `log` logs them.
        TransferEvent event = MakeEvent(kAllDirections[i % 3], /*is_explicit=*/false, kBytes);
        event.operation = absl::StrCat("enforcer ", t, " call ", i);
        TransferGuard::Decision decision = guard.Enforce(event);
        actions_seen[ActionIndex(decision.action)] = true;
        seen[t].push_back(Seen{std::move(event.operation), event.direction, decision.action,
                               std::move(decision.status)});
      }
      EXPECT_TRUE(seen_all()) << "enforcer " << t << " did not see every action in " << kPatience;
    });
  }
  for (std::thread& thread : enforcers) thread.join();
  stop.store(true);
  flipper.join();

  // Every decision's action agrees with its status; tally them per direction and action.
  std::array<std::array<int64_t, 3>, 3> tally = {};  // [direction][action]
  std::map<std::string, Action> reportable;          // operation -> kLog or kDisallow
  for (const std::vector<Seen>& calls : seen) {
    for (const Seen& s : calls) {
      if (s.action == Action::kDisallow) {
        EXPECT_EQ(s.status.code(), absl::StatusCode::kInvalidArgument) << s.operation;
        EXPECT_TRUE(absl::StartsWith(
            s.status.message(), absl::StrCat("Disallowed ", std::string(DirectionName(s.direction)),
                                             " transfer: ", s.operation)))
            << s.status;
      } else {
        EXPECT_TRUE(s.status.ok())
            << s.operation << " was " << ActionName(s.action) << " but " << s.status;
      }
      ++tally[static_cast<int>(s.direction)][ActionIndex(s.action)];
      if (s.action != Action::kAllow) reportable.emplace(s.operation, s.action);
    }
  }

  // The counters agree with the decisions.
  std::array<int64_t, 3> total = {};  // per action
  for (Direction d : kAllDirections) {
    const std::array<int64_t, 3>& n = tally[static_cast<int>(d)];
    const TransferGuard::DirectionCounters c = guard.counters(d);
    EXPECT_EQ(c.allowed_events, n[ActionIndex(Action::kAllow)]) << DirectionName(d);
    EXPECT_EQ(c.logged_events, n[ActionIndex(Action::kLog)]) << DirectionName(d);
    EXPECT_EQ(c.refused_events, n[ActionIndex(Action::kDisallow)]) << DirectionName(d);
    EXPECT_EQ(c.allowed_bytes, kBytes * c.allowed_events);
    EXPECT_EQ(c.logged_bytes, kBytes * c.logged_events);
    EXPECT_EQ(c.refused_bytes, kBytes * c.refused_events);
    for (int a = 0; a < 3; ++a) total[a] += n[a];
  }
  // The flips overlapped the enforcement: every thread saw every action.
  EXPECT_GT(total[ActionIndex(Action::kAllow)], 0);
  EXPECT_GT(total[ActionIndex(Action::kLog)], 0);
  EXPECT_GT(total[ActionIndex(Action::kDisallow)], 0);

  // The sinks received exactly the logged and refused calls, each with the action its caller got.
  const std::vector<RecordingTransferSink::Record> records = recorder->records();
  EXPECT_EQ(records.size(), reportable.size());
  std::map<std::string, Action> reported;
  for (const RecordingTransferSink::Record& r : records) {
    EXPECT_TRUE(reported.emplace(r.event.operation, r.action).second)
        << r.event.operation << " reported twice";
  }
  EXPECT_TRUE(reported == reportable) << "the sinks disagree with the decisions";
}

}  // namespace
}  // namespace tessera::guard
