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

// UNAVAILABLE when this build has no MPI or MPI cannot be initialized; FAILED_PRECONDITION when
// the caller initialized MPI with a thread level below MPI_THREAD_SERIALIZED or already
// finalized it.
absl::StatusOr<std::unique_ptr<Transport>> CreateMpiTransport();

}  // namespace tessera

#endif  // TESSERA_BACKENDS_MPI_TRANSPORT_FACTORY_H_
