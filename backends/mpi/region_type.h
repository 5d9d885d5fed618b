#ifndef TESSERA_BACKENDS_MPI_REGION_TYPE_H_
#define TESSERA_BACKENDS_MPI_REGION_TYPE_H_

// RegionType: the MPI derived datatype that describes a strided host region (ifrt/spi/
// transport.h) relative to its first element, so that a send or receive of one item of it moves
// the region straight from or into the caller's memory. The innermost contiguous run (dimensions
// of extent 1 and dimensions whose stride is the run so far) is bytes; each outer dimension is an
// hvector over it.
//
// Any region is described: a run of more than INT_MAX bytes becomes contiguous chunks of 1 GiB
// plus a remainder (MPI_Type_create_struct), and an outer extent of more than INT_MAX elements an
// hvector of chunks plus a remainder, since MPI's counts are ints. The type is built from MPI_BYTE
// alone, so MPI_Type_size_x of it is region.bytes() and MPI_Get_elements_x on a receive of it
// counts the bytes that arrived.
//
//   MPI_Datatype type = RegionType(region);
//   MPI_Isend(static_cast<char*>(region.base) + region.offset, 1, type, peer, tag, comm, &req);
//   ...
//   MPI_Type_free(&type);   // once the operation completed
//
// Stateless; thread-safe as MPI's datatype calls are (MPI must be initialized).

#include <mpi.h>

#include "ifrt/spi/transport.h"

namespace tessera::mpi {

// A committed datatype; the caller frees it.
MPI_Datatype RegionType(const HostRegion& region);

}  // namespace tessera::mpi

#endif  // TESSERA_BACKENDS_MPI_REGION_TYPE_H_
