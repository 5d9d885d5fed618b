#ifndef TESSERA_IFRT_SPI_TRANSPORT_H_
#define TESSERA_IFRT_SPI_TRANSPORT_H_

// Transport: what a multi-process client needs from the engine that connects its processes
// (backends/mpi implements it over MPI): who this process is, one gather at creation, a small
// agreement before every collective call, and cross-process send/receive of strided host memory.
// A transport is not a platform: it owns no devices; the runtime (ifrt/runtime/distributed_*)
// decides what moves, the transport only carries bytes between host memories.
//
// Collective methods (AllGather, Agree) must be called by every process in the same order; the
// runtime's collective entry points (ReshardArrays, CopyArrays) are called that way by contract.
// Send and Receive are matched by (peer, tag): the runtime derives tags from Agree's tag base, so
// the messages of concurrent calls never mix.
//
// Ownership: the runtime client owns its transport. Thread-safety: every method may be called
// from any thread, including from callbacks of futures; the transport makes its own engine calls
// from one communication thread. Futures it returns always resolve: with an error when the peer
// sent an empty message for a failed source, or when the engine fails; a dead peer ends the job
// (MPI's default error handler), it never leaves a waiter hanging.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/checked_math.h"
#include "ifrt/future.h"
#include "ifrt/shape.h"
#include "ifrt/strided_copy.h"

namespace tessera {

// A strided box of host memory: `extent` elements of `element_bytes`, the first at
// `base + offset`, each dimension stepping `byte_strides` bytes. Borrowed: it must stay valid
// until the future of the send or receive that names it is set.
struct HostRegion {
  void* base = nullptr;
  int64_t offset = 0;
  int64_t element_bytes = 1;
  Index extent;  // empty: one element
  Index byte_strides;

  // A dense, row-major region of `extent` at `base` (offset 0).
  static HostRegion Dense(void* base, Index extent, int64_t element_bytes) {
    HostRegion r;
    r.base = base;
    r.element_bytes = element_bytes;
    r.byte_strides = StridedCopy::RowMajorByteStrides(extent, element_bytes);
    r.extent = std::move(extent);
    return r;
  }
  // The bytes the region holds, or -1 when that count does not fit in int64_t (never for a
  // region inside a real buffer: a transport treats -1 as a malformed region).
  int64_t bytes() const { return base::CheckedByteCount(extent, element_bytes).value_or(-1); }
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int process_index() const = 0;
  virtual int process_count() const = 0;

  // Collective, blocking: every process's `local`, in process order. Called only at client
  // creation, before any method but the Agree of CreateClient on the processes' local checks.
  // UNAVAILABLE when the engine fails.
  virtual absl::StatusOr<std::vector<std::string>> AllGather(const std::string& local) = 0;

  // Collective, blocking: the decision of one collective call of `op`, taken before any byte of
  // it moves. Every process passes its own verdict (`local`: OK, or why it refuses: a guard
  // refusal, an argument error) and a fingerprint of the call's arguments. Returns the call's tag
  // base (tags base .. base + messages - 1 belong to the call) when every process said OK with
  // the same fingerprint and message count; else, on every process: the process's own error if
  // it refused, else the lowest refusing process's code and message, else INVALID_ARGUMENT
  // saying the processes passed different arguments.
  virtual absl::StatusOr<int64_t> Agree(std::string_view op, uint64_t fingerprint, int64_t messages,
                                        const absl::Status& local) = 0;

  // Sends `region` to process `peer` with `tag` once `after` is set (when it carries an error, an
  // empty message goes instead, so that the receiver fails rather than waits). `keep_alive` is
  // held until the send is done. The future is set when `region` may be reused.
  virtual Future<> Send(int peer, int64_t tag, HostRegion region, Future<> after,
                        std::shared_ptr<void> keep_alive) = 0;
  // Receives the message of (`peer`, `tag`) into `region`. The future is set once the bytes are
  // in place; INTERNAL when the message is empty (the sender's source failed) or of another
  // size.
  virtual Future<> Receive(int peer, int64_t tag, HostRegion region,
                           std::shared_ptr<void> keep_alive) = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_SPI_TRANSPORT_H_
