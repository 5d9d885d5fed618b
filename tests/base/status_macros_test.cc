#include "base/status_macros.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

absl::Status Fails(int* calls) {
  ++*calls;
  return absl::NotFoundError("no such thing");
}
absl::StatusOr<std::unique_ptr<int>> Gives(int value, int* calls) {
  ++*calls;
  return std::make_unique<int>(value);
}
absl::StatusOr<std::unique_ptr<int>> Refuses(int* calls) {
  ++*calls;
  return absl::InvalidArgumentError("bad value");
}

absl::Status ReturnIfError(bool fail, int* calls, bool* reached_end) {
  TESSERA_RETURN_IF_ERROR(fail ? Fails(calls) : absl::OkStatus());
  *reached_end = true;
  return absl::OkStatus();
}

absl::StatusOr<int> AssignOrReturn(bool fail, int* calls) {
  // A move-only value, assigned into a declaration and into an existing variable.
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<int> first, Gives(20, calls));
  std::unique_ptr<int> second;
  TESSERA_ASSIGN_OR_RETURN(second, fail ? Refuses(calls) : Gives(22, calls));
  return *first + *second;
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheErrorAndEvaluatesOnce) {
  int calls = 0;
  bool reached_end = false;
  EXPECT_THAT(ReturnIfError(true, &calls, &reached_end),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no such thing")));
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(reached_end);
  EXPECT_OK(ReturnIfError(false, &calls, &reached_end));
  EXPECT_TRUE(reached_end);
}

TEST(StatusMacrosTest, AssignOrReturnMovesTheValueOrReturnsTheError) {
  int calls = 0;
  absl::StatusOr<int> sum = AssignOrReturn(false, &calls);
  ASSERT_OK(sum.status());
  EXPECT_EQ(*sum, 42);
  EXPECT_EQ(calls, 2);
  calls = 0;
  EXPECT_THAT(AssignOrReturn(true, &calls).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad value")));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace tessera
