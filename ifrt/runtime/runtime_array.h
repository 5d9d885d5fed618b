#ifndef TESSERA_IFRT_RUNTIME_RUNTIME_ARRAY_H_
#define TESSERA_IFRT_RUNTIME_RUNTIME_ARRAY_H_

// RuntimeArray: the generic runtime's Array. One Shard per device of its
// sharding (slot order): a platform buffer holding the slot's box densely in
// row-major order, and the future of the writes that fill it. Buffers are
// shared (kReuseInput, aliasing reshards) through PlatformBufferRef, and stay
// alive while operations that touch them are in flight.
//
// Thread-safe: the shard list is guarded by a mutex and cleared by Delete().
// Errors: every Array method returns RESOURCE_EXHAUSTED naming the call when memory runs out
// inside it (CatchAllocationFailure), never an exception.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "ifrt/array.h"
#include "ifrt/runtime/placement.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/spi/platform.h"
#include "sharding/shard_layout.h"

namespace tessera::runtime {

class RuntimeClient;

struct Shard {
  PlatformBufferRef buffer;
  Future<> ready;
};

class RuntimeArray final : public Array {
 public:
  // `placement` is the sharding's layout for `shape` and a memory per device of `sharding`;
  // `shards` has one entry per device. The placement is shared, not copied.
  RuntimeArray(RuntimeClient* client, DType dtype, Shape shape, ShardingRef sharding,
               Placement placement, std::vector<Shard> shards);

  Client* client() const override;
  DType dtype() const override { return dtype_; }
  const Shape& shape() const override { return shape_; }
  const Sharding& sharding() const override { return *sharding_; }
  ShardingRef shared_ptr_sharding() const override { return sharding_; }
  Future<> GetReadyFuture() const override;
  Future<> Delete() override;
  bool IsDeleted() const override;
  absl::StatusOr<std::vector<ArrayRef>> DisassembleIntoSingleDeviceArrays(
      ArrayCopySemantics semantics) override;
  absl::StatusOr<ArrayRef> FullyReplicatedShard(ArrayCopySemantics semantics) override;
  Future<> CopyToHostBuffer(void* data, std::optional<absl::Span<const int64_t>> byte_strides,
                            ArrayCopySemantics semantics, TransferOptions options) override;
  absl::StatusOr<std::shared_ptr<void>> AcquireExternalReference() override;
  std::string DebugString() const override;

  RuntimeClient* runtime_client() const { return client_; }
  const sharding::ShardLayout& layout() const { return *placement_.layout; }
  const std::vector<RuntimeMemory*>& memories() const { return *placement_.memories; }
  const Placement& placement() const { return placement_; }
  int64_t element_bytes() const { return *dtype_.byte_size(); }
  // The shards, or FAILED_PRECONDITION when the array has been deleted.
  absl::StatusOr<std::vector<Shard>> shards() const;
  // FAILED_PRECONDITION "Array has been deleted: ..." unless the array is live.
  absl::Status CheckNotDeleted() const;

 private:
  RuntimeClient* client_;
  DType dtype_;
  Shape shape_;
  ShardingRef sharding_;
  Placement placement_;
  Future<> ready_;
  mutable std::mutex mu_;
  std::vector<Shard> shards_ ABSL_GUARDED_BY(mu_);
  // Set under mu_ with the shards cleared; read without it (IsDeleted: several times a call).
  std::atomic<bool> deleted_{false};
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_RUNTIME_ARRAY_H_
