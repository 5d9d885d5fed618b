#ifndef TESSERA_IFRT_RUNTIME_RUNTIME_CLIENT_H_
#define TESSERA_IFRT_RUNTIME_RUNTIME_CLIENT_H_

// RuntimeClient: the generic implementation of Client over one or more Platforms
// (ifrt/spi/platform.h): the entrance. It validates every call once and builds the arrays; every
// movement of bytes (placement, plans, the guard, the enqueue order, statistics and traces) is its
// Dispatcher's (ifrt/runtime/dispatcher.h), which the client's executables and compiler share.
//
// Errors: argument errors come back from the call (a null ArrayRef, ShardingRef or DeviceListRef
// is INVALID_ARGUMENT naming the argument or its index); running out of host memory anywhere in a
// call is RESOURCE_EXHAUSTED naming the call, never an exception; execution errors (a failed copy,
// a lost device) arrive on the output arrays' ready futures, which always resolve.
//
// Devices are numbered across platforms in the order the platforms are given.
// Ownership: callers share the client (std::shared_ptr); it owns its platforms and devices.
// Thread-safe. Destroying the client waits for the copies in flight; arrays must not outlive their
// client.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "guard/policy.h"
#include "guard/transfer_guard.h"
#include "ifrt/client.h"
#include "ifrt/introspection.h"
#include "ifrt/runtime/dispatcher.h"
#include "ifrt/runtime/program/runtime_compiler.h"
#include "ifrt/runtime/runtime_array.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/spi/platform.h"
#include "ifrt/spi/program_compiler.h"
#include "ifrt/spi/transport.h"
#include "ifrt/transfer_trace.h"
#include "sharding/reshard_plan.h"

namespace tessera::runtime {

class RuntimeClient final : public Client, public ClientIntrospection {
 public:
  // INVALID_ARGUMENT when there is no platform or no device at all.
  // `program_compiler` (may be null: Compile is then UNIMPLEMENTED) turns programs into plans.
  // `transport` (may be null: a single-process client) makes the client span every process of
  // the transport (ifrt/runtime/distributed/distributed_runtime.h); creation is then collective.
  static absl::StatusOr<std::shared_ptr<RuntimeClient>> Create(
      std::vector<std::unique_ptr<Platform>> platforms, guard::Policy transfer_guard_policy,
      std::unique_ptr<ProgramCompiler> program_compiler = nullptr,
      std::unique_ptr<Transport> transport = nullptr);
  ~RuntimeClient() override;

  absl::StatusOr<ArrayRef> MakeArrayFromHostBuffer(
      const void* data, DType dtype, Shape shape,
      std::optional<absl::Span<const int64_t>> byte_strides, ShardingRef sharding,
      HostBufferSemantics semantics, std::function<void()> on_done_with_host_buffer,
      TransferOptions options = {}) override;
  absl::StatusOr<ArrayRef> AssembleArrayFromSingleDeviceArrays(
      DType dtype, Shape shape, ShardingRef sharding, absl::Span<ArrayRef> arrays,
      ArrayCopySemantics semantics) override;
  absl::StatusOr<std::vector<ArrayRef>> CopyArrays(absl::Span<ArrayRef> arrays,
                                                   std::optional<DeviceListRef> devices,
                                                   std::optional<MemoryKind> memory_kind,
                                                   ArrayCopySemantics semantics,
                                                   TransferOptions options = {}) override;
  absl::StatusOr<std::vector<ArrayRef>> ReshardArrays(absl::Span<ArrayRef> arrays,
                                                      absl::Span<const ArraySpec> specs,
                                                      ArrayCopySemantics semantics,
                                                      TransferOptions options = {}) override;
  absl::StatusOr<std::vector<ArrayRef>> RemapArrays(const RemapPlan& plan,
                                                    absl::Span<ArrayRef> arrays,
                                                    ArrayCopySemantics semantics) override;
  Future<> GetReadyFuture(absl::Span<const ArrayRef> arrays) override;

  absl::Span<Device* const> devices() const override { return device_ptrs_; }
  absl::Span<Device* const> addressable_devices() const override { return addressable_ptrs_; }
  int process_index() const override;
  int process_count() const override;
  absl::StatusOr<Device*> LookupDevice(DeviceId id) const override;
  absl::StatusOr<DeviceListRef> MakeDeviceList(absl::Span<Device* const> devices) const override;
  std::vector<std::string> platform_names() const override;
  guard::TransferGuard& transfer_guard() override { return dispatcher_->guard(); }
  TransferStats transfer_stats() const override;
  std::string DebugString() const override;

  ClientIntrospection* introspection() override { return this; }
  Compiler* GetDefaultCompiler() override;

  // ClientIntrospection (ifrt/introspection.h).
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> PlanReshard(
      const Array& array, const ArraySpec& spec) override;
  PlanCacheStats plan_cache_stats() const override { return dispatcher_->plan_cache_stats(); }
  void SetTransferTrace(std::shared_ptr<TransferTrace> trace) override;
  PlanCacheStats program_cache_stats() const override;

  // Helpers of RuntimeArray (which catches allocation failures around them).
  absl::StatusOr<std::vector<ArrayRef>> Disassemble(RuntimeArray& array,
                                                    ArrayCopySemantics semantics);
  absl::StatusOr<ArrayRef> FullyReplicatedShard(RuntimeArray& array, ArrayCopySemantics semantics);
  Future<> CopyToHostBuffer(RuntimeArray& array, void* data,
                            std::optional<absl::Span<const int64_t>> byte_strides,
                            TransferOptions options);

  // `array` as an argument `index` of `op`: INVALID_ARGUMENT for a null array or another
  // client's, FAILED_PRECONDITION for a deleted one.
  absl::StatusOr<RuntimeArray*> CheckArray(const ArrayRef& array, std::string_view op,
                                           size_t index) const;
  // Where every movement of this client's bytes goes (shared with its executables and compiler).
  Dispatcher& dispatcher() { return *dispatcher_; }

 private:
  RuntimeClient() = default;

  // The entry points' bodies. Each public entry point runs its body under CatchAllocationFailure
  // (plan_executor.h): running out of memory anywhere inside is RESOURCE_EXHAUSTED naming the
  // call, never an exception. MakeArrayImpl empties `on_done` once it has taken it over.
  absl::StatusOr<ArrayRef> MakeArrayImpl(const void* data, DType dtype, Shape shape,
                                         std::optional<absl::Span<const int64_t>> byte_strides,
                                         ShardingRef sharding, HostBufferSemantics semantics,
                                         std::function<void()>& on_done, TransferOptions options);
  absl::StatusOr<ArrayRef> AssembleImpl(DType dtype, Shape shape, ShardingRef sharding,
                                        absl::Span<ArrayRef> arrays, ArrayCopySemantics semantics);
  // `call`: the collective call's frame (Dispatcher::RunCall; null in a single-process client).
  absl::StatusOr<std::vector<ArrayRef>> CopyArraysImpl(
      CollectiveCall* call, absl::Span<ArrayRef> arrays, std::optional<DeviceListRef> devices,
      std::optional<MemoryKind> memory_kind, ArrayCopySemantics semantics, TransferOptions options);
  absl::StatusOr<std::vector<ArrayRef>> ReshardImpl(CollectiveCall* call,
                                                    absl::Span<ArrayRef> arrays,
                                                    absl::Span<const ArraySpec> specs,
                                                    ArrayCopySemantics semantics,
                                                    TransferOptions options);
  absl::StatusOr<std::vector<ArrayRef>> RemapImpl(const RemapPlan& plan,
                                                  absl::Span<ArrayRef> arrays,
                                                  ArrayCopySemantics semantics);
  Future<> GetReadyFutureImpl(absl::Span<const ArrayRef> arrays);

  // Validation shared by the entry points. `argument` names the sharding's argument of `op`
  // ("argument 4 (sharding)", "specs[2].sharding") in INVALID_ARGUMENT for a null one.
  absl::Status CheckSharding(const ShardingRef& sharding, std::string_view op,
                             std::string_view argument) const;

  // CopyToHostBuffer up to the enqueueing; the future of the copies, or the argument's or the
  // guard's error.
  absl::StatusOr<Future<>> EnqueueCopyToHost(RuntimeArray& array, void* data,
                                             std::optional<absl::Span<const int64_t>> byte_strides,
                                             TransferOptions options);

  // Reshards after validation (Dispatcher::Reshard), builds the outputs and deletes donated
  // inputs; `op` names the entry point for the guard and errors.
  absl::StatusOr<std::vector<ArrayRef>> ReshardValidated(CollectiveCall* call, std::string_view op,
                                                         absl::Span<RuntimeArray* const> arrays,
                                                         absl::Span<const ArraySpec> specs,
                                                         ArrayCopySemantics semantics,
                                                         TransferOptions options);

  // RemapArrays: input `i` matches its spec; the shards of each output, taken from the inputs.
  absl::Status CheckRemapInput(const RuntimeArray& array, const ArraySpec& spec, size_t i,
                               std::string_view op) const;
  static absl::StatusOr<std::vector<std::vector<Shard>>> RemapShards(
      const RemapPlan& plan, const std::vector<RuntimeArray*>& inputs,
      const std::vector<std::vector<Shard>>& in_shards, const std::vector<Placement>& outputs,
      std::string_view op);

  // Slot `slot` of `array`, as a single-device array holding `shard`.
  ArrayRef ShardAsArray(const RuntimeArray& array, int slot, Shard shard);

  // First: destroyed last, after the platforms (whose callbacks may still count and trace).
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<RuntimeCompiler> compiler_;
  std::vector<std::unique_ptr<RuntimeDevice>> devices_;
  std::vector<Device*> device_ptrs_;
  std::vector<Device*> addressable_ptrs_;
  // Last: destroyed first, draining the streams while the members above are
  // still alive.
  std::vector<std::unique_ptr<Platform>> platforms_;
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_RUNTIME_CLIENT_H_
