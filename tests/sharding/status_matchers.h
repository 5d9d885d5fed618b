// tests/sharding/status_matchers.h: StatusIs / IsOk gMock matchers for
// absl::Status and absl::StatusOr<T> (this Abseil predates its own).
#ifndef TESSERA_TESTS_SHARDING_STATUS_MATCHERS_H_
#define TESSERA_TESTS_SHARDING_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace tessera::sharding::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER_P2(StatusIs, code, message_matcher, "") {
  const absl::Status& status = GetStatus(arg);
  if (status.code() != code) {
    *result_listener << "status is " << status.ToString();
    return false;
  }
  return ::testing::ExplainMatchResult(
      message_matcher, std::string(status.message()), result_listener);
}

MATCHER(IsOk, "") {
  const absl::Status& status = GetStatus(arg);
  if (!status.ok()) *result_listener << "status is " << status.ToString();
  return status.ok();
}

}  // namespace tessera::sharding::testing

#endif  // TESSERA_TESTS_SHARDING_STATUS_MATCHERS_H_
