// CreateMpiTransport in a build without MPI (TESSERA_ENABLE_MPI=OFF or no MPI found).
#include "backends/mpi/transport_factory.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Transport>> CreateMpiTransport(const MpiTransportOptions&) {
  return absl::UnavailableError(
      "this build of Tessera has no MPI (install libopenmpi-dev and rebuild with "
      "TESSERA_ENABLE_MPI=ON)");
}

MpiTransportCounters GetMpiTransportCounters() { return {}; }

}  // namespace tessera
