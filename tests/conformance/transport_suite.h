#ifndef TESSERA_TESTS_CONFORMANCE_TRANSPORT_SUITE_H_
#define TESSERA_TESTS_CONFORMANCE_TRANSPORT_SUITE_H_

// The contract of ifrt/spi/transport.h, run on one participant's end of a transport while every
// other participant runs it on theirs at the same time (threads over the loopback hub of
// tests/mpi/loopback_transport.h; processes under mpirun over MpiTransport). Every transport
// passes it:
//   identity        0 <= process_index < process_count (at least 2); AllGather in process order
//   agreement       equal calls agree on a tag base, and successive calls' tag ranges do not
//                   overlap; different fingerprints are INVALID_ARGUMENT on every process; one
//                   process's refusal is that code and message on every process
//   messages        dense messages between every pair arrive whole, matched by (peer, tag) and
//                   not by order; strided regions on both ends move the box and nothing else
//   failures        the empty message of a failed source, and a message of another size, fail the
//                   receive with INTERNAL and leave its region as it was; every future resolves
// Failures are reported through gtest, naming the participant.

#include "ifrt/spi/transport.h"

namespace tessera::testing {

// Runs every case in order on `transport` (the first call must be its AllGather, so run it on a
// fresh transport). Blocks until every participant has run it.
void RunTransportContract(Transport& transport);

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_CONFORMANCE_TRANSPORT_SUITE_H_
