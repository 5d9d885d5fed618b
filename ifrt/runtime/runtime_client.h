#ifndef TESSERA_IFRT_RUNTIME_RUNTIME_CLIENT_H_
#define TESSERA_IFRT_RUNTIME_RUNTIME_CLIENT_H_

// RuntimeClient: the generic implementation of Client over one or more Platforms
// (ifrt/spi/platform.h). It validates every call once, plans data movement with sharding/ (plans
// cached by geometry, locations and element size), asks the transfer guard once per call and
// direction before anything moves (always through GuardTransfer), enqueues the copies on the
// devices' streams, and counts what actually moved.
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
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "guard/policy.h"
#include "guard/transfer_event.h"
#include "guard/transfer_guard.h"
#include "ifrt/client.h"
#include "ifrt/introspection.h"
#include "ifrt/runtime/distributed_runtime.h"
#include "ifrt/runtime/plan_cache.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/runtime/runtime_array.h"
#include "ifrt/runtime/runtime_compiler.h"
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
  // the transport (ifrt/runtime/distributed_runtime.h); creation is then collective.
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
  guard::TransferGuard& transfer_guard() override { return guard_; }
  TransferStats transfer_stats() const override;
  std::string DebugString() const override;

  ClientIntrospection* introspection() override { return this; }
  Compiler* GetDefaultCompiler() override;

  // ClientIntrospection (ifrt/introspection.h).
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> PlanReshard(
      const Array& array, const ArraySpec& spec) override;
  PlanCacheStats plan_cache_stats() const override { return plan_cache_.stats(); }
  void SetTransferTrace(std::shared_ptr<TransferTrace> trace) override;
  PlanCacheStats program_cache_stats() const override;

  // Helpers of RuntimeArray (which catches allocation failures around them).
  absl::StatusOr<std::vector<ArrayRef>> Disassemble(RuntimeArray& array,
                                                    ArrayCopySemantics semantics);
  absl::StatusOr<ArrayRef> FullyReplicatedShard(RuntimeArray& array, ArrayCopySemantics semantics);
  Future<> CopyToHostBuffer(RuntimeArray& array, void* data,
                            std::optional<absl::Span<const int64_t>> byte_strides,
                            TransferOptions options);

  // The one place where every movement asks the guard (host-to-device, device-to-device,
  // device-to-host; programs and copies between processes too): TransferGuard::Enforce decides
  // once, counts and reports. Returns the action's name for the trace ("" when `event` moves no
  // bytes), or the guard's INVALID_ARGUMENT refusal, which the caller returns before any byte
  // moves.
  absl::StatusOr<std::string> GuardTransfer(const guard::TransferEvent& event);

 private:
  friend class RuntimeCompiler;
  friend class RuntimeExecutable;
  // Where an array's shards live: its layout and, per slot, the memory.
  struct Placement {
    sharding::ShardLayout layout;
    std::vector<RuntimeMemory*> memories;
  };
  // One array of a reshard call (runtime_client.cc).
  struct ReshardWork;

  explicit RuntimeClient(guard::Policy policy);

  // The entry points' bodies. Each public entry point runs its body under CatchAllocationFailure
  // (plan_executor.h): running out of memory anywhere inside is RESOURCE_EXHAUSTED naming the
  // call, never an exception. MakeArrayImpl empties `on_done` once it has taken it over.
  absl::StatusOr<ArrayRef> MakeArrayImpl(const void* data, DType dtype, Shape shape,
                                         std::optional<absl::Span<const int64_t>> byte_strides,
                                         ShardingRef sharding, HostBufferSemantics semantics,
                                         std::function<void()>& on_done, TransferOptions options);
  absl::StatusOr<ArrayRef> AssembleImpl(DType dtype, Shape shape, ShardingRef sharding,
                                        absl::Span<ArrayRef> arrays, ArrayCopySemantics semantics);
  absl::StatusOr<std::vector<ArrayRef>> CopyArraysImpl(absl::Span<ArrayRef> arrays,
                                                       std::optional<DeviceListRef> devices,
                                                       std::optional<MemoryKind> memory_kind,
                                                       ArrayCopySemantics semantics,
                                                       TransferOptions options);
  absl::StatusOr<std::vector<ArrayRef>> ReshardImpl(absl::Span<ArrayRef> arrays,
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
  absl::StatusOr<std::vector<RuntimeMemory*>> ResolveMemories(const Sharding& sharding) const;
  // The layout of `shape` under `sharding`, and the memories of its slots.
  absl::StatusOr<Placement> ResolvePlacement(const Sharding& sharding, const Shape& shape) const;
  absl::StatusOr<RuntimeArray*> CheckArray(const ArrayRef& array, std::string_view op,
                                           size_t index) const;

  // CopyToHostBuffer up to the enqueueing; the future of the copies, or the argument's or the
  // guard's error.
  absl::StatusOr<Future<>> EnqueueCopyToHost(RuntimeArray& array, void* data,
                                             std::optional<absl::Span<const int64_t>> byte_strides,
                                             TransferOptions options);

  // Reshards after validation; `op` names the entry point for the guard and errors. Its steps:
  // PlanOneReshard per array, one GuardTransfer for the call, PrepareDestinations per array,
  // EnqueueReshards.
  absl::StatusOr<std::vector<ArrayRef>> ReshardValidated(std::string_view op,
                                                         absl::Span<RuntimeArray* const> arrays,
                                                         absl::Span<const ArraySpec> specs,
                                                         ArrayCopySemantics semantics,
                                                         TransferOptions options);
  absl::StatusOr<ReshardWork> PlanOneReshard(RuntimeArray* array, const ArraySpec& spec);
  // Multi-process clients: the agreement of every process on the call (distributed_runtime.h);
  // sets each work's tag base.
  absl::Status AgreeOnReshard(std::string_view op, std::vector<ReshardWork>& work,
                              ArrayCopySemantics semantics);
  // The destination endpoints: aliases of source buffers where the plan allows and `may_alias`,
  // new buffers elsewhere.
  static absl::Status PrepareDestinations(ReshardWork& work, bool may_alias);
  // Enqueues every array's copies under the enqueue lock and returns the new arrays, or
  // RESOURCE_EXHAUSTED when enqueueing ran out of memory.
  absl::StatusOr<std::vector<ArrayRef>> EnqueueReshards(std::string_view op,
                                                        const std::string& action,
                                                        std::vector<ReshardWork>& work,
                                                        absl::Span<const ArraySpec> specs);

  // RemapArrays: input `i` matches its spec; the shards of each output, taken from the inputs.
  absl::Status CheckRemapInput(const RuntimeArray& array, const ArraySpec& spec, size_t i,
                               std::string_view op) const;
  static absl::StatusOr<std::vector<std::vector<Shard>>> RemapShards(
      const RemapPlan& plan, const std::vector<RuntimeArray*>& inputs,
      const std::vector<std::vector<Shard>>& in_shards, const std::vector<Placement>& outputs,
      std::string_view op);

  // Memory ids as the planner's locations. The host's location is TransferStats::kHost (memory
  // ids are >= 0).
  static std::vector<int64_t> Locations(const std::vector<RuntimeMemory*>& memories);
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> GetPlan(
      const sharding::ShardLayout& src, std::vector<int64_t> src_locations,
      const sharding::ShardLayout& dst, std::vector<int64_t> dst_locations, int64_t element_bytes,
      bool fan_out);
  // Copies of whole shards (slot i of `layout` in memories[i]) into new buffers of the same
  // memories, for `op`: local copies, traced and counted as such, never asked of the guard.
  // Allocates every buffer before any copy starts.
  absl::StatusOr<std::vector<Shard>> CopyShardsLocally(std::string_view op,
                                                       const sharding::ShardLayout& layout,
                                                       const std::vector<RuntimeMemory*>& memories,
                                                       const std::vector<Shard>& shards,
                                                       int64_t element_bytes);
  // Slot `slot` of `array`, as a single-device array holding `shard`.
  ArrayRef ShardAsArray(const RuntimeArray& array, int slot, Shard shard);
  void Record(int32_t src_device, int32_t dst_device, int64_t bytes, int64_t copies);
  // Every pair of `traffic` under one lock.
  void RecordTraffic(const TransferTraffic& traffic);
  void RecordLocked(int32_t src_device, int32_t dst_device, int64_t bytes, int64_t copies)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(stats_mu_);
  TransferRecorder Recorder();
  // What ExecutePlan needs besides the plan. The caller holds trace_mu_.
  PlanContext Context(std::string_view op, std::string guard_action,
                      bool forwards_are_host_to_device = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(trace_mu_);
  // ExecutePlan of one plan under the trace and enqueue locks.
  PlanExecution ExecuteLocked(const sharding::ReshardPlan& plan, int64_t element_bytes,
                              absl::Span<const PlanEndpoint> sources,
                              absl::Span<const PlanEndpoint> destinations, std::string_view op,
                              std::string guard_action, bool forwards_are_host_to_device = false);

  guard::TransferGuard guard_;
  PlanCache plan_cache_;
  mutable std::mutex stats_mu_;
  TransferStats stats_ ABSL_GUARDED_BY(stats_mu_);
  // Held while one call enqueues its copies, so that all calls enqueue in one
  // global order.
  std::mutex enqueue_mu_;
  std::mutex trace_mu_;
  std::shared_ptr<TransferTrace> trace_ ABSL_GUARDED_BY(trace_mu_);

  std::unique_ptr<RuntimeCompiler> compiler_;
  std::vector<std::unique_ptr<RuntimeDevice>> devices_;
  std::vector<Device*> device_ptrs_;
  std::vector<Device*> addressable_ptrs_;
  // Multi-process clients only (null otherwise): the collective calls' agreement and the copies
  // between processes. Reset by the destructor after the streams drain, before the platforms go.
  std::unique_ptr<DistributedRuntime> distributed_;
  // Last: destroyed first, draining the streams while the members above are
  // still alive.
  std::vector<std::unique_ptr<Platform>> platforms_;
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_RUNTIME_CLIENT_H_
