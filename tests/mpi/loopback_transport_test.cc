// The transport contract (tests/conformance/transport_suite.h) over the loopback hub: every
// participant a thread, for 2 and 3 participants.

#include "tests/mpi/loopback_transport.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/conformance/transport_suite.h"

namespace tessera::testing {
namespace {

class LoopbackTransportContract : public ::testing::TestWithParam<int> {};

TEST_P(LoopbackTransportContract, EveryParticipantPassesIt) {
  const int n = GetParam();
  LoopbackHub hub(n);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int i = 0; i < n; ++i) transports.push_back(hub.Transport(i));
  std::vector<std::thread> participants;
  for (int i = 0; i < n; ++i) {
    participants.emplace_back([&, i] { RunTransportContract(*transports[i]); });
  }
  for (std::thread& p : participants) p.join();
}

INSTANTIATE_TEST_SUITE_P(Participants, LoopbackTransportContract, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat("n", info.param);
                         });

}  // namespace
}  // namespace tessera::testing
