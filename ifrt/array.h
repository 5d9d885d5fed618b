#ifndef TESSERA_IFRT_ARRAY_H_
#define TESSERA_IFRT_ARRAY_H_

// Array: an immutable n-dimensional array of one dtype, sharded over the devices of its sharding.
// Each device of the sharding holds one shard (the box the sharding assigns it).
//
//   ArrayRef a = *client->MakeArrayFromHostBuffer(data, DType(DType::kF32), Shape({4, 4}),
//                                                std::nullopt, sharding, semantics, nullptr);
//   std::vector<float> out(16);
//   absl::Status s = a->CopyToHostBuffer(out.data(), std::nullopt,
//                                        ArrayCopySemantics::kAlwaysCopy).Await();
//
// Arrays are created by a Client and held through ArrayRef. They are never modified; operations
// that "change" an array create new ones. All methods are thread-safe.
//
// Errors: calls on a deleted array return FAILED_PRECONDITION ("Array has been deleted"); the
// error of a failed producer (a failed copy, a poisoned input) arrives on GetReadyFuture() and on
// every future of an operation that reads the array.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/copy_semantics.h"
#include "ifrt/dtype.h"
#include "ifrt/future.h"
#include "ifrt/shape.h"
#include "ifrt/sharding.h"
#include "ifrt/transfer_options.h"

namespace tessera {

class Client;
class Array;
using ArrayRef = std::shared_ptr<Array>;

class Array {
 public:
  Array() = default;
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  virtual ~Array() = default;

  virtual Client* client() const = 0;
  virtual DType dtype() const = 0;
  virtual const Shape& shape() const = 0;
  virtual const Sharding& sharding() const = 0;
  virtual ShardingRef shared_ptr_sharding() const = 0;

  // Set once every shard's data is in place, or with the error that prevented it.
  virtual Future<> GetReadyFuture() const = 0;

  // Releases the shards. Idempotent; IsDeleted() is true as soon as it returns. Operations already
  // enqueued that read the array still complete (they hold the buffers). The future is set when the
  // array's pending writes have finished.
  virtual Future<> Delete() = 0;
  virtual bool IsDeleted() const = 0;

  // One single-device array per shard, in device-list order. kAlwaysCopy copies each shard;
  // kReuseInput shares the buffers; kDonateInput shares them and deletes this array.
  // FAILED_PRECONDITION for a deleted array.
  virtual absl::StatusOr<std::vector<ArrayRef>> DisassembleIntoSingleDeviceArrays(
      ArrayCopySemantics semantics) = 0;

  // A single-device array holding the whole array, taken from one of the shards of a fully
  // replicated array (the first device's). INVALID_ARGUMENT unless IsFullyReplicated().
  virtual absl::StatusOr<ArrayRef> FullyReplicatedShard(ArrayCopySemantics semantics) = 0;

  // Copies the whole array into `data`, laid out row-major or with `byte_strides` (one per
  // dimension, in bytes; may be negative-free, non-compact, column-major). `data` must stay valid
  // until the returned future is set. Each region is read from one replica. The transfer guard is
  // asked once (device-to-host) before any byte moves; a refusal is the future's error.
  // Errors on the future: FAILED_PRECONDITION (deleted), INVALID_ARGUMENT (byte_strides rank,
  // null data with a non-zero size, a refused transfer), and the array's own error.
  virtual Future<> CopyToHostBuffer(void* data,
                                    std::optional<absl::Span<const int64_t>> byte_strides,
                                    ArrayCopySemantics semantics, TransferOptions options = {}) = 0;

  // The bytes of a single-device array whose memory the host can address (a CPU device), laid
  // out row-major, for zero-copy export (DLPack, the C API): the returned pointer is their address
  // and keeps the buffer alive while any copy of it is held, even after Delete(). Waits for
  // nothing: read them only once GetReadyFuture() is set; never write them (arrays are immutable).
  // FAILED_PRECONDITION for a deleted array; INVALID_ARGUMENT for an array on several devices;
  // UNIMPLEMENTED where the memory is not host-addressable or the client does not offer it.
  virtual absl::StatusOr<std::shared_ptr<void>> AcquireExternalReference() {
    return absl::UnimplementedError("this array offers no external reference");
  }

  // "Array(f32[8,8], ShardingParamSharding(...), ready)"
  virtual std::string DebugString() const = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_ARRAY_H_
