// The transport contract (tests/conformance/transport_suite.h) over MpiTransport: every process
// of the mpirun job runs it on its end of the transport between the processes of
// MPI_COMM_WORLD.

#include <cstdio>
#include <memory>

#include "backends/mpi/transport_factory.h"
#include "gtest/gtest.h"
#include "tests/conformance/transport_suite.h"

namespace tessera::testing {
namespace {

std::unique_ptr<Transport>* g_transport = nullptr;

TEST(MpiTransportContract, EveryProcessPassesIt) { RunTransportContract(**g_transport); }

}  // namespace
}  // namespace tessera::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Bounded waits: a process left waiting by another's failure ends the job instead of hanging.
  tessera::MpiTransportOptions options;
  options.timeout_s = 120;
  absl::StatusOr<std::unique_ptr<tessera::Transport>> transport =
      tessera::CreateMpiTransport(options);
  if (!transport.ok()) {
    std::fprintf(stderr, "CreateMpiTransport: %s\n", transport.status().ToString().c_str());
    return 1;
  }
  tessera::testing::g_transport = &*transport;
  const int rc = RUN_ALL_TESTS();
  transport->reset();  // before MPI is finalized at exit
  return rc;
}
