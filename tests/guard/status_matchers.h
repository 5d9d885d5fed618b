// tests/guard/status_matchers.h: StatusIs / IsOk gmock matchers for
// absl::Status and StatusOr. (Abseil 20220623 ships none publicly.)

#ifndef TESSERA_TESTS_GUARD_STATUS_MATCHERS_H_
#define TESSERA_TESTS_GUARD_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace tessera::guard::testing {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code) +
               " and a message that " +
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

}  // namespace tessera::guard::testing

#endif  // TESSERA_TESTS_GUARD_STATUS_MATCHERS_H_
