// tests/testing/status_matchers.h: gmock matchers and assertion macros for
// absl::Status and absl::StatusOr, shared by every test folder (Abseil 20220623
// ships none publicly).
//
//   EXPECT_THAT(Policy::Parse("h2d=maybe"),
//               StatusIs(absl::StatusCode::kInvalidArgument,
//                        HasSubstr("maybe")));
//   ASSERT_OK_AND_ASSIGN(ArrayRef a, client->MakeArrayFromHostBuffer(...));

#ifndef TESSERA_TESTS_TESTING_STATUS_MATCHERS_H_
#define TESSERA_TESTS_TESTING_STATUS_MATCHERS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// The status (of a Status or StatusOr) has `code` and a message matching
// `message_matcher`.
MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "whose status is " << status.ToString();
  return status.code() == code &&
         ::testing::Matches(message_matcher)(std::string(status.message()));
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "whose status is " << status.ToString();
  return status.ok();
}

}  // namespace tessera::testing

#define TESSERA_TEST_CONCAT_INNER(a, b) a##b
#define TESSERA_TEST_CONCAT(a, b) TESSERA_TEST_CONCAT_INNER(a, b)
// Declares `lhs` from the value of a StatusOr, failing the test on an error.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL(TESSERA_TEST_CONCAT(status_or_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(var, lhs, expr)   \
  auto var = (expr);                                \
  ASSERT_TRUE(var.ok()) << var.status().ToString(); \
  lhs = *std::move(var)
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::tessera::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::tessera::testing::IsOk())

#endif  // TESSERA_TESTS_TESTING_STATUS_MATCHERS_H_
