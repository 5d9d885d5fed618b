#ifndef TESSERA_BACKENDS_MPI_TRANSPORT_FACTORY_H_
#define TESSERA_BACKENDS_MPI_TRANSPORT_FACTORY_H_

// CreateMpiTransport: the transport between the processes of MPI_COMM_WORLD
// (ifrt/spi/transport.h), for CreateClient with Distributed::kMpi. Declared without naming MPI, so
// that the client factory compiles in builds without MPI (then this returns UNAVAILABLE).
//
// MPI is initialized here when the caller has not (MPI_Init_thread, asking for
// MPI_THREAD_MULTIPLE) and then finalized at exit; a caller who initialized MPI itself must ask
// for at least MPI_THREAD_SERIALIZED and finalizes it itself, after destroying its clients.
// Thread-safe.

#include <memory>

#include "absl/status/statusor.h"
#include "ifrt/spi/transport.h"

namespace tessera {

struct MpiTransportOptions {
  // How long one operation may wait (an agreement, a send, a receive) before the transport calls
  // MPI_Abort naming it, in seconds; 0 waits forever. CreateClient takes it from
  // TESSERA_MPI_TIMEOUT_S (docs/multi-process.md), which it checks.
  double timeout_s = 600;
};

// UNAVAILABLE when this build has no MPI or MPI cannot be initialized; FAILED_PRECONDITION when
// the caller initialized MPI with a thread level below MPI_THREAD_SERIALIZED or already
// finalized it. Collective: every process of MPI_COMM_WORLD calls it.
absl::StatusOr<std::unique_ptr<Transport>> CreateMpiTransport(
    const MpiTransportOptions& options = {});

// What the MPI transports of this process received since it started, by path (for tests and
// benchmarks; all zero in a build without MPI).
struct MpiTransportCounters {
  // Copied by this process straight out of another process's shared block (one copy per byte).
  int64_t bytes_received_mapped = 0;
  // Arrived as messages (MPI's copy-in/copy-out between processes of one host).
  int64_t bytes_received_by_message = 0;
  // Shared-block frames this process could not map, and asked the data for instead.
  int64_t peer_map_fallbacks = 0;
};
MpiTransportCounters GetMpiTransportCounters();

}  // namespace tessera

#endif  // TESSERA_BACKENDS_MPI_TRANSPORT_FACTORY_H_
