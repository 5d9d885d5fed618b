#include "guard/scoped_transfer_guard.h"

#include <memory>
#include <optional>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/level.h"
#include "guard/policy.h"
#include "guard/transfer_guard.h"
#include "tests/guard/test_events.h"
#include "tests/testing/status_matchers.h"

namespace tessera::guard {
namespace {

using ::tessera::testing::IsOk;
using testing::MakeEvent;

TEST(ScopedTransferGuardTest, RestoresOnExit) {
  TransferGuard guard(Policy::Uniform(Level::kLog));
  {
    ScopedTransferGuard outer(Level::kDisallow);
    EXPECT_EQ(guard.EffectiveLevel(Direction::kHostToDevice), Level::kDisallow);
    {
      ScopedTransferGuard inner(Level::kLogExplicit);
      EXPECT_EQ(guard.EffectiveLevel(Direction::kHostToDevice), Level::kLogExplicit);
    }
    EXPECT_EQ(guard.EffectiveLevel(Direction::kHostToDevice), Level::kDisallow);
  }
  EXPECT_EQ(guard.EffectiveLevel(Direction::kHostToDevice), Level::kLog);
  EXPECT_EQ(internal::InnermostScopedLevel(guard.id(), Direction::kHostToDevice), std::nullopt);
}

TEST(ScopedTransferGuardTest, InnermostPerDirection) {
  TransferGuard guard;
  ScopedTransferGuard d2h(Direction::kDeviceToHost, Level::kLog);
  ScopedTransferGuard all(Level::kDisallow);  // overrides d2h too
  EXPECT_EQ(guard.EffectiveLevel(Direction::kDeviceToHost), Level::kDisallow);
  {
    ScopedTransferGuard h2d(Direction::kHostToDevice,
                            Level::kAllow);  // overrides only h2d
    EXPECT_EQ(guard.EffectiveLevel(Direction::kHostToDevice), Level::kAllow);
    EXPECT_EQ(guard.EffectiveLevel(Direction::kDeviceToDevice), Level::kDisallow);
    EXPECT_EQ(guard.EffectiveLevel(Direction::kDeviceToHost), Level::kDisallow);
  }
  EXPECT_EQ(guard.EffectiveLevel(Direction::kHostToDevice), Level::kDisallow);
}

TEST(ScopedTransferGuardTest, OutOfOrderDestructionRemovesOnlyItself) {
  TransferGuard guard;
  auto outer = std::make_unique<ScopedTransferGuard>(Level::kLog);
  auto inner = std::make_unique<ScopedTransferGuard>(Level::kDisallow);
  outer.reset();
  EXPECT_EQ(guard.EffectiveLevel(Direction::kDeviceToDevice), Level::kDisallow);
  inner.reset();
  EXPECT_EQ(guard.EffectiveLevel(Direction::kDeviceToDevice), Level::kAllow);
}

TEST(ScopedTransferGuardTest, DoesNotReachAnotherThread) {
  TransferGuard guard;
  guard.SetDefaultLogSinkEnabled(false);
  ScopedTransferGuard disallow(Level::kDisallowExplicit);
  EXPECT_FALSE(guard.Check(MakeEvent(Direction::kHostToDevice, true)).ok());
  absl::Status other_thread_status;
  Level other_thread_level = Level::kDisallow;
  std::thread thread([&] {
    other_thread_level = guard.EffectiveLevel(Direction::kHostToDevice);
    other_thread_status = guard.Check(MakeEvent(Direction::kHostToDevice, true));
  });
  thread.join();
  EXPECT_EQ(other_thread_level, Level::kAllow);
  EXPECT_THAT(other_thread_status, IsOk());
}

TEST(ScopedTransferGuardTest, NewThreadStartsWithoutOverrideEvenInsideThreadScope) {
  TransferGuard guard(Policy::Uniform(Level::kLog));
  std::thread thread([&] {
    ScopedTransferGuard allow(Level::kAllow);
    std::thread inner(
        [&] { EXPECT_EQ(guard.EffectiveLevel(Direction::kDeviceToHost), Level::kLog); });
    inner.join();
    EXPECT_EQ(guard.EffectiveLevel(Direction::kDeviceToHost), Level::kAllow);
  });
  thread.join();
}

TEST(ScopedTransferGuardTest, GuardLimitedScopes) {
  TransferGuard a;
  TransferGuard b(Policy::Uniform(Level::kLog));
  {
    ScopedTransferGuard only_a(a, Level::kDisallow);
    EXPECT_EQ(a.EffectiveLevel(Direction::kHostToDevice), Level::kDisallow);
    EXPECT_EQ(b.EffectiveLevel(Direction::kHostToDevice), Level::kLog);
    {
      ScopedTransferGuard only_b_d2d(b, Direction::kDeviceToDevice, Level::kAllow);
      EXPECT_EQ(b.EffectiveLevel(Direction::kDeviceToDevice), Level::kAllow);
      EXPECT_EQ(b.EffectiveLevel(Direction::kHostToDevice), Level::kLog);
      EXPECT_EQ(a.EffectiveLevel(Direction::kDeviceToDevice), Level::kDisallow);
    }
    {
      // A process-wide scope inside a guard-limited one overrides it; and vice
      // versa.
      ScopedTransferGuard everyone(Level::kLogExplicit);
      EXPECT_EQ(a.EffectiveLevel(Direction::kHostToDevice), Level::kLogExplicit);
      ScopedTransferGuard only_a_again(a, Direction::kHostToDevice, Level::kAllow);
      EXPECT_EQ(a.EffectiveLevel(Direction::kHostToDevice), Level::kAllow);
      EXPECT_EQ(b.EffectiveLevel(Direction::kHostToDevice), Level::kLogExplicit);
    }
  }
  EXPECT_EQ(a.EffectiveLevel(Direction::kHostToDevice), Level::kAllow);
}

TEST(ScopedTransferGuardTest, ScopeOutlivingItsGuardDoesNotDangle) {
  auto doomed = std::make_unique<TransferGuard>();
  ScopedTransferGuard scope(*doomed, Level::kDisallowExplicit);
  doomed.reset();
  TransferGuard fresh;  // a new guard never shares the destroyed one's id
  EXPECT_EQ(fresh.EffectiveLevel(Direction::kHostToDevice), Level::kAllow);
  EXPECT_THAT(fresh.Check(MakeEvent(Direction::kHostToDevice, true)), IsOk());
}

}  // namespace
}  // namespace tessera::guard
