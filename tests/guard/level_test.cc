#include "guard/level.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::guard {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

TEST(LevelTest, DecideIsJaxTable) {
  // level, explicit, implicit
  struct Row {
    Level level;
    Action on_explicit;
    Action on_implicit;
  };
  const Row kTable[] = {
      {Level::kAllow, Action::kAllow, Action::kAllow},
      {Level::kLog, Action::kAllow, Action::kLog},
      {Level::kDisallow, Action::kAllow, Action::kDisallow},
      {Level::kLogExplicit, Action::kLog, Action::kLog},
      {Level::kDisallowExplicit, Action::kDisallow, Action::kDisallow},
  };
  for (const Row& row : kTable) {
    SCOPED_TRACE(LevelName(row.level));
    EXPECT_EQ(Decide(row.level, /*is_explicit=*/true), row.on_explicit);
    EXPECT_EQ(Decide(row.level, /*is_explicit=*/false), row.on_implicit);
  }
}

TEST(LevelTest, Names) {
  EXPECT_EQ(LevelName(Level::kAllow), "allow");
  EXPECT_EQ(LevelName(Level::kLog), "log");
  EXPECT_EQ(LevelName(Level::kDisallow), "disallow");
  EXPECT_EQ(LevelName(Level::kLogExplicit), "log_explicit");
  EXPECT_EQ(LevelName(Level::kDisallowExplicit), "disallow_explicit");
  EXPECT_EQ(DirectionName(Direction::kHostToDevice), "host-to-device");
  EXPECT_EQ(DirectionName(Direction::kDeviceToDevice), "device-to-device");
  EXPECT_EQ(DirectionName(Direction::kDeviceToHost), "device-to-host");
  EXPECT_EQ(DirectionShortName(Direction::kHostToDevice), "h2d");
  EXPECT_EQ(DirectionShortName(Direction::kDeviceToDevice), "d2d");
  EXPECT_EQ(DirectionShortName(Direction::kDeviceToHost), "d2h");
  EXPECT_EQ(ActionName(Action::kAllow), "allow");
  EXPECT_EQ(ActionName(Action::kLog), "log");
  EXPECT_EQ(ActionName(Action::kDisallow), "disallow");
}

TEST(LevelTest, ParseLevelRoundTripsEveryName) {
  for (Level level : kAllLevels) {
    absl::StatusOr<Level> parsed = ParseLevel(LevelName(level));
    ASSERT_THAT(parsed, IsOk());
    EXPECT_EQ(*parsed, level);
  }
}

TEST(LevelTest, ParseLevelIgnoresCaseAndBlanks) {
  absl::StatusOr<Level> parsed = ParseLevel("  Disallow_Explicit ");
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(*parsed, Level::kDisallowExplicit);
}

TEST(LevelTest, ParseLevelRejectsUnknown) {
  EXPECT_THAT(ParseLevel("forbid"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'forbid'")));
  EXPECT_THAT(ParseLevel(""), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("''")));
  EXPECT_THAT(ParseLevel("log-explicit"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("log_explicit")));
}

}  // namespace
}  // namespace tessera::guard
