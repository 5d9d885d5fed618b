#include "ifrt/runtime/runtime_array.h"

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/runtime/runtime_client.h"

namespace tessera::runtime {

RuntimeArray::RuntimeArray(RuntimeClient* client, DType dtype, Shape shape, ShardingRef sharding,
                           Placement placement, std::vector<Shard> shards)
    : client_(client),
      dtype_(dtype),
      shape_(std::move(shape)),
      sharding_(std::move(sharding)),
      placement_(std::move(placement)),
      shards_(std::move(shards)) {
  absl::InlinedVector<Future<>, 8> futures;  // no allocation for a call's few outputs
  for (const Shard& s : shards_) futures.push_back(s.ready);
  ready_ = JoinFutures(futures);
}

Client* RuntimeArray::client() const { return client_; }

Future<> RuntimeArray::GetReadyFuture() const {
  return CatchAllocationFailure("Array::GetReadyFuture", [&] {
    if (absl::Status s = CheckNotDeleted(); !s.ok()) return MakeReadyFuture(s);
    return ready_;
  });
}

Future<> RuntimeArray::Delete() {
  // The array is deleted whatever happens: the shards go first, without allocating.
  std::vector<Shard> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    released.swap(shards_);
    deleted_.store(true, std::memory_order_release);
  }
  // In-flight operations hold their own references to the buffers; dropping
  // ours is enough. The future reports when the array's pending writes are
  // over, whatever their outcome.
  return CatchAllocationFailure("Array::Delete", [&] {
    Promise<> done;
    ready_.OnReady([done](const absl::Status&) { done.Set(absl::OkStatus()); });
    return done.future();
  });
}

bool RuntimeArray::IsDeleted() const { return deleted_.load(std::memory_order_acquire); }

absl::Status RuntimeArray::CheckNotDeleted() const {
  if (IsDeleted()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Array has been deleted: ", dtype_.DebugString(), shape_.DebugString(), " on ",
                     sharding_->devices()->DebugString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Shard>> RuntimeArray::shards() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (deleted_.load(std::memory_order_relaxed)) {
    return absl::FailedPreconditionError(
        absl::StrCat("Array has been deleted: ", dtype_.DebugString(), shape_.DebugString(), " on ",
                     sharding_->devices()->DebugString()));
  }
  return shards_;
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeArray::DisassembleIntoSingleDeviceArrays(
    ArrayCopySemantics semantics) {
  return CatchAllocationFailure("DisassembleIntoSingleDeviceArrays",
                                [&] { return client_->Disassemble(*this, semantics); });
}

absl::StatusOr<ArrayRef> RuntimeArray::FullyReplicatedShard(ArrayCopySemantics semantics) {
  return CatchAllocationFailure("FullyReplicatedShard",
                                [&] { return client_->FullyReplicatedShard(*this, semantics); });
}

Future<> RuntimeArray::CopyToHostBuffer(void* data,
                                        std::optional<absl::Span<const int64_t>> byte_strides,
                                        ArrayCopySemantics semantics, TransferOptions options) {
  return CatchAllocationFailure("CopyToHostBuffer", [&] {
    return client_->CopyToHostBuffer(*this, data, byte_strides, options);
  });
}

absl::StatusOr<std::shared_ptr<void>> RuntimeArray::AcquireExternalReference() {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> shards, this->shards());
  if (shards.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("AcquireExternalReference: the array is on ", shards.size(),
                     " devices; only a single-device array has one buffer to share"));
  }
  PlatformBufferRef buffer = std::move(shards[0].buffer);
  void* address = buffer->host_address();
  if (address == nullptr && buffer->size_bytes() > 0) {
    return absl::UnimplementedError(absl::StrCat("AcquireExternalReference: the memory of ",
                                                 sharding_->devices()->DebugString(),
                                                 " is not host-addressable"));
  }
  return std::shared_ptr<void>(std::move(buffer), address);  // aliasing: holds the buffer
}

std::string RuntimeArray::DebugString() const {
  std::string state;
  if (IsDeleted()) {
    state = "deleted";
  } else if (!ready_.IsReady()) {
    state = "pending";
  } else {
    absl::Status s = ready_.Await();
    state = s.ok() ? "ready" : absl::StrCat("error: ", s.ToString());
  }
  return absl::StrCat("Array(", dtype_.DebugString(), shape_.DebugString(), ", ",
                      sharding_->DebugString(), ", ", state, ")");
}

}  // namespace tessera::runtime
