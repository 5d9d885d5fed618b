// libFuzzer target for guard::Policy::Parse (the TESSERA_TRANSFER_GUARD and CLI
// text form): it must never crash, fail only with INVALID_ARGUMENT, and on
// success its canonical ToString() must parse back to an equal policy that
// prints identically.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "guard/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ::tessera::guard::Policy;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Policy> policy = Policy::Parse(text);
  if (!policy.ok()) {
    if (policy.status().code() != absl::StatusCode::kInvalidArgument) {
      std::fprintf(stderr, "unexpected code: %s\n", policy.status().ToString().c_str());
      std::abort();
    }
    return 0;
  }
  if (policy->allow_below_bytes < 0) std::abort();
  const std::string printed = policy->ToString();
  absl::StatusOr<Policy> reparsed = Policy::Parse(printed);
  if (!reparsed.ok() || !(*reparsed == *policy) || reparsed->ToString() != printed) {
    std::fprintf(stderr, "round trip of '%s' failed\n", printed.c_str());
    std::abort();
  }
  return 0;
}
