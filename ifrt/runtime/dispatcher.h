#ifndef TESSERA_IFRT_RUNTIME_DISPATCHER_H_
#define TESSERA_IFRT_RUNTIME_DISPATCHER_H_

// Dispatcher: every movement of a client's bytes passes through here. It resolves where shards
// live (placement: layout + memories), plans movements (sharding::PlanReshard, cached by geometry,
// locations and element size, and by sharding identity for reshards), asks the transfer guard
// once per call and direction before any byte moves (GuardTransfer: the one door), enqueues the
// copies on the devices' streams in one global order across calls, and counts and traces what
// actually moved.
//
//   Dispatcher dispatcher(policy, std::make_unique<LocalProcesses>(), local_memory_ids);
//   ASSIGN_OR_RETURN(std::string action, dispatcher.GuardTransfer(event));   // before any byte
//   PlanExecution exec = dispatcher.Execute(*plan, element_bytes, src, dst, "op", action);
//
// It knows neither the public API's argument rules nor arrays' construction: RuntimeClient
// validates and builds arrays; RuntimeExecutable and RuntimeCompiler take the dispatcher for the
// bytes they move (program staging, collectives between processes) and the guard.
//
// How calls span processes is its Processes (processes.h), chosen once at client creation: local
// (LocalProcesses), or many (DistributedRuntime: each process plans and enqueues its part of every
// movement, the copies touching its memories, and each collective call is agreed by every process
// before any byte moves). RunCall frames a call and hands its CollectiveCall to the body, which
// passes it on to Reshard.
//
// Errors: the guard's INVALID_ARGUMENT refusal (before any byte moves), the planner's errors,
// RESOURCE_EXHAUSTED for an allocation that failed while enqueueing; copy errors travel on the
// futures, which always resolve. Thread-safe: the plan cache, the statistics, the trace and the
// enqueue order each have their own lock (trace before enqueue when both are held).

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "guard/policy.h"
#include "guard/transfer_event.h"
#include "guard/transfer_guard.h"
#include "ifrt/array_spec.h"
#include "ifrt/copy_semantics.h"
#include "ifrt/introspection.h"
#include "ifrt/runtime/placement.h"
#include "ifrt/runtime/plan_cache.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/runtime/processes.h"
#include "ifrt/runtime/runtime_array.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/shape.h"
#include "ifrt/sharding.h"
#include "ifrt/transfer_options.h"
#include "ifrt/transfer_stats.h"
#include "ifrt/transfer_trace.h"
#include "sharding/reshard_plan.h"
#include "sharding/shard_layout.h"

namespace tessera::runtime {

// One output of a movement: where its shards live and the shards (each ready once its copies
// are done).
struct MovedShards {
  Placement placement;
  std::vector<Shard> shards;
};

class Dispatcher {
 public:
  // `processes`: how calls span processes (null: LocalProcesses). `local_memory_ids`: the ids of
  // this process's memories (the part a process plans when processes->PlansItsPart()).
  Dispatcher(guard::Policy policy, std::unique_ptr<Processes> processes,
             std::vector<int64_t> local_memory_ids);
  // Also ends the processes (StopProcesses) if the client has not.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // ---- Where bytes live ----
  // The memory of each device of `sharding` for its memory kind; NOT_FOUND / INVALID_ARGUMENT
  // from the device when it has no such memory.
  static absl::StatusOr<std::vector<RuntimeMemory*>> ResolveMemories(const Sharding& sharding);
  // The layout of `shape` under `sharding`, and the memories of its slots.
  static absl::StatusOr<Placement> ResolvePlacement(const Sharding& sharding, const Shape& shape);
  // Memory ids as the planner's locations (the host is TransferStats::kHost; ids are >= 0).
  static std::vector<int64_t> Locations(const std::vector<RuntimeMemory*>& memories);

  // ---- The guard ----
  guard::TransferGuard& guard() { return guard_; }
  // The one place where every movement asks the guard (host-to-device, device-to-device,
  // device-to-host; programs and copies between processes too): TransferGuard::Enforce decides
  // once, counts and reports. Returns the action's name for the trace ("" when `event` moves no
  // bytes), or the guard's INVALID_ARGUMENT refusal, which the caller returns before any byte
  // moves.
  absl::StatusOr<std::string> GuardTransfer(const guard::TransferEvent& event);

  // ---- Plans ----
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> GetPlan(
      const sharding::ShardLayout& src, std::vector<int64_t> src_locations,
      const sharding::ShardLayout& dst, std::vector<int64_t> dst_locations, int64_t element_bytes,
      bool fan_out);
  PlanCacheStats plan_cache_stats() const { return plan_cache_.stats(); }

  // ---- Movements ----
  // An upload of `shape` (dtype `dtype`) from the host to `sharding` (validated by the caller):
  // each region read from the host once and forwarded to its other replicas (across processes,
  // each process writes its own shards from its own copy of the data). Placed, planned (both
  // cached by the sharding's identity) and guarded; run by RunUpload.
  //
  // Replicas that may share one buffer do (SharedReplicaLeaders: copies of the array's region on
  // devices whose platform's host buffers serve every device, CPU devices): the plan writes only
  // the first of them, its `written` slots, and the others take its buffer; the guard sees the
  // bytes that move.
  struct Upload {
    Placement placement;
    std::shared_ptr<const sharding::ReshardPlan> plan;  // into `written`
    std::string guard_action;
    bool addressable = true;  // every slot on this process's devices
    // leader_of[s]: the slot whose buffer slot s takes (s where it has one of its own); empty
    // where every slot has its own, and `written` is then unset: the plan writes `placement`.
    std::vector<int> leader_of;
    Placement written;  // the slots the plan writes, in slot order (where leader_of is not empty)
    const Placement& Written() const { return leader_of.empty() ? placement : written; }
  };
  absl::StatusOr<Upload> PlanUpload(std::string_view op, DType dtype, const Shape& shape,
                                    const ShardingRef& sharding, TransferOptions options);
  // Runs `upload` from `source` (a host endpoint) into new buffers of its placement: an error when
  // the buffers could not be allocated (nothing was enqueued), else the execution (its all_done:
  // when the host buffer is no longer read; its status: enqueueing ran out of memory part way)
  // and, when that status is OK, the shards.
  struct UploadRun {
    PlanExecution exec;
    std::vector<Shard> shards;
  };
  // Fills upload.leader_of and upload.written where replicas share buffers.
  static absl::Status ShareReplicas(Upload& upload);
  absl::StatusOr<UploadRun> RunUpload(std::string_view op, const Upload& upload,
                                      PlanEndpoint source, int64_t element_bytes);
  // The copies of `array`'s `shards` into the host buffer `destination` (a host endpoint):
  // planned, guarded and enqueued; the future joins the copies and the array's readiness.
  absl::StatusOr<Future<>> Download(std::string_view op, const RuntimeArray& array,
                                    const std::vector<Shard>& shards, PlanEndpoint destination,
                                    TransferOptions options);
  // The reshard of each of `arrays` to its spec (validated by the caller): planned, one guard
  // check for the call, destinations aliased (unless `semantics` is kAlwaysCopy) or allocated,
  // agreed between processes (in the collective call `call`; null: local), enqueued in one global
  // order. The outputs, one per array; the caller builds the arrays and deletes donated inputs.
  absl::StatusOr<std::vector<MovedShards>> Reshard(CollectiveCall* call, std::string_view op,
                                                   absl::Span<RuntimeArray* const> arrays,
                                                   absl::Span<const ArraySpec> specs,
                                                   ArrayCopySemantics semantics,
                                                   TransferOptions options);
  // Copies of whole shards (slot i of `layout` in memories[i]) into new buffers of the same
  // memories, for `op`: local copies, traced and counted as such, never asked of the guard.
  // Allocates every buffer before any copy starts.
  absl::StatusOr<std::vector<Shard>> CopyShardsLocally(std::string_view op,
                                                       const sharding::ShardLayout& layout,
                                                       const std::vector<RuntimeMemory*>& memories,
                                                       const std::vector<Shard>& shards,
                                                       int64_t element_bytes);
  // A copy of `bytes` bytes from the start of `src` to the start of `dst`, two buffers of memories
  // of `device` (a program's staging between device memory and the device's host-visible memory),
  // on the device's stream after `after`: local, never asked of the guard, counted as a local copy
  // of the device once it succeeds.
  Future<> CopyWithinDevice(RuntimeDevice* device, PlatformBufferRef src, PlatformBufferRef dst,
                            int64_t bytes, const Future<>& after);
  // Held while a caller enqueues work of its own on the streams (an Execute's steps), so that
  // every call enqueues in one global order.
  [[nodiscard]] std::unique_lock<std::mutex> LockEnqueueOrder() {
    return std::unique_lock<std::mutex>(enqueue_mu_);
  }

  // ---- Statistics and traces ----
  // Counts `copies` copies of `bytes` bytes from `src_device` to `dst_device` (device ids, or
  // TransferStats::kHost).
  void Record(int32_t src_device, int32_t dst_device, int64_t bytes, int64_t copies);
  TransferStats transfer_stats() const;
  void SetTransferTrace(std::shared_ptr<TransferTrace> trace);

  // ---- Processes ----
  Processes& processes() { return *processes_; }
  int process_index() const { return processes_->process_index(); }
  int process_count() const { return processes_->process_count(); }
  // Waits for the other processes' sends and receives in flight and ends them (the client, once
  // its streams drained, before its platforms go); no call may move bytes after. A no-op for
  // LocalProcesses.
  void StopProcesses() { processes_ = std::make_unique<LocalProcesses>(); }
  // Runs `body(CollectiveCall*)` (an entry point's body, returning absl::StatusOr<T>) as one call
  // of `op` (Processes::RunCall): in a multi-process client a collective call that every process
  // agrees on, the frame handed to the body; otherwise as it is, with no frame.
  template <typename F>
  auto RunCall(std::string_view op, F&& body) -> decltype(body(nullptr)) {
    std::optional<decltype(body(nullptr))> result;
    const absl::Status late = processes_->RunCall(op, [&](CollectiveCall* call) {
      result.emplace(body(call));
      return result->status();
    });
    if (!late.ok()) return late;
    return *std::move(result);
  }

 private:
  struct ReshardWork;

  absl::StatusOr<ReshardWork> PlanOneReshard(RuntimeArray* array, const ArraySpec& spec);
  // Multi-process clients: the agreement of every process on the call; sets each work's tag base.
  absl::Status AgreeOnReshard(CollectiveCall* call, std::string_view op,
                              std::vector<ReshardWork>& work, ArrayCopySemantics semantics);
  // The destination endpoints: aliases of source buffers where the plan allows and `may_alias`,
  // new buffers elsewhere.
  static absl::Status PrepareDestinations(ReshardWork& work, bool may_alias);
  // Enqueues every array's copies under the enqueue lock, or RESOURCE_EXHAUSTED when enqueueing
  // ran out of memory (the other processes' messages of the arrays not enqueued are settled).
  absl::StatusOr<std::vector<MovedShards>> EnqueueReshards(std::string_view op,
                                                           const std::string& action,
                                                           std::vector<ReshardWork>& work);
  // ExecutePlan (or this process's part of it) under the trace and enqueue locks.
  PlanExecution Execute(const sharding::ReshardPlan& plan, int64_t element_bytes,
                        absl::Span<const PlanEndpoint> sources,
                        absl::Span<const PlanEndpoint> destinations, std::string_view op,
                        std::string guard_action, bool forwards_are_host_to_device = false);
  // This process's part of `plan` (processes_->Execute); the caller holds both locks.
  PlanExecution ExecuteLocked(const sharding::ReshardPlan& plan, int64_t element_bytes,
                              absl::Span<const PlanEndpoint> sources,
                              absl::Span<const PlanEndpoint> destinations,
                              const PlanContext& context, int64_t tag_base)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(trace_mu_, enqueue_mu_);
  void RecordTraffic(const TransferTraffic& traffic);
  void RecordLocked(int32_t src_device, int32_t dst_device, int64_t bytes, int64_t copies)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(stats_mu_);
  // What ExecutePlan needs besides the plan. The caller holds trace_mu_.
  PlanContext Context(std::string_view op, std::string guard_action,
                      bool forwards_are_host_to_device = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(trace_mu_);

  guard::TransferGuard guard_;
  PlanCache plan_cache_;
  mutable std::mutex stats_mu_;
  TransferStats stats_ ABSL_GUARDED_BY(stats_mu_);
  std::mutex trace_mu_;
  std::shared_ptr<TransferTrace> trace_ ABSL_GUARDED_BY(trace_mu_);
  // Held while one call enqueues its copies, so that all calls enqueue in one global order.
  std::mutex enqueue_mu_;
  std::unique_ptr<Processes> processes_;
  std::vector<int64_t> local_memory_ids_;
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_DISPATCHER_H_
