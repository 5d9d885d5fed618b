// The behaviour of JAX's tests/transfer_guard_test.py, against
// TransferGuard::Check, plus the guard's own contract: policies,
// allow_below_bytes, sinks, the error message, counters, Enforce's decisions.

#include "guard/transfer_guard.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/level.h"
#include "guard/log_transfer_sink.h"
#include "guard/policy.h"
#include "guard/recording_transfer_sink.h"
#include "guard/scoped_transfer_guard.h"
#include "guard/transfer_event.h"
#include "tests/guard/test_events.h"
#include "tests/testing/status_matchers.h"

namespace tessera::guard {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakeEvent;
using ::testing::StartsWith;

// A guard with a recording sink and the stderr sink off.
class GuardFixture {
 protected:
  GuardFixture() {
    guard_.SetDefaultLogSinkEnabled(false);
    guard_.AddSink(recorder_);
  }
  TransferGuard guard_;
  std::shared_ptr<RecordingTransferSink> recorder_ = std::make_shared<RecordingTransferSink>();
};

// --- JAX's transfer_guard_test.py ---

// Which of JAX's context managers a case uses: one direction's
// (transfer_guard_host_to_device ...) or all of them (transfer_guard); and
// whether the level comes from a scope or from the policy.
struct JaxCase {
  std::optional<Direction> direction;  // nullopt: all directions
  bool from_policy;
};

std::string JaxCaseName(const ::testing::TestParamInfo<JaxCase>& info) {
  std::string name = info.param.direction.has_value()
                         ? std::string(DirectionShortName(*info.param.direction))
                         : "all";
  return name + (info.param.from_policy ? "_policy" : "_scope");
}

class JaxTransferGuardTest : public GuardFixture, public ::testing::TestWithParam<JaxCase> {
 protected:
  // The directions the case's level applies to.
  std::vector<Direction> Directions() const {
    if (GetParam().direction.has_value()) return {*GetParam().direction};
    return {kAllDirections.begin(), kAllDirections.end()};
  }

  // Sets `level` for the case, by policy or by a scope held in `scope_`.
  void Configure(Level level) {
    if (GetParam().from_policy) {
      Policy policy;
      for (Direction d : Directions()) policy.set_level(d, level);
      guard_.SetPolicy(policy);
    } else if (GetParam().direction.has_value()) {
      scope_ = std::make_unique<ScopedTransferGuard>(*GetParam().direction, level);
    } else {
      scope_ = std::make_unique<ScopedTransferGuard>(level);
    }
  }

  // Checks an explicit and an implicit movement in each direction of the case
  // and expects: explicit -> (ok, logged), implicit -> (ok, logged).
  void ExpectOutcome(bool explicit_ok, bool explicit_logged, bool implicit_ok,
                     bool implicit_logged) {
    for (Direction d : Directions()) {
      SCOPED_TRACE(DirectionName(d));
      for (bool is_explicit : {true, false}) {
        SCOPED_TRACE(is_explicit ? "explicit" : "implicit");
        recorder_->Clear();
        const TransferEvent event = MakeEvent(d, is_explicit);
        const absl::Status status = guard_.Check(event);
        const bool ok = is_explicit ? explicit_ok : implicit_ok;
        const bool logged = is_explicit ? explicit_logged : implicit_logged;
        if (ok) {
          EXPECT_THAT(status, IsOk());
        } else {
          EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                                       StartsWith("Disallowed " + std::string(DirectionName(d)) +
                                                  " transfer: ")));
        }
        std::vector<RecordingTransferSink::Record> expected;
        if (logged) expected.push_back({event, Action::kLog});
        if (!ok) expected.push_back({event, Action::kDisallow});
        EXPECT_EQ(recorder_->records(), expected);
      }
    }
  }

  std::unique_ptr<ScopedTransferGuard> scope_;
};

TEST_P(JaxTransferGuardTest, AllowByDefault) {
  ExpectOutcome(/*explicit_ok=*/true, false, /*implicit_ok=*/true, false);
}

TEST_P(JaxTransferGuardTest, Allow) {
  Configure(Level::kAllow);
  ExpectOutcome(true, false, true, false);
}

TEST_P(JaxTransferGuardTest, Log) {
  Configure(Level::kLog);
  ExpectOutcome(/*explicit_ok=*/true, /*explicit_logged=*/false,
                /*implicit_ok=*/true,
                /*implicit_logged=*/true);
}

TEST_P(JaxTransferGuardTest, Disallow) {
  Configure(Level::kDisallow);
  ExpectOutcome(true, false, /*implicit_ok=*/false, false);
}

TEST_P(JaxTransferGuardTest, LogExplicit) {
  Configure(Level::kLogExplicit);
  ExpectOutcome(true, /*explicit_logged=*/true, true, /*implicit_logged=*/true);
}

TEST_P(JaxTransferGuardTest, DisallowExplicit) {
  Configure(Level::kDisallowExplicit);
  ExpectOutcome(/*explicit_ok=*/false, false, /*implicit_ok=*/false, false);
}

// Directions the case does not configure stay allowed.
TEST_P(JaxTransferGuardTest, OtherDirectionsUnaffected) {
  Configure(Level::kDisallowExplicit);
  for (Direction d : kAllDirections) {
    if (GetParam().direction.has_value() && d != *GetParam().direction) {
      EXPECT_THAT(guard_.Check(MakeEvent(d, false)), IsOk());
    }
  }
  EXPECT_THAT(recorder_->records(), IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(AllConfigs, JaxTransferGuardTest,
                         ::testing::Values(JaxCase{Direction::kHostToDevice, false},
                                           JaxCase{Direction::kDeviceToDevice, false},
                                           JaxCase{Direction::kDeviceToHost, false},
                                           JaxCase{std::nullopt, false},
                                           JaxCase{Direction::kHostToDevice, true},
                                           JaxCase{Direction::kDeviceToDevice, true},
                                           JaxCase{Direction::kDeviceToHost, true},
                                           JaxCase{std::nullopt, true}),
                         JaxCaseName);

class TransferGuardTest : public GuardFixture, public ::testing::Test {};

TEST_F(TransferGuardTest, Simple) {
  ScopedTransferGuard allow(Level::kAllow);
  for (Direction d : kAllDirections) EXPECT_THAT(guard_.Check(MakeEvent(d, false)), IsOk());
}

TEST_F(TransferGuardTest, Nesting) {
  ScopedTransferGuard disallow(Level::kDisallow);
  {
    ScopedTransferGuard allow(Level::kAllow);
    EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false)), IsOk());
  }
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Disallowed")));
}

TEST_F(TransferGuardTest, MixedNestingPerDirectionThenAll) {
  ScopedTransferGuard h2d(Direction::kHostToDevice, Level::kDisallow);
  {
    ScopedTransferGuard all(Level::kAllow);
    EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false)), IsOk());
  }
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("host-to-device")));
}

TEST_F(TransferGuardTest, MixedNestingAllThenPerDirection) {
  ScopedTransferGuard all(Level::kDisallow);
  {
    ScopedTransferGuard h2d(Direction::kHostToDevice, Level::kAllow);
    EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false)), IsOk());
    EXPECT_THAT(guard_.Check(MakeEvent(Direction::kDeviceToHost, false)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("device-to-host")));
  }
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("host-to-device")));
}

// --- The guard's own contract ---

TEST_F(TransferGuardTest, RefusalMessageIsExact) {
  guard_.SetPolicy(Policy::Uniform(Level::kDisallowExplicit));
  const TransferEvent event = MakeEvent(Direction::kHostToDevice, true, 16);
  const absl::Status status = guard_.Check(event);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "Disallowed host-to-device transfer: MakeArrayFromHostBuffer of "
            "f32[4] (16 bytes, "
            "explicit) from host to devices [0]");
  EXPECT_EQ(guard_.Check(MakeEvent(Direction::kDeviceToDevice, true)).message(),
            "Disallowed device-to-device transfer: " +
                MakeEvent(Direction::kDeviceToDevice, true).Description());
  EXPECT_EQ(guard_.Check(MakeEvent(Direction::kDeviceToHost, false)).message(),
            "Disallowed device-to-host transfer: " +
                MakeEvent(Direction::kDeviceToHost, false).Description());
}

TEST_F(TransferGuardTest, PolicyAccessors) {
  const Policy policy{.device_to_host = Level::kLog, .allow_below_bytes = 8};
  guard_.SetPolicy(policy);
  EXPECT_EQ(guard_.policy(), policy);
  EXPECT_EQ(guard_.EffectiveLevel(Direction::kDeviceToHost), Level::kLog);
  EXPECT_EQ(guard_.EffectiveLevel(Direction::kHostToDevice), Level::kAllow);
  guard_.SetPolicy(Policy{.allow_below_bytes = -5});
  EXPECT_EQ(guard_.policy().allow_below_bytes, 0);
  TransferGuard constructed(Policy::Uniform(Level::kDisallow));
  EXPECT_EQ(constructed.policy(), Policy::Uniform(Level::kDisallow));
}

TEST_F(TransferGuardTest, ScopeOverridesPolicy) {
  guard_.SetPolicy(Policy::Uniform(Level::kDisallowExplicit));
  {
    ScopedTransferGuard allow(Direction::kDeviceToHost, Level::kAllow);
    EXPECT_EQ(guard_.EffectiveLevel(Direction::kDeviceToHost), Level::kAllow);
    EXPECT_EQ(guard_.EffectiveLevel(Direction::kHostToDevice), Level::kDisallowExplicit);
    EXPECT_THAT(guard_.Check(MakeEvent(Direction::kDeviceToHost, true)), IsOk());
  }
  EXPECT_EQ(guard_.EffectiveLevel(Direction::kDeviceToHost), Level::kDisallowExplicit);
}

TEST_F(TransferGuardTest, TwoGuardsWithDifferentPolicies) {
  TransferGuard strict(Policy::Uniform(Level::kDisallow));
  TransferGuard lax;
  strict.SetDefaultLogSinkEnabled(false);
  lax.SetDefaultLogSinkEnabled(false);
  const TransferEvent implicit = MakeEvent(Direction::kHostToDevice, false);
  EXPECT_THAT(strict.Check(implicit),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("implicit")));
  EXPECT_THAT(lax.Check(implicit), IsOk());
  EXPECT_NE(strict.id(), lax.id());
}

TEST_F(TransferGuardTest, ZeroByteEventsAreNotTransfers) {
  guard_.SetPolicy(Policy::Uniform(Level::kDisallowExplicit));
  for (Direction d : kAllDirections) {
    EXPECT_THAT(guard_.Check(MakeEvent(d, true, 0)), IsOk());
    EXPECT_EQ(guard_.counters(d), TransferGuard::DirectionCounters{});
  }
  EXPECT_THAT(recorder_->records(), IsEmpty());
}

TEST_F(TransferGuardTest, AllowBelowBytes) {
  guard_.SetPolicy(Policy{.host_to_device = Level::kDisallowExplicit,
                          .device_to_host = Level::kLogExplicit,
                          .allow_below_bytes = 64});
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, true, 60)), IsOk());
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kDeviceToHost, true, 60)), IsOk());
  EXPECT_THAT(recorder_->records(), IsEmpty());
  EXPECT_EQ(guard_.counters(Direction::kHostToDevice).allowed_events, 1);
  EXPECT_EQ(guard_.counters(Direction::kHostToDevice).allowed_bytes, 60);
  // At the threshold the level applies.
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, true, 64)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64 bytes")));
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kDeviceToHost, true, 64)), IsOk());
  EXPECT_EQ(recorder_->records().size(), 2u);
  // The threshold applies under a scope too.
  ScopedTransferGuard all(Level::kDisallowExplicit);
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kDeviceToDevice, true, 4)), IsOk());
  EXPECT_FALSE(guard_.Check(MakeEvent(Direction::kDeviceToDevice, true, 64)).ok());
}

TEST_F(TransferGuardTest, SinkReceivesTheExactEvents) {
  guard_.SetPolicy(Policy{.host_to_device = Level::kLog, .device_to_device = Level::kDisallow});
  const TransferEvent logged{.direction = Direction::kHostToDevice,
                             .is_explicit = false,
                             .operation = "MakeArrayFromHostBuffer",
                             .dtype = "bf16",
                             .shape = {2, 3},
                             .bytes = 12,
                             .dst_devices = {3, 1},
                             .dst_memory_kind = "device"};
  const TransferEvent refused{.direction = Direction::kDeviceToDevice,
                              .is_explicit = false,
                              .operation = "CopyArrays",
                              .dtype = "s8",
                              .shape = {7},
                              .bytes = 7,
                              .src_devices = {0},
                              .dst_devices = {4},
                              .src_memory_kind = "device",
                              .dst_memory_kind = "pinned_host"};
  const TransferEvent allowed = MakeEvent(Direction::kHostToDevice, true);
  EXPECT_THAT(guard_.Check(logged), IsOk());
  EXPECT_FALSE(guard_.Check(refused).ok());
  EXPECT_THAT(guard_.Check(allowed), IsOk());
  EXPECT_THAT(recorder_->records(),
              ElementsAre(RecordingTransferSink::Record{logged, Action::kLog},
                          RecordingTransferSink::Record{refused, Action::kDisallow}));
}

TEST_F(TransferGuardTest, SinksInOrderAndRemovable) {
  guard_.SetPolicy(Policy::Uniform(Level::kLogExplicit));
  auto second = std::make_shared<RecordingTransferSink>();
  const int id = guard_.AddSink(second);
  EXPECT_GT(id, 0);
  EXPECT_EQ(guard_.AddSink(nullptr), -1);
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kDeviceToHost, true)), IsOk());
  EXPECT_EQ(second->records().size(), 1u);
  guard_.RemoveSink(id);
  guard_.RemoveSink(id);     // unknown now: no-op
  guard_.RemoveSink(12345);  // never known: no-op
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kDeviceToHost, true)), IsOk());
  EXPECT_EQ(second->records().size(), 1u);
  EXPECT_EQ(recorder_->records().size(), 2u);
}

// A sink may call back into the guard (it is called without the guard's lock).
class ReentrantSink : public TransferSink {
 public:
  explicit ReentrantSink(TransferGuard& guard) : guard_(guard) {}
  void OnTransfer(const TransferEvent& event, Action action) override {
    seen_policy_ = guard_.policy();
    guard_.RemoveSink(id_);
  }
  TransferGuard& guard_;
  int id_ = 0;
  Policy seen_policy_;
};

TEST_F(TransferGuardTest, SinkMayCallBackIntoTheGuard) {
  guard_.SetPolicy(Policy::Uniform(Level::kLogExplicit));
  auto sink = std::make_shared<ReentrantSink>(guard_);
  sink->id_ = guard_.AddSink(sink);
  EXPECT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, true)), IsOk());
  EXPECT_EQ(sink->seen_policy_, Policy::Uniform(Level::kLogExplicit));
}

TEST_F(TransferGuardTest, DescriptionIsBuiltOnlyForLoggedOrRefusedEvents) {
  guard_.SetPolicy(Policy::Uniform(Level::kDisallow));  // explicit allowed, implicit refused
  guard_.SetDefaultLogSinkEnabled(true);
  const int64_t before = internal::DescriptionCallCountForTesting();
  for (int i = 0; i < 100; ++i) {
    ASSERT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, true)), IsOk());
  }
  EXPECT_EQ(internal::DescriptionCallCountForTesting(), before);
  EXPECT_FALSE(guard_.Check(MakeEvent(Direction::kHostToDevice, false)).ok());
  EXPECT_EQ(internal::DescriptionCallCountForTesting(),
            before + 1);  // the error message only
}

TEST_F(TransferGuardTest, DefaultLogSinkWritesWarnings) {
  guard_.SetPolicy(Policy{.host_to_device = Level::kDisallow, .device_to_host = Level::kLog});
  guard_.SetDefaultLogSinkEnabled(true);
  EXPECT_TRUE(guard_.default_log_sink_enabled());
  const TransferEvent event = MakeEvent(Direction::kDeviceToHost, false);
  ::testing::internal::CaptureStderr();
  EXPECT_THAT(guard_.Check(event), IsOk());
  EXPECT_FALSE(guard_.Check(MakeEvent(Direction::kHostToDevice, false)).ok());  // not written
  const std::string written = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(written, "WARNING: tessera: device-to-host transfer: " + event.Description() + "\n");

  guard_.SetDefaultLogSinkEnabled(false);
  ::testing::internal::CaptureStderr();
  EXPECT_THAT(guard_.Check(event), IsOk());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(LogTransferSinkTest, CustomWriter) {
  std::vector<std::string> lines;
  LogTransferSink sink([&](std::string_view line) { lines.emplace_back(line); });
  const TransferEvent event = MakeEvent(Direction::kHostToDevice, false);
  sink.OnTransfer(event, Action::kLog);
  sink.OnTransfer(event, Action::kDisallow);
  EXPECT_THAT(lines,
              ElementsAre("WARNING: tessera: host-to-device transfer: " + event.Description()));
  EXPECT_EQ(LogTransferSink::FormatLine(event), lines[0]);
}

TEST_F(TransferGuardTest, Counters) {
  guard_.SetPolicy(Policy{.host_to_device = Level::kLog,
                          .device_to_device = Level::kDisallow,
                          .allow_below_bytes = 10});
  ASSERT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, true, 100)), IsOk());
  ASSERT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false, 200)), IsOk());
  ASSERT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false, 300)), IsOk());
  ASSERT_THAT(guard_.Check(MakeEvent(Direction::kHostToDevice, false, 4)), IsOk());
  ASSERT_FALSE(guard_.Check(MakeEvent(Direction::kDeviceToDevice, false, 40)).ok());
  ASSERT_THAT(guard_.Check(MakeEvent(Direction::kDeviceToDevice, true, 80)), IsOk());
  EXPECT_EQ(guard_.counters(Direction::kHostToDevice),
            (TransferGuard::DirectionCounters{.allowed_events = 2,
                                              .logged_events = 2,
                                              .refused_events = 0,
                                              .allowed_bytes = 104,
                                              .logged_bytes = 500,
                                              .refused_bytes = 0}));
  EXPECT_EQ(
      guard_.counters(Direction::kDeviceToDevice),
      (TransferGuard::DirectionCounters{
          .allowed_events = 1, .refused_events = 1, .allowed_bytes = 80, .refused_bytes = 40}));
  EXPECT_EQ(guard_.counters(Direction::kDeviceToHost), TransferGuard::DirectionCounters{});
  guard_.ResetCounters();
  for (Direction d : kAllDirections) {
    EXPECT_EQ(guard_.counters(d), TransferGuard::DirectionCounters{});
  }
}

TEST_F(TransferGuardTest, DecideHasNoSideEffects) {
  guard_.SetPolicy(Policy::Uniform(Level::kDisallow));
  absl::StatusOr<Action> action = guard_.Decide(MakeEvent(Direction::kDeviceToHost, false));
  ASSERT_THAT(action, IsOk());
  EXPECT_EQ(*action, Action::kDisallow);
  EXPECT_EQ(*guard_.Decide(MakeEvent(Direction::kDeviceToHost, true)), Action::kAllow);
  EXPECT_EQ(*guard_.Decide(MakeEvent(Direction::kDeviceToHost, false, 0)), Action::kAllow);
  EXPECT_EQ(guard_.counters(Direction::kDeviceToHost), TransferGuard::DirectionCounters{});
  EXPECT_THAT(recorder_->records(), IsEmpty());
}

TEST_F(TransferGuardTest, EnforceReturnsTheActionWithItsStatus) {
  guard_.SetPolicy(Policy{.host_to_device = Level::kAllow,
                          .device_to_device = Level::kLog,
                          .device_to_host = Level::kDisallow});
  const TransferEvent upload = MakeEvent(Direction::kHostToDevice, false, 16);
  const TransferEvent reshard = MakeEvent(Direction::kDeviceToDevice, false, 32);
  const TransferEvent download = MakeEvent(Direction::kDeviceToHost, false, 64);

  const TransferGuard::Decision allowed = guard_.Enforce(upload);
  EXPECT_EQ(allowed.action, Action::kAllow);
  EXPECT_THAT(allowed.status, IsOk());
  const TransferGuard::Decision logged = guard_.Enforce(reshard);
  EXPECT_EQ(logged.action, Action::kLog);
  EXPECT_THAT(logged.status, IsOk());
  const TransferGuard::Decision refused = guard_.Enforce(download);
  EXPECT_EQ(refused.action, Action::kDisallow);
  EXPECT_THAT(refused.status,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Disallowed device-to-host transfer: " + download.Description()));

  // Counted and reported exactly as Check counts and reports.
  EXPECT_EQ(guard_.counters(Direction::kHostToDevice),
            (TransferGuard::DirectionCounters{.allowed_events = 1, .allowed_bytes = 16}));
  EXPECT_EQ(guard_.counters(Direction::kDeviceToDevice),
            (TransferGuard::DirectionCounters{.logged_events = 1, .logged_bytes = 32}));
  EXPECT_EQ(guard_.counters(Direction::kDeviceToHost),
            (TransferGuard::DirectionCounters{.refused_events = 1, .refused_bytes = 64}));
  EXPECT_THAT(recorder_->records(),
              ElementsAre(RecordingTransferSink::Record{reshard, Action::kLog},
                          RecordingTransferSink::Record{download, Action::kDisallow}));
  // Check is Enforce's status.
  EXPECT_THAT(guard_.Check(download),
              StatusIs(absl::StatusCode::kInvalidArgument, std::string(refused.status.message())));
  EXPECT_EQ(guard_.counters(Direction::kDeviceToHost).refused_events, 2);
}

TEST_F(TransferGuardTest, EnforceZeroByteAndInvalidEvents) {
  guard_.SetPolicy(Policy::Uniform(Level::kDisallowExplicit));
  const TransferGuard::Decision zero = guard_.Enforce(MakeEvent(Direction::kHostToDevice, true, 0));
  EXPECT_EQ(zero.action, Action::kAllow);
  EXPECT_THAT(zero.status, IsOk());
  TransferEvent negative = MakeEvent(Direction::kHostToDevice, true);
  negative.bytes = -1;
  const TransferGuard::Decision invalid = guard_.Enforce(negative);
  EXPECT_EQ(invalid.action, Action::kDisallow);
  EXPECT_THAT(invalid.status,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative byte count")));
  // Neither counted nor reported.
  EXPECT_EQ(guard_.counters(Direction::kHostToDevice), TransferGuard::DirectionCounters{});
  EXPECT_THAT(recorder_->records(), IsEmpty());
}

TEST_F(TransferGuardTest, InvalidEvents) {
  TransferEvent negative = MakeEvent(Direction::kHostToDevice, true);
  negative.bytes = -1;
  EXPECT_THAT(guard_.Check(negative),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative byte count")));
  EXPECT_THAT(guard_.Decide(negative),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative byte count")));
  TransferEvent bad_direction = MakeEvent(Direction::kHostToDevice, true);
  bad_direction.direction = static_cast<Direction>(7);
  EXPECT_THAT(guard_.Check(bad_direction),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("direction 7")));
  EXPECT_EQ(guard_.counters(Direction::kHostToDevice), TransferGuard::DirectionCounters{});
}

}  // namespace
}  // namespace tessera::guard
