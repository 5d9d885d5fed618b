#ifndef TESSERA_IFRT_CLIENT_H_
#define TESSERA_IFRT_CLIENT_H_

// Client: the entry point of the runtime. A client owns its devices and memories, creates arrays
// from host data, copies and reshards arrays across devices, and checks every data movement
// against its transfer guard.
//
//   absl::StatusOr<std::shared_ptr<Client>> client = CreateClient();   // backends/client_factory.h
//   for (Device* d : (*client)->devices()) std::cout << d->DebugString() << "\n";
//
// All methods are thread-safe. Calls validate their arguments and return at once (errors of that
// validation come back from the call); the work runs asynchronously on the devices' streams, and
// its errors arrive on the ready futures of the arrays it produces.
//
// Error codes:
//   INVALID_ARGUMENT     an argument that does not fit (dtype, shape, strides, sharding, devices of
//                        another client, mismatched counts), and transfers refused by the guard
//   FAILED_PRECONDITION  a deleted or donated array used as input
//   NOT_FOUND            an unknown device id or memory kind
//   UNIMPLEMENTED        a sharding without geometry (OpaqueSharding) where geometry is needed

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "guard/transfer_guard.h"
#include "ifrt/array.h"
#include "ifrt/array_spec.h"
#include "ifrt/copy_semantics.h"
#include "ifrt/device.h"
#include "ifrt/device_list.h"
#include "ifrt/memory.h"
#include "ifrt/remap_plan.h"
#include "ifrt/transfer_options.h"
#include "ifrt/transfer_stats.h"

namespace tessera {

class ClientIntrospection;  // ifrt/introspection.h
class Compiler;             // ifrt/compiler.h

class Client {
 public:
  Client() = default;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  virtual ~Client() = default;

  // Creates an array of `dtype` and `shape` with `sharding` from host data laid out row-major, or
  // with `byte_strides` (bytes per step in each dimension). Each region the sharding places is read
  // once and written to every replica. `on_done_with_host_buffer` (may be null) runs exactly once,
  // when `semantics` says the runtime is done with `data` — or before the call returns an error.
  // The guard is asked once (host-to-device) before any byte moves.
  virtual absl::StatusOr<ArrayRef> MakeArrayFromHostBuffer(
      const void* data, DType dtype, Shape shape,
      std::optional<absl::Span<const int64_t>> byte_strides, ShardingRef sharding,
      HostBufferSemantics semantics, std::function<void()> on_done_with_host_buffer,
      TransferOptions options = {}) = 0;

  // Builds an array of `sharding` from one single-device array per device of the sharding, whose
  // shapes are the sharding's shard shapes. kReuseInput/kDonateInput share the buffers;
  // kAlwaysCopy copies them.
  virtual absl::StatusOr<ArrayRef> AssembleArrayFromSingleDeviceArrays(
      DType dtype, Shape shape, ShardingRef sharding, absl::Span<ArrayRef> arrays,
      ArrayCopySemantics semantics) = 0;

  // Copies arrays with the same device list and memory kind onto `devices` (same count) and/or
  // `memory_kind`, keeping their partitioning. INVALID_ARGUMENT when the arrays' device lists or
  // memory kinds differ from one another.
  virtual absl::StatusOr<std::vector<ArrayRef>> CopyArrays(absl::Span<ArrayRef> arrays,
                                                           std::optional<DeviceListRef> devices,
                                                           std::optional<MemoryKind> memory_kind,
                                                           ArrayCopySemantics semantics,
                                                           TransferOptions options = {}) = 0;

  // Reshards arrays[i] to specs[i] (same dtype and shape, any sharding over any devices of this
  // client), in one call: bytes already on a destination device are copied locally or aliased,
  // the rest moves device to device, never through the caller.
  virtual absl::StatusOr<std::vector<ArrayRef>> ReshardArrays(absl::Span<ArrayRef> arrays,
                                                              absl::Span<const ArraySpec> specs,
                                                              ArrayCopySemantics semantics,
                                                              TransferOptions options = {}) = 0;

  // Moves shards between arrays without copying (see RemapPlan). kDonateInput is required when an
  // input shard is used by an output.
  virtual absl::StatusOr<std::vector<ArrayRef>> RemapArrays(const RemapPlan& plan,
                                                            absl::Span<ArrayRef> arrays,
                                                            ArrayCopySemantics semantics) = 0;

  // Set once every array is ready (first error wins).
  virtual Future<> GetReadyFuture(absl::Span<const ArrayRef> arrays) = 0;

  // Every device of every process, in one global order (process 0's first), the same on every
  // process of a multi-process client; ids are global.
  virtual absl::Span<Device* const> devices() const = 0;
  // This process's devices (all of devices() in a single-process client).
  virtual absl::Span<Device* const> addressable_devices() const = 0;
  // This process among the processes the client spans (0 and 1 in a single-process client).
  virtual int process_index() const { return 0; }
  virtual int process_count() const { return 1; }
  // NOT_FOUND for an id this client does not have.
  virtual absl::StatusOr<Device*> LookupDevice(DeviceId id) const = 0;
  // INVALID_ARGUMENT for an empty list, a repeated device, or a device of another client.
  virtual absl::StatusOr<DeviceListRef> MakeDeviceList(absl::Span<Device* const> devices) const = 0;
  // The platforms this client runs on: "cpu", "vulkan".
  virtual std::vector<std::string> platform_names() const = 0;

  // This client's transfer guard: set its policy, add sinks, read its counters.
  virtual guard::TransferGuard& transfer_guard() = 0;
  // Bytes and copies actually moved since the client was created.
  virtual TransferStats transfer_stats() const = 0;

  // Compiles programs for this client's devices (ifrt/compiler.h). Never null; lives as long as
  // the client. Its Compile is UNIMPLEMENTED in a build without a program compiler.
  virtual Compiler* GetDefaultCompiler() = 0;

  // Plans, plan-cache counters and copy traces (ifrt/introspection.h), or nullptr when this client
  // does not offer them. Lives as long as the client.
  virtual ClientIntrospection* introspection() { return nullptr; }

  virtual std::string DebugString() const = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_CLIENT_H_
